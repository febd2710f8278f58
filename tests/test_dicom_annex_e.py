"""Issue 26, class 6: the whole PS3.15 Annex E Basic Profile, curves and overlays, the birth date, burned-in text.

The review planted 40 Basic Profile attributes and 19 survived (Medical Alerts "HIV positive",
Allergies, admission id, the referring physician's address and phone, request reasons, device
ids); overlays survived; the birth date was shifted, not removed; pydicom's ``examples_ybr_color.dcm``
showed its patient's name in every frame of the demo clip. Here every row of the table (650, from
``dicom-anonymizer``'s copy of the standard's table) is planted in one file, with both
birth-date options; the table in docs is the code's output; OCR finds and redacts the clip's name.
On main before this change 19 of 40 planted attributes survived and the name was shown.
"""

from __future__ import annotations

import shutil
import warnings

import numpy as np
import pytest
from pydicom import dcmread
from pydicom.data import get_testdata_file
from pydicom.datadict import dictionary_VR
from pydicom.dataelem import DataElement
from pydicom.dataset import Dataset

from core.imaging.annex_e import AnnexERow, annex_e_rows, markdown_table, planted_value
from core.imaging.burnedin import find_text, scrub_burned_in
from core.imaging.deid import Deidentifier
from core.imaging.dicomio import decode_pixels
from core.runtime import Runtime
from core.settings import REPO_ROOT

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract-ocr not installed (make ocr-deps)")


def _read(name: str) -> Dataset:
    """One of pydicom's test files (they ship inside its wheel)."""
    return dcmread(str(get_testdata_file(name)))


def _tag(row: AnnexERow) -> int:
    """A concrete tag of ``row`` (a repeating group's first odd-free instance, e.g. 6010 for 60xx)."""
    group = row.group if row.group_mask == 0xFFFF else row.group | 0x10
    element = row.element if row.element_mask == 0xFFFF else 0x0010
    return (group << 16) | element


