"""Demo images for the seeded demo data: DEMO DATA, NOT FOR CLINICAL USE.

- Real DICOM where an installed package ships it: pydicom's wheel carries a few
  real test images (a 512x512 head CT slice, a 30-frame ultrasound cine). They
  are read from the installed package at run time (never copied into this
  repository), de-identified like any import, and attached as an extra series.
- Every other image is a synthetic rendering from :mod:`core.imaging.phantoms`,
  labelled as such in its series label and in its pixels.

Every demo scan gets its anatomy's phantom (variant by position, so a patient's
prior differs from the current scan); every historical case gets a thumbnail
series pointing at one of the shared phantom files (variant by diagnosis, so
cases of one diagnosis look alike). Content addressing stores each file once.
"""

from __future__ import annotations

import io
import logging
import warnings
import zlib
from collections.abc import Callable
from typing import Any

from sqlalchemy import func, insert, select, text

from core.errors import ImageRejectedError
from core.imaging.burnedin import scrub_burned_in
from core.imaging.deid import Deidentifier
from core.imaging.dicomio import decode_pixels, read_dicom
from core.imaging.phantoms import synthetic
from core.imaging.store import ImageStore, StagedImport
from core.settings import Settings
from core.store.db import Database
from core.store.models import HistoricalCase, ImageInstance, ImageSeries, Scan

__all__ = ["REAL_DEMO_FILES", "attach_demo_images"]

log = logging.getLogger(__name__)
# anatomy -> (pydicom test file, what it is); read from the installed wheel at run time
REAL_DEMO_FILES = {
    "brain": ("693_J2KI.dcm", "Real head CT slice, JPEG 2000 (pydicom test file; de-identified on import)"),
    "abdomen": ("examples_overlay.dcm", "Real abdominal MR slice (pydicom test file; de-identified on import)"),
    "lung": (
        "examples_ybr_color.dcm",
        "Real ultrasound cine, 30 frames: an echocardiogram clip from pydicom's test files, shown to "
        "demonstrate multi-frame scrolling (de-identified on import)",
    ),
}
VARIANTS = 3
_DEMO_SEED = "casebook-demo-images"


def _phantom_files(staged: StagedImport) -> dict[tuple[str, int], dict[str, Any]]:
    out = {}
    for anatomy in ("lung", "brain", "abdomen", "spine", "breast", "eye", "skin", "pathology"):
        for variant in range(VARIANTS):
            p = synthetic(anatomy, variant)
            out[(anatomy, variant)] = {
                "pixels": staged.add_frames(p.frames),
                "modality": p.modality,
                "window": p.window,
                "label": p.label,
                "shape": p.frames.shape,
            }
    return out


def _real_file(anatomy: str, staged: StagedImport, settings: Settings) -> dict[str, Any] | None:
    from pydicom.data import get_testdata_file

    name, label = REAL_DEMO_FILES[anatomy]
    with warnings.catch_warnings():  # a file missing from the wheel triggers a (failing) download attempt
        warnings.simplefilter("ignore")
        try:
            path = get_testdata_file(name)
        except (OSError, RuntimeError, ValueError):  # a failed download attempt: no real file for this demo
            path = None
    if path is None:
        log.info("pydicom test file %s not installed; the %s demo uses synthetic images only", name, anatomy)
        return None
    with open(str(path), "rb") as fh:
        ds = read_dicom(fh.read(), name, settings.imaging)
    decoded = decode_pixels(ds, name)
    # examples_ybr_color.dcm draws its patient's name into every frame without declaring it: OCR and redact
    try:
        shown, _ = scrub_burned_in(ds, decoded.frames, name, "redact", settings.imaging.ocr_frames)
    except ImageRejectedError as exc:  # no tesseract here: the demo shows synthetic images only, never unchecked text
        log.warning("%s; the %s demo uses synthetic images only", exc, anatomy)
        return None
    Deidentifier(_DEMO_SEED, retain_dates=True).apply(ds, name)
    buf = io.BytesIO()
    ds.save_as(buf, enforce_file_format=True)
    return {
        "file": staged.add_bytes(buf.getvalue(), "dcm"),
        "pixels": staged.add_frames(shown),
        "modality": str(ds.get("Modality") or "OT"),
        "window": decoded.window,
        "label": label,
        "shape": decoded.frames.shape,
    }


