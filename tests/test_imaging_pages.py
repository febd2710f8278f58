"""Imaging in the pages (AppTest) and the demo images the seed attaches."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from sqlalchemy import func, select

from core.imaging.demo import REAL_DEMO_FILES
from core.imaging.query import case_thumbnails, prior_scan, series_for_scan
from core.imaging.store import ImageStore
from core.runtime import Runtime
from core.store.models import HistoricalCase, ImageSeries, Scan
from tests.conftest import scan_of
from tests.test_app_support import page, texts, use_root, user_of


def _images(at: object) -> list[object]:
    return list(at.get("image"))  # type: ignore[attr-defined]


def test_seed_attaches_demo_images_to_every_scan_and_case(demo: Runtime) -> None:
    with demo.db.read_only() as s:
        scans = s.scalars(select(Scan.id)).all()
        n_cases = s.scalar(select(func.count()).select_from(HistoricalCase))
        with_images = s.scalar(select(func.count(func.distinct(ImageSeries.scan_id))))
        case_series = s.scalar(select(func.count()).where(ImageSeries.case_id.is_not(None)))
        kinds = set(s.scalars(select(ImageSeries.kind)).all())
    assert with_images == len(scans) and case_series == n_cases
    assert kinds == {"demo-synthetic", "demo-dicom"}
    # the phantom files are shared: a few dozen files serve every case
    store = ImageStore.from_settings(demo.settings)
    assert len(list((store.root / "objects").rglob("*.npy"))) < 40
    # a real DICOM series from pydicom's wheel on the brain scans, de-identified
    with demo.db.read_only() as s:
        brain_scan = s.scalar(select(Scan.id).where(Scan.anatomy == "brain").limit(1))
    labels = [v.label for v in series_for_scan(demo.db, str(brain_scan))]
    assert any(label == REAL_DEMO_FILES["brain"][1] for label in labels)
    assert any("Synthetic demo" in label for label in labels)


def test_prior_and_thumbnails_lookups(demo: Runtime) -> None:
    newest = scan_of(demo, "rahul.mehta")
    prior = prior_scan(demo.db, newest)
    assert prior is not None and prior.scan_id == scan_of(demo, "rahul.mehta", -2)
    assert prior_scan(demo.db, scan_of(demo, "rahul.mehta", 0)) is None
    result = demo.case_search.similar_cases(newest, 5)
    thumbs = case_thumbnails(demo.db, [c.caseId for c in result.cases] + ["HC-NOPE"])
    assert set(thumbs) == {c.caseId for c in result.cases}
    view = next(iter(thumbs.values()))
    sha, frame = view.middle
    frames = ImageStore.from_settings(demo.settings).load_frames(sha)
    assert frames.ndim in (3, 4) and 0 <= frame < frames.shape[0]


def test_scan_review_viewer_for_doctor_and_patient(demo_root: Path, demo: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    use_root(demo_root, monkeypatch)
    sid = scan_of(demo, "rahul.mehta")
    doctor = page("scan_review", user_of(demo, "dr.chen"), sid)
    doctor.run()
    assert not doctor.exception
    assert "**AI reading**" in texts(doctor) and "Synthetic demo CT volume" in texts(doctor)
    before = _images(doctor)[0].proto.imgs[0].url  # type: ignore[attr-defined]
    doctor.button_group(key="viewer-preset").set_value("bone").run()  # type: ignore[attr-defined]
    after = _images(doctor)[0].proto.imgs[0].url  # type: ignore[attr-defined]
    assert after != before
    patient = page("scan_review", user_of(demo, "rahul.mehta"), sid)
    patient.run()
    assert not patient.exception
    assert _images(patient), "a patient sees their own image"
    assert "AI reading" not in texts(patient) and "COPD" not in texts(patient)


def test_patient_explorer_timeline_and_similar_case_thumbnails(
    demo_root: Path, demo: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_root(demo_root, monkeypatch)
    sid = scan_of(demo, "rahul.mehta")
    explorer = page("patient_explorer", user_of(demo, "dr.chen"), sid)
    explorer.run()
    assert not explorer.exception
    text = texts(explorer)
    assert text.count("AI reading: COPD with emphysema") == 3 and "Signed report #" in text
    assert len(_images(explorer)) >= 3
    similar = page("similar_cases", user_of(demo, "dr.chen"), sid)
    similar.run()
    assert not similar.exception
    assert len(_images(similar)) >= 5


def test_render_of_a_stored_demo_slice_is_a_png(demo: Runtime) -> None:
    from core.imaging.render import PRESETS, Renderer

    view = series_for_scan(demo.db, scan_of(demo, "rahul.mehta"))[0]
    png = Renderer(ImageStore.from_settings(demo.settings)).png(*view.middle, PRESETS["lung"], size=128)
    img = np.asarray(Image.open(io.BytesIO(png)))
    # lung window -600/1500: air (-1000 HU) is dark grey, never black; the 1500 HU label is white
    assert img.shape == (128, 128) and 40 < img.min() < 80 and img.max() == 255