def _planted() -> tuple[Dataset, dict[int, tuple[str, int, str]]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = _read("CT_small.dcm")
    planted: dict[int, tuple[str, int, str]] = {}
    for i, row in enumerate(annex_e_rows()):
        tag = _tag(row)
        if tag >> 16 in (0x0000, 0x0002):  # command and file-meta groups never sit in a dataset's body
            continue
        try:
            vr = dictionary_VR(tag).split(" or ")[0]
        except KeyError:
            vr = "LO"
        ds[tag] = DataElement(tag, vr, planted_value(vr, i))
        planted[tag] = (vr, i, row.action)
    ds.PatientBirthDate = "19540312"
    return ds, planted


@pytest.mark.parametrize("birth_date", ["remove", "year"])
@pytest.mark.parametrize("retain_dates", [True, False])
def test_no_planted_annex_e_attribute_survives(birth_date: str, retain_dates: bool) -> None:
    ds, planted = _planted()
    assert len(planted) >= 600
    Deidentifier("seed-1", retain_dates=retain_dates, birth_date=birth_date).apply(ds, "planted.dcm")  # type: ignore[arg-type]
    survived = []
    for tag, (vr, i, action) in planted.items():
        if tag not in ds or tag == 0x00100030:
            continue
        value = ds[tag].value
        shifted = retain_dates and vr in ("DA", "DT") and ("Z" in action or "D" in action)  # the option keeps it
        if (action.startswith("X") and not shifted) or value == planted_value(vr, i) or "planted" in str(value):
            survived.append((f"{tag:08X}", ds[tag].keyword, action))
    assert not survived, survived
    assert ds.PatientBirthDate == ("19540101" if birth_date == "year" else "")
    assert not [e for e in ds if (e.tag.group & 0xFF00) in (0x5000, 0x6000)]  # curves and overlays, whole


def test_overlays_of_a_real_file_are_removed() -> None:
    ds = _read("examples_overlay.dcm")
    assert [e for e in ds if e.tag.group == 0x6000]
    Deidentifier("seed-2", retain_dates=True).apply(ds, "examples_overlay.dcm")
    assert not [e for e in ds if (e.tag.group & 0xFF00) == 0x6000]


def test_the_annex_e_table_in_docs_is_the_codes() -> None:
    assert (REPO_ROOT / "docs" / "DICOM_ANNEX_E.md").read_text() == markdown_table(), "run `python -m core annex-e`"
    actions = {r.action for r in annex_e_rows()}
    assert actions == {"X", "Z", "D", "U", "Z/D", "X/Z", "X/D", "X/Z/D", "X/Z/U*"}
    names = {r.name for r in annex_e_rows()}
    assert {"MedicalAlerts", "Allergies", "AdmissionID", "ReferringPhysicianAddress", "DeviceSerialNumber"} <= names


@needs_tesseract
@pytest.mark.parametrize("policy", ["redact", "refuse"])
def test_burned_in_text_without_the_flag_is_found_and_redacted_or_refused(policy: str) -> None:
    from core.errors import ImageRejectedError

    ds = _read("examples_ybr_color.dcm")
    assert "BurnedInAnnotation" not in ds
    frames = decode_pixels(ds, "clip").frames
    if policy == "refuse":
        with pytest.raises(ImageRejectedError, match="text is drawn into the pixels"):
            scrub_burned_in(ds, frames, "clip", policy, 3)
        return
    shown, words = scrub_burned_in(ds, frames, "clip", policy, 3)
    assert words and ds.BurnedInAnnotation == "NO"
    for clean in (shown, decode_pixels(ds, "clip").frames):  # what is shown, and the stored file's pixels
        assert clean.shape == frames.shape
        assert int(clean[:, 0:12, 0:30].max()) < 30, "the name's corner is not blacked out"  # "PLA", top left
        assert not any("PLA" in b.word.upper() for b in find_text(clean, 3))
    assert np.array_equal(shown[:, 100:140, 120:200], frames[:, 100:140, 120:200])  # the heart is untouched


@needs_tesseract
@pytest.mark.parametrize("name", ["693_J2KI.dcm", "CT_small.dcm", "MR_small.dcm", "liver_1frame.dcm"])
def test_scans_without_text_are_left_alone(name: str) -> None:
    ds = _read(name)
    frames = decode_pixels(ds, name).frames
    shown, words = scrub_burned_in(ds, frames, name, "redact", 3)
    assert words == 0 and shown is frames


@needs_tesseract
def test_the_demo_clip_on_lung_scans_shows_no_name(demo: Runtime) -> None:
    """Every frame the app serves for the demo ultrasound clip, and its stored DICOM file, carry no name."""
    from io import BytesIO

    from sqlalchemy import select

    from core.imaging.demo import REAL_DEMO_FILES
    from core.imaging.store import ImageStore
    from core.store.models import ImageInstance, ImageSeries

    store = ImageStore.from_settings(demo.settings)
    with demo.db.read_only() as s:
        rows = s.execute(
            select(ImageInstance.pixels_sha256, ImageInstance.file_sha256)
            .join(ImageSeries, ImageSeries.id == ImageInstance.series_id)
            .where(ImageSeries.label == REAL_DEMO_FILES["lung"][1])
        ).all()
    assert rows, "the demo clip is attached to the lung scans"
    pixels, file_sha = rows[0]
    frames = store.load_frames(pixels)
    assert frames.shape[0] == 30 and int(frames[:, 0:12, 0:30].max()) < 30
    assert not any("PLA" in b.word.upper() for b in find_text(frames, 3))
    assert file_sha is not None
    stored = dcmread(BytesIO(store.read_bytes(file_sha, "dcm")))
    assert stored.BurnedInAnnotation == "NO" and "PLA" not in str(stored.get("PatientName", ""))
    assert int(decode_pixels(stored, "clip").frames[:, 0:12, 0:30].max()) < 30
