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


def _images(at: object) -> list[str]:
    """The thumbnails of a run: ``st.html`` figures with the PNG inline (pages/_viewer.png_image), never st.image."""
    assert not list(at.get("image")), "an image on st.image gets a /media/ URL any client can fetch"  # type: ignore[attr-defined]
    return [h.proto.body for h in at.get("html") if "cb-image" in h.proto.body]  # type: ignore[attr-defined]


def test_seed_attaches_demo_images_to_every_scan_and_case(demo: Runtime) -> None:
    with demo.db.read_only() as s:
        scans = s.scalars(select(Scan.id)).all()
        n_cases = s.scalar(select(func.count()).select_from(HistoricalCase))
        with_images = s.scalar(select(func.count(func.distinct(ImageSeries.scan_id))))
        case_series = s.scalar(select(func.count()).where(ImageSeries.case_id.is_not(None)))
        kinds = set(s.scalars(select(ImageSeries.kind)).all())
    assert with_images == len(scans) and case_series == n_cases
    assert kinds == {"demo-synthetic", "demo-dicom"}
    # every case has its own image, embedded from its pixels with the index's encoder
    store = ImageStore.from_settings(demo.settings)
    assert len(list((store.root / "objects").rglob("*.npy"))) >= n_cases
    with demo.db.read_only() as s:
        encoders = set(s.scalars(select(ImageSeries.encoder_id).where(ImageSeries.case_id.is_not(None))).all())
    assert encoders == {demo.case_search.index.manifest["encoder_id"]}
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


def _viewer(at: object) -> tuple[list[dict[str, object]], dict[str, bytes]]:
    """The viewer component's panes (JSON) and pixel arguments (bytes), as the browser receives them."""
    import json

    (element,) = [e for e in at.get("component_instance") if "casebook_viewer" in e.proto.component_name]  # type: ignore[attr-defined]
    panes = json.loads(element.proto.json_args)["panes"]
    return panes, {a.key: a.bytes for a in element.proto.special_args}


def test_scan_review_viewer_for_doctor_and_patient(demo_root: Path, demo: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    use_root(demo_root, monkeypatch)
    sid = scan_of(demo, "rahul.mehta")
    doctor = page("scan_review", user_of(demo, "dr.chen"), sid)
    doctor.run()
    assert not doctor.exception
    assert "**AI reading**" in texts(doctor) and "Synthetic demo CT volume" in texts(doctor)
    panes, pixels = _viewer(doctor)
    (current,) = panes
    view = series_for_scan(demo.db, sid)[0]
    frames = ImageStore.from_settings(demo.settings).load_frames(view.slices[0][0])
    # every frame in modality units (HU), in the session's message: the browser windows and scrolls alone
    assert current["frames"] == len(view.slices) and current["dtype"] == "int16" and current["modality"] == "CT"
    sent = np.frombuffer(pixels["pixels_0"], "<i2").reshape(len(view.slices), current["rows"], current["cols"])
    assert np.array_equal(sent[0], frames[0]) and current["window"] == {"center": -600.0, "width": 1500.0}
    # the prior opens in the second pane
    doctor.button(key="beside-prior").click().run()
    panes, pixels = _viewer(doctor)
    assert [p["key"] for p in panes] == ["current", "beside"] and set(pixels) == {"pixels_0", "pixels_1"}
    assert panes[1]["caption"] == "Prior scan"
    patient = page("scan_review", user_of(demo, "rahul.mehta"), sid)
    patient.run()
    assert not patient.exception
    panes, _ = _viewer(patient)
    assert len(panes) == 1, "a patient sees their own image, no second pane"
    assert "AI reading" not in texts(patient) and "COPD" not in texts(patient)
    assert not [b for b in patient.button if b.key == "beside-prior"]


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
