"""The content-addressed image store: files named by their sha256, never changed after import.

Layout under the root::

    objects/ab/abcdef....dcm     a de-identified DICOM file (or .png for photographs)
    objects/ab/abcdef....npy     decoded frames, shape (frames, rows, cols[, 3])
    staging/<import id>/         files of an import in progress

An import writes every file into its staging folder first; :meth:`ImageStore.publish`
then moves them into ``objects/`` (an atomic rename each; a file already present
has the same content by construction) and marks them read-only. A failed import
removes its staging folder and whatever it had published that no row refers to,
so nothing is half-imported. The root can be any mounted file system (NFS, an
object store mounted with FUSE): every app replica must see the same root.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from core.errors import NotFoundError
from core.settings import Settings

__all__ = ["ImageStore", "StagedImport", "sha256_bytes"]


def sha256_bytes(data: bytes) -> str:
    """The hex sha256 of ``data``: a content address."""
    return hashlib.sha256(data).hexdigest()


def _npy_bytes(frames: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(frames), allow_pickle=False)
    return buf.getvalue()


@dataclass
class StagedImport:
    """Files of one import, written under ``staging/<id>/`` and not yet visible."""

    store: ImageStore
    import_id: str
    folder: Path
    names: list[str] = field(default_factory=list)
    published: list[Path] = field(default_factory=list)

    def add_bytes(self, data: bytes, ext: str) -> str:
        """Stage ``data``; returns its sha256."""
        digest = sha256_bytes(data)
        name = f"{digest}.{ext}"
        path = self.folder / name
        if not path.exists():
            path.write_bytes(data)
            self.names.append(name)
        return digest

    def add_frames(self, frames: np.ndarray) -> str:
        """Stage decoded frames as ``.npy``; returns their sha256."""
        return self.add_bytes(_npy_bytes(frames), "npy")

    def publish(self) -> None:
        """Move every staged file into ``objects/`` (read-only); files already there are kept."""
        for name in self.names:
            target = self.store.object_path(name)
            if target.exists():
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(self.folder / name, target)
            target.chmod(stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
            self.published.append(target)
        self.discard()

    def unpublish(self) -> None:
        """Remove what :meth:`publish` added (the database transaction that should refer to them failed)."""
        for path in self.published:
            path.unlink(missing_ok=True)
        self.published.clear()

    def discard(self) -> None:
        """Remove the staging folder."""
        shutil.rmtree(self.folder, ignore_errors=True)


class ImageStore:
    """Files under one root, addressed by sha256 plus an extension."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "objects").mkdir(parents=True, exist_ok=True)
        (root / "staging").mkdir(parents=True, exist_ok=True)

    @classmethod
    def from_settings(cls, settings: Settings) -> ImageStore:
        """The store at ``imaging.store_root`` (default ``<data_dir>/images``)."""
        root = settings.imaging.store_root
        path = settings.paths.resolve(root) if root else settings.paths.resolve(settings.paths.data_dir) / "images"
        return cls(path)

    def object_path(self, name: str) -> Path:
        """Where a file named ``<sha256>.<ext>`` lives."""
        return self.root / "objects" / name[:2] / name

    def stage(self) -> StagedImport:
        """A fresh staging folder for one import."""
        import_id = "imp_" + uuid.uuid4().hex[:12]
        folder = self.root / "staging" / import_id
        folder.mkdir(parents=True)
        return StagedImport(self, import_id, folder)

    def read_bytes(self, digest: str, ext: str) -> bytes:
        """The content of ``<digest>.<ext>``; raises :class:`NotFoundError` when missing."""
        path = self.object_path(f"{digest}.{ext}")
        if not path.is_file():
            raise NotFoundError(f"Image file {digest[:12]}… is missing from the image store")
        return path.read_bytes()

    def load_frames(self, digest: str) -> np.ndarray:
        """Decoded frames, memory-mapped read-only (a slice change reads one frame from disk)."""
        path = self.object_path(f"{digest}.npy")
        if not path.is_file():
            raise NotFoundError(
                f"Pixels {digest[:12]}… are missing from the image store",
                hint="The image store root may have changed (imaging.store_root); import the study again.",
            )
        return np.load(path, mmap_mode="r", allow_pickle=False)
