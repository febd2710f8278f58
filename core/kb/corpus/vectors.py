"""Corpus vectors: precomputed ``.npy`` matrices in, raw row files out, rows read back by position.

A shard keeps its vectors in one raw file (``vectors.f32`` or ``vectors.f16``,
row = position, shape in the manifest). Exact re-ranking reads the few rows it
needs with ``os.pread`` instead of memory-mapping the file: pages touched
through a mapping count as the process's resident memory (and the kernel maps
neighbouring pages around each fault), so a long-running server that re-ranked
through ``np.memmap`` would show most of a multi-GB file as its own RSS. Read
with ``pread`` the rows sit in the shared page cache, which the kernel reclaims
freely. ``np.memmap(path, dtype, mode="r", shape=...)`` still opens the file for
inspection.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from core.errors import CorpusInputError

__all__ = ["VectorFile", "VectorWriter", "bad_rows", "open_embeddings", "prepare", "read_rows"]

Metric = Literal["cosine", "ip"]
_FLOATS = (np.float16, np.float32, np.float64)


def open_embeddings(path: Path) -> np.ndarray:
    """A precomputed embedding matrix, memory-mapped (never loaded whole); checks shape and dtype."""
    try:
        matrix = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise CorpusInputError(f"Cannot read embeddings {path}: {exc}", [(0, f"unreadable .npy: {exc}")]) from exc
    if matrix.ndim != 2 or matrix.shape[1] < 1:
        msg = f"embeddings must be a 2-D matrix (rows, dim), found shape {matrix.shape}"
        raise CorpusInputError(f"{path}: {msg}", [(0, msg)])
    if matrix.dtype.type not in _FLOATS:
        msg = f"embeddings must be float16, float32 or float64, found {matrix.dtype}"
        raise CorpusInputError(f"{path}: {msg}", [(0, msg)])
    return matrix


def read_rows(matrix: np.ndarray, start: int, stop: int) -> np.ndarray:
    """Rows ``start:stop`` of a matrix from :func:`open_embeddings`, read from its file (not through the mapping,
    so streaming a multi-GB file does not grow the process's resident memory)."""
    stop = min(stop, matrix.shape[0])
    if stop <= start:
        return np.zeros((0, matrix.shape[1]), dtype=np.float32)
    filename = getattr(matrix, "filename", None)
    if filename is None:  # an in-memory matrix
        return np.asarray(matrix[start:stop])
    row = matrix.shape[1] * matrix.dtype.itemsize
    with open(filename, "rb") as fh:
        fh.seek(int(getattr(matrix, "offset", 0)) + start * row)
        data = np.fromfile(fh, dtype=matrix.dtype, count=(stop - start) * matrix.shape[1])
    return data.reshape(stop - start, matrix.shape[1])


def bad_rows(batch: np.ndarray, metric: Metric) -> list[tuple[int, str]]:
    """``(row index, reason)`` for rows with NaN/infinite values (or zero length, under cosine)."""
    finite = np.isfinite(batch).all(axis=1)
    out = [(int(i), "vector has NaN or infinite values") for i in np.flatnonzero(~finite)]
    if metric == "cosine":
        norms = np.linalg.norm(np.where(finite[:, None], batch, 0), axis=1)
        out += [(int(i), "vector has zero length") for i in np.flatnonzero(finite & (norms == 0))]
    return sorted(out)


def prepare(batch: np.ndarray, metric: Metric) -> np.ndarray:
    """float32 rows, L2-normalised under ``cosine``."""
    out = np.array(batch, dtype=np.float32, copy=True)
    if metric == "cosine":
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
    return out


class VectorWriter:
    """Appends rows to a shard's raw vector file; :meth:`truncate` drops rows after a checkpoint."""

    def __init__(self, path: Path, dim: int, dtype: str) -> None:
        self.path, self.dim, self.dtype = path, dim, np.dtype(dtype)
        self._fh = path.open("ab")
        self.count = self._fh.tell() // (dim * self.dtype.itemsize)

    def add(self, rows: np.ndarray) -> None:
        """Append rows (cast to the file's dtype)."""
        self._fh.write(np.ascontiguousarray(rows, dtype=self.dtype).tobytes())
        self.count += len(rows)

    def sync(self) -> None:
        """Flush to disk (called at each checkpoint, before the checkpoint is recorded)."""
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def truncate(self, count: int) -> None:
        """Keep only the first ``count`` rows."""
        self._fh.flush()
        self._fh.truncate(count * self.dim * self.dtype.itemsize)
        self._fh.seek(0, os.SEEK_END)
        self.count = count

    def close(self) -> None:
        """Flush and close (closed even when the flush fails, e.g. on a full disk)."""
        try:
            self.sync()
        finally:
            with contextlib.suppress(OSError):  # the same failed flush again; the file is closed regardless
                self._fh.close()


class VectorFile:
    """Read-only rows of a raw vector file, by position, through ``os.pread`` (thread-safe)."""

    def __init__(self, path: Path, n: int, dim: int, dtype: str) -> None:
        self.path, self.n, self.dim, self.dtype = path, n, dim, np.dtype(dtype)
        self._row = dim * self.dtype.itemsize
        self._fd = os.open(path, os.O_RDONLY)

    def rows(self, positions: Sequence[int], out: np.ndarray | None = None) -> np.ndarray:
        """float32 rows at ``positions`` (in that order), written into ``out`` when given (no second copy)."""
        if out is None:
            out = np.empty((len(positions), self.dim), dtype=np.float32)
        for i, pos in enumerate(positions):
            raw = os.pread(self._fd, self._row, int(pos) * self._row)
            out[i] = np.frombuffer(raw, dtype=self.dtype)
        return out

    def block(self, start: int, stop: int) -> np.ndarray:
        """float32 rows ``start:stop`` (contiguous; index building and sampling)."""
        raw = os.pread(self._fd, (stop - start) * self._row, start * self._row)
        return np.frombuffer(raw, dtype=self.dtype).reshape(stop - start, self.dim).astype(np.float32)

    def close(self) -> None:
        """Close the file descriptor."""
        os.close(self._fd)