def _series_row(sid: int, asset: dict[str, Any], kind: str, **where: Any) -> dict[str, Any]:
    shape = asset["shape"]
    window = asset["window"]
    return {
        "id": sid,
        "modality": asset["modality"],
        "kind": kind,
        "label": asset["label"],
        "n_images": 1,
        "rows": int(shape[1]),
        "cols": int(shape[2]),
        "window_center": window[0] if window else None,
        "window_width": window[1] if window else None,
        **where,
    }


def _instance_row(iid: int, sid: int, asset: dict[str, Any]) -> dict[str, Any]:
    shape = asset["shape"]
    return {
        "id": iid,
        "series_id": sid,
        "position": 0,
        "file_sha256": asset.get("file"),
        "file_ext": "dcm",
        "pixels_sha256": asset["pixels"],
        "frames": int(shape[0]),
        "rows": int(shape[1]),
        "cols": int(shape[2]),
        "samples": 3 if len(shape) == 4 else 1,
    }


def attach_demo_images(settings: Settings, db: Database, *, progress: Callable[[str], None] | None = None) -> int:
    """Attach demo images to every demo scan and historical case without one; returns the series added."""
    say = progress or (lambda m: log.info(m))
    store = ImageStore.from_settings(settings)
    with db.read_only() as s:
        if s.scalar(select(func.count()).select_from(ImageSeries).where(ImageSeries.kind.like("demo%"))):
            return 0
        scans = s.execute(
            select(Scan.id, Scan.anatomy, Scan.patient_id).order_by(Scan.patient_id, Scan.created_at)
        ).all()
        cases = s.execute(select(HistoricalCase.case_id, HistoricalCase.anatomy, HistoricalCase.diagnosis)).all()
        sid = int(s.scalar(select(func.max(ImageSeries.id))) or 0)
        iid = int(s.scalar(select(func.max(ImageInstance.id))) or 0)
    say("Drawing the demo images")
    staged = store.stage()
    try:
        assets = _phantom_files(staged)
        real = {a: _real_file(a, staged, settings) for a in REAL_DEMO_FILES}
        series: list[dict[str, Any]] = []
        instances: list[dict[str, Any]] = []
        seen: dict[tuple[int, str], int] = {}
        for scan_id, anatomy, patient in scans:
            nth = seen[(patient, anatomy)] = seen.get((patient, anatomy), -1) + 1
            picks = [(assets[(anatomy, nth % VARIANTS)], "demo-synthetic")]
            extra = real.get(anatomy)
            if extra is not None:
                picks.append((extra, "demo-dicom"))
            for asset, kind in picks:
                sid, iid = sid + 1, iid + 1
                series.append(_series_row(sid, asset, kind, scan_id=scan_id))
                instances.append(_instance_row(iid, sid, asset))
        for case_id, anatomy, diagnosis in cases:
            sid, iid = sid + 1, iid + 1
            asset = assets[(anatomy, zlib.crc32(diagnosis.encode()) % VARIANTS)]
            series.append(_series_row(sid, asset, "demo-synthetic", case_id=case_id))
            instances.append(_instance_row(iid, sid, asset))
        say(f"Attaching {len(series)} demo image series")
        with db.session() as s:
            s.execute(insert(ImageSeries), series)
            s.execute(insert(ImageInstance), instances)
            if s.get_bind().dialect.name == "postgresql":  # explicit ids: move the serials past them
                for table in ("image_series", "image_instances"):
                    s.execute(
                        text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
                    )
            s.flush()
            staged.publish()
    except BaseException:
        staged.unpublish()
        staged.discard()
        raise
    return len(series)
