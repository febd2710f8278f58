"""What the browser viewer receives for one series: its frames as raw pixels plus the geometry it needs.

The viewer (``components/viewer``, Cornerstone3D) windows, scrolls, pans, zooms and
measures in the browser, so it gets modality values (Hounsfield units for CT), not
rendered PNGs. Every frame of the series travels at once in the session's own
websocket message (never a URL), so a slice change waits for nothing. A series
larger than ``imaging.viewer_max_mb`` is thinned to every k-th frame, and says so.

Geometry comes from the stored de-identified DICOM header of the first instance:
``PixelSpacing`` (lengths in mm) and ``ImageOrientationPatient`` (orientation
markers), or their enhanced multi-frame functional-group forms. Images without
them (photographs, synthetic renderings) measure in pixels and show no markers.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select

from core.imaging.query import SeriesView
from core.imaging.render import auto_window
from core.imaging.store import ImageStore
from core.store.db import Database
from core.store.models import ImageInstance

__all__ = ["Geometry", "ViewerSeries", "geometry_of", "viewer_series"]


@dataclass(frozen=True)
class Geometry:
    """Pixel spacing in mm (row, column) and the row/column direction cosines (LPS), when the header has them."""

    spacing: tuple[float, float] | None = None
    orientation: tuple[float, ...] | None = None


@dataclass(frozen=True)
class ViewerSeries:
    """One series as the viewer gets it: JSON-safe ``meta`` and the frames' raw little-endian bytes."""

    meta: dict[str, Any]
    pixels: bytes


def _floats(value: Any, n: int) -> tuple[float, ...] | None:
    try:
        out = tuple(float(v) for v in value)
    except (TypeError, ValueError):
        return None
    return out if len(out) == n and all(np.isfinite(out)) else None


def _from_groups(ds: Any, attr: str, seq: str) -> Any:
    """An attribute from the shared (else the first per-frame) functional group of an enhanced multi-frame image."""
    for groups in ("SharedFunctionalGroupsSequence", "PerFrameFunctionalGroupsSequence"):
        for item in getattr(ds, groups, None) or []:
            for inner in getattr(item, seq, None) or []:
                if attr in inner:
                    return inner.get(attr).value
    return None


def geometry_of(dicom_bytes: bytes) -> Geometry:
    """Spacing and orientation from a DICOM header (pixels are not read); empty when absent or unreadable."""
    import pydicom
    from pydicom.errors import InvalidDicomError

    try:
        ds = pydicom.dcmread(io.BytesIO(dicom_bytes), stop_before_pixels=True, force=True)
    except (InvalidDicomError, OSError, ValueError, EOFError):
        return Geometry()
    spacing = ds.get("PixelSpacing") or _from_groups(ds, "PixelSpacing", "PixelMeasuresSequence")
    orient = ds.get("ImageOrientationPatient") or _from_groups(ds, "ImageOrientationPatient", "PlaneOrientationSequence")
    sp = _floats(spacing.value if hasattr(spacing, "value") else spacing, 2) if spacing is not None else None
    io6 = _floats(orient.value if hasattr(orient, "value") else orient, 6) if orient is not None else None
    return Geometry((sp[0], sp[1]) if sp and min(sp) > 0 else None, io6)


def _window(series: SeriesView, frames: np.ndarray) -> dict[str, float] | None:
    """The stored window, else one spanning the middle frame's values (colour images have none)."""
    if series.colour:
        return None
    if series.window is not None:
        return {"center": series.window.center, "width": series.window.width}
    center, width = auto_window(frames[len(frames) // 2])
    return {"center": center, "width": width}


def _first_file(db: Database, series_id: int) -> tuple[str, str] | None:
    with db.read_only() as s:
        row = s.execute(
            select(ImageInstance.file_sha256, ImageInstance.file_ext)
            .where(ImageInstance.series_id == series_id, ImageInstance.file_sha256.is_not(None))
            .order_by(ImageInstance.position)
            .limit(1)
        ).first()
    return (str(row[0]), str(row[1])) if row else None


def viewer_series(
    db: Database, store: ImageStore, series: SeriesView, *, key: str, max_mb: float, start: float = 0.5
) -> ViewerSeries:
    """``series`` ready for the viewer: frames (thinned to fit ``max_mb``) and their geometry.

    ``start`` is the relative position (0..1) of the slice shown first.
    """
    n = len(series.slices)
    per = series.rows * series.cols * (3 if series.colour else 1)
    first = np.asarray(store.load_frames(series.slices[0][0])[0])
    dtype = np.uint8 if series.colour else (np.int16 if first.dtype == np.int16 else np.float32)
    itemsize = np.dtype(dtype).itemsize
    step = max(1, int(np.ceil(n * per * itemsize / (max_mb * 1024 * 1024))))
    chosen = series.slices[::step]
    out = np.empty((len(chosen), *first.shape), dtype=dtype)
    frames: dict[str, np.ndarray] = {}
    for i, (sha, frame) in enumerate(chosen):
        stack = frames.get(sha)
        if stack is None:
            stack = frames[sha] = store.load_frames(sha)
        out[i] = stack[min(frame, stack.shape[0] - 1)]
    found = _first_file(db, series.id)
    geo = geometry_of(store.read_bytes(*found)) if found and found[1] == "dcm" else Geometry()
    label = series.label + (f" (every {step}th slice: the series is larger than the viewer's limit)" if step > 1 else "")
    meta: dict[str, Any] = {
        "key": key,
        "series_id": series.id,
        "label": label,
        "caption": label,
        "rows": int(first.shape[0]),
        "cols": int(first.shape[1]),
        "frames": len(chosen),
        "dtype": np.dtype(dtype).name,
        "colour": series.colour,
        "modality": series.modality,
        "spacing": list(geo.spacing) if geo.spacing else None,
        "orientation": list(geo.orientation) if geo.orientation else None,
        "window": _window(series, out),
        "start": min(len(chosen) - 1, max(0, round(start * (len(chosen) - 1)))),
        "step": step,
    }
    return ViewerSeries(meta, out.astype("<" + out.dtype.str[1:], copy=False).tobytes())
