"""Helpers for the imaging tests: pydicom's packaged test files, copied into a test folder at run time."""

from __future__ import annotations

import shutil
import warnings
from pathlib import Path
from typing import Any

import pydicom
from pydicom.data import get_testdata_file
from sqlalchemy import func, select

from core.imaging.store import ImageStore
from core.runtime import Runtime
from core.store.models import AuditLog, ImageInstance, ImageSeries, Scan, User


def packaged(name: str) -> Path:
    """The path of one of pydicom's packaged test files (never downloaded)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = get_testdata_file(name)
    assert path is not None, f"{name} is not in the pydicom wheel"
    return Path(str(path))


def copy_packaged(folder: Path, *names: str) -> Path:
    """Copy packaged test files into ``folder`` (created) and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copy(packaged(name), folder / name)
    return folder


def edited(src: str, dest: Path, **changes: Any) -> Path:
    """A packaged file with some elements changed, saved to ``dest``."""
    ds = pydicom.dcmread(packaged(src))
    for key, value in changes.items():
        setattr(ds, key, value)
    ds.save_as(dest)
    return dest


def counts(rt: Runtime) -> dict[str, int]:
    """Rows in the tables an import writes to, plus files in the image store."""
    with rt.db.read_only() as s:
        out = {
            m.__tablename__: int(s.scalar(select(func.count()).select_from(m)) or 0)
            for m in (Scan, User, ImageSeries, ImageInstance)
        }
    store = ImageStore.from_settings(rt.settings)
    out["objects"] = sum(1 for p in (store.root / "objects").rglob("*") if p.is_file())
    out["staging"] = sum(1 for _ in (store.root / "staging").iterdir())
    return out


def audit_outcomes(rt: Runtime) -> list[str]:
    """Outcomes of the image-import audit rows, oldest first."""
    with rt.db.read_only() as s:
        return list(s.scalars(select(AuditLog.outcome).where(AuditLog.action == "image.import").order_by(AuditLog.id)))


def real_ct_series(folder: Path, n: int = 24) -> Path:
    """``n`` axial slices of a real CT: pydicom's 512x512 head CT slice (693_J2KI.dcm), decompressed, one series.

    pydicom ships no multi-slice or multi-frame CT, so each slice is the real one shifted by a
    few rows (each differs, as in a real series), with its own position and instance number;
    the real header (PixelSpacing, ImageOrientationPatient, rescale) is kept.
    """
    import numpy as np
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    folder.mkdir(parents=True, exist_ok=True)
    src = pydicom.dcmread(packaged("693_J2KI.dcm"))
    src.decompress()
    src.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    stored = src.pixel_array.copy()
    study, series = generate_uid(), generate_uid()
    z0 = float(src.ImagePositionPatient[2]) if "ImagePositionPatient" in src else 0.0
    for k in range(n):
        src.PixelData = np.roll(stored, k * 3, axis=0).tobytes()
        src.StudyInstanceUID, src.SeriesInstanceUID = study, series
        src.SOPInstanceUID = src.file_meta.MediaStorageSOPInstanceUID = generate_uid()
        src.InstanceNumber = k + 1
        if "ImagePositionPatient" in src:
            src.ImagePositionPatient = [src.ImagePositionPatient[0], src.ImagePositionPatient[1], z0 + 2.5 * k]
        src.save_as(folder / f"ct{k:03d}.dcm")
    return folder
