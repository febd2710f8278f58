"""The viewer's data: the frames and geometry a series sends to the browser, and the committed bundle."""

from __future__ import annotations

import numpy as np
import pydicom

from components.viewer import BUILD, sources_digest
from core.imaging.query import series_for_scan
from core.imaging.store import ImageStore
from core.imaging.viewer_data import geometry_of, viewer_series
from core.runtime import Runtime
from tests.conftest import scan_of
from tests.imaging_support import packaged


def test_committed_bundle_was_built_from_these_sources() -> None:
    assert (BUILD / "viewer.js").stat().st_size > 100_000
    assert '<script src="viewer.js">' in (BUILD / "index.html").read_text()
    assert (BUILD / "BUILD_INFO").read_text().strip() == sources_digest(), "run `make viewer` and commit the bundle"


def test_geometry_from_a_real_ct_header_and_from_nothing() -> None:
    raw = packaged("CT_small.dcm").read_bytes()
    ds = pydicom.dcmread(packaged("CT_small.dcm"), stop_before_pixels=True)
    geo = geometry_of(raw)
    assert geo.spacing == tuple(float(v) for v in ds.PixelSpacing)
    assert geo.orientation == tuple(float(v) for v in ds.ImageOrientationPatient)
    assert geometry_of(b"not a dicom file").spacing is None
    truncated = packaged("rtplan_truncated.dcm").read_bytes()
    assert geometry_of(truncated).orientation is None


def test_series_payload_is_every_frame_in_modality_units_or_thinned_to_the_limit(demo: Runtime) -> None:
    view = series_for_scan(demo.db, scan_of(demo, "rahul.mehta"))[0]
    store = ImageStore.from_settings(demo.settings)
    full = viewer_series(demo.db, store, view, key="current", max_mb=96)
    frames = np.frombuffer(full.pixels, "<i2").reshape(full.meta["frames"], full.meta["rows"], full.meta["cols"])
    stored = store.load_frames(view.slices[0][0])
    assert full.meta["frames"] == len(view.slices) and np.array_equal(frames[3], stored[3])
    assert full.meta["step"] == 1 and full.meta["start"] == round(0.5 * (len(view.slices) - 1))
    one_mb = len(view.slices) * view.rows * view.cols * 2 / (1024 * 1024)
    thin = viewer_series(demo.db, store, view, key="current", max_mb=one_mb / 3.5)
    assert thin.meta["step"] == 4 and thin.meta["frames"] == len(view.slices[::4])
    assert "every 4th slice" in thin.meta["label"]
    assert np.array_equal(np.frombuffer(thin.pixels, "<i2").reshape(-1, view.rows, view.cols)[1], stored[4])
