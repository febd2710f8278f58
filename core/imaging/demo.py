"""Demo images for the seeded demo data: DEMO DATA, NOT FOR CLINICAL USE.

- Real DICOM where an installed package ships it: pydicom's wheel carries a few
  real test images (a 512x512 head CT slice, a 30-frame ultrasound cine). They
  are read from the installed package at run time (never copied into this
  repository), de-identified like any import, and attached as an extra series.
- Every other image is a synthetic rendering from :mod:`core.demo.looks`
  (drawn by :mod:`core.demo.images` while seeding), labelled as such in its series label.

Every demo scan gets its own study (a volume, or one photograph) and every
historical case its own 128x128 image; the embedding of each was computed from
those pixels and is kept on the series with the encoder's id.
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import func, insert, select, text

from core.errors import ImageRejectedError
from core.imaging.burnedin import scrub_burned_in
from core.imaging.deid import Deidentifier
from core.imaging.dicomio import decode_pixels, read_dicom
from core.imaging.store import StagedImport
from core.settings import Settings
from core.store.db import Database
from core.store.models import ImageInstance, ImageSeries, Scan, utcnow

__all__ = ["REAL_DEMO_FILES", "DemoImage", "attach_demo_images"]

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
_DEMO_SEED = "casebook-demo-images"
MODALITY = {
    "lung": "CT",
    "brain": "CT",
    "abdomen": "CT",
    "spine": "CT",
    "breast": "MG",
    "eye": "OP",
    "skin": "XC",
    "pathology": "SM",
}
WINDOW = {"lung": (-600.0, 1500.0), "brain": (40.0, 80.0), "abdomen": (40.0, 400.0), "spine": (400.0, 1800.0)}
_LABEL = "Synthetic demo {} (drawn by Casebook; not a patient image)"
_WHAT = {"CT": "CT volume", "MG": "mammogram", "OP": "fundus photograph", "XC": "dermoscopy photograph", "SM": "stained slide"}


@dataclass(frozen=True)
class DemoImage:
    """A rendered demo image staged in the store, with the embedding computed from its pixels."""

    anatomy: str
    pixels: str
    shape: tuple[int, ...]
    embedding: np.ndarray | None
    encoder_id: str | None
    created_at: dt.datetime | None = None

    def asset(self) -> dict[str, Any]:
        """The series/instance fields of this image."""
        modality = MODALITY[self.anatomy]
        return {
            "pixels": self.pixels,
            "modality": modality,
            "window": WINDOW.get(self.anatomy),
            "label": _LABEL.format(_WHAT[modality]),
            "shape": self.shape,
        }


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


def _series_row(sid: int, asset: dict[str, Any], kind: str, img: DemoImage | None, **where: Any) -> dict[str, Any]:
    shape = asset["shape"]
    window = asset["window"]
    extra: dict[str, Any] = {"embedding": None, "encoder_id": None, "created_at": utcnow()}  # same keys every row
    if img is not None:
        extra.update(embedding=img.embedding, encoder_id=img.encoder_id, created_at=img.created_at or utcnow())
    return {
        **extra,
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


def attach_demo_images(
    settings: Settings,
    db: Database,
    staged: StagedImport,
    scans: dict[str, DemoImage],
    cases: dict[str, DemoImage],
    *,
    progress: Callable[[str], None] | None = None,
) -> int:
    """Write the series of the rendered demo images (and the packaged real DICOM) and publish them; returns series added.

    ``staged`` already holds the rendered pixels; it is published here, or discarded on failure.
    """
    say = progress or (lambda m: log.info(m))
    try:
        with db.read_only() as s:
            rows = s.execute(select(Scan.id, Scan.anatomy)).all()
            sid = int(s.scalar(select(func.max(ImageSeries.id))) or 0)
            iid = int(s.scalar(select(func.max(ImageInstance.id))) or 0)
        real = {a: _real_file(a, staged, settings) for a in REAL_DEMO_FILES}
        series: list[dict[str, Any]] = []
        instances: list[dict[str, Any]] = []
        for scan_id, anatomy in rows:
            picks: list[tuple[dict[str, Any], str, DemoImage | None]] = []
            if scan_id in scans:
                picks.append((scans[scan_id].asset(), "demo-synthetic", scans[scan_id]))
            if real.get(anatomy) is not None:
                picks.append((real[anatomy], "demo-dicom", None))  # type: ignore[arg-type]
            for asset, kind, img in picks:
                sid, iid = sid + 1, iid + 1
                series.append(_series_row(sid, asset, kind, img, scan_id=scan_id))
                instances.append(_instance_row(iid, sid, asset))
        for case_id, img in cases.items():
            sid, iid = sid + 1, iid + 1
            asset = img.asset()
            series.append(_series_row(sid, asset, "demo-synthetic", img, case_id=case_id))
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
