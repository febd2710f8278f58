"""The persisted similar-case index: grouped vectors, HNSW for large groups, a manifest.

Layout under ``<index_dir>/cases/``::

    current -> v-<version>/          (symlink, swapped atomically)
    v-<version>/manifest.json        dimension, count, encoder id, table checksum, file checksums, groups
    v-<version>/vectors.npy          unit float32 vectors, rows sorted by (anatomy, region, id); memory-mapped
    v-<version>/ids.npy              case primary key of each row
    v-<version>/hnsw-<group>.faiss   HNSW + 8-bit scalar quantiser for groups of >= hnsw_min_cases rows

Every filter the product uses (all cases, one anatomy, one anatomy + region)
is a contiguous row range, so a filtered search never needs a FAISS ID
selector: small groups are scanned exactly with one matrix-vector product over
their rows, large groups use their own HNSW graph, and HNSW candidates are
re-scored exactly from the memory-mapped vectors. A search therefore always
returns min(k, group size) rows and never a ``-1`` id (HNSW + selector loses
recall on narrow filters; see docs/SIMILARITY.md).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from core.artifacts import ArtifactKind, VersionedDir, write_faiss
from core.errors import IndexStateError

__all__ = ["FORMAT", "KIND", "CaseIndex", "IndexParams", "build_index", "case_dir", "group_key", "hnsw_quantiser"]

FORMAT = 1
KIND = ArtifactKind("Case index", FORMAT)
ALL = "*"
# The manifest keys that make up a version's content address (the same inputs give the same version).
_CONTENT = ("format", "dim", "count", "encoder_id", "table_checksum", "params", "files")


def case_dir(root: Path) -> VersionedDir:
    """The versions of the similar-case index under ``root`` (``<index_dir>/cases``)."""
    return VersionedDir(
        root, "current", KIND, prefix="v-", what="Building the similar-case index",
        serving="the previous index still serves", unbuilt="no index was built",
    )  # fmt: skip


def _content_version(manifest: dict[str, Any]) -> str:
    core = {k: manifest[k] for k in _CONTENT}
    return hashlib.sha256(json.dumps(core, sort_keys=True).encode()).hexdigest()[:16]


def group_key(anatomy: str | None, region: str | None) -> str:
    """The manifest key of a filter: ``*``, ``lung`` or ``lung/left_lung_upper``."""
    if anatomy is None:
        return ALL
    return anatomy if region is None else f"{anatomy}/{region}"


@dataclass(frozen=True)
class IndexParams:
    """Build-time parameters (from ``settings.search``)."""

    hnsw_min_cases: int
    hnsw_m: int
    hnsw_ef_construction: int
    hnsw_codes: str = "fp16"  # the graph's stored codes: "fp16" or "sq8" (see SearchSettings.hnsw_codes)


def hnsw_quantiser(name: str) -> Any:
    """The faiss scalar quantiser type of ``hnsw_codes`` (an int at run time; the stubs say otherwise)."""
    kinds = {"fp16": faiss.ScalarQuantizer.QT_fp16, "sq8": faiss.ScalarQuantizer.QT_8bit}
    if name not in kinds:
        raise IndexStateError(f"Unknown HNSW code kind {name!r}; use one of {sorted(kinds)}")
    return kinds[name]


def _normalise(vectors: np.ndarray) -> np.ndarray:
    v = np.ascontiguousarray(vectors, dtype=np.float32)
    return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)


def _groups(anatomy: np.ndarray, region: np.ndarray) -> dict[str, tuple[int, int]]:
    """Contiguous row ranges of every filter group (rows are already sorted)."""
    out: dict[str, tuple[int, int]] = {ALL: (0, len(anatomy))}
    for col_keys in (anatomy.tolist(), [f"{a}/{r}" if r else "" for a, r in zip(anatomy, region, strict=True)]):
        start = 0
        for i in range(1, len(col_keys) + 1):
            if i == len(col_keys) or col_keys[i] != col_keys[start]:
                if col_keys[start]:
                    out[col_keys[start]] = (start, i)
                start = i
    return out


def build_index(
    root: Path,
    ids: np.ndarray,
    anatomy: Iterable[str],
    region: Iterable[str | None],
    vectors: np.ndarray,
    *,
    encoder_id: str,
    table_checksum: str,
    params: IndexParams,
) -> Path:
    """Build a new index version under ``root`` and point ``root/current`` at it atomically.

    The previous version keeps serving until the swap; a failed build leaves it untouched.
    A full disk raises :class:`~core.errors.DiskFullError`.
    """
    anat = np.asarray(list(anatomy), dtype=object)
    reg = np.asarray(["" if r is None else r for r in region], dtype=object)
    if not (len(ids) == len(anat) == len(reg) == len(vectors)):
        raise IndexStateError("Case index inputs differ in length")
    order = np.lexsort((np.asarray(ids), reg.astype(str), anat.astype(str)))
    ids_sorted = np.asarray(ids, dtype=np.int64)[order]
    vecs = _normalise(np.asarray(vectors)[order])
    anat, reg = anat[order], reg[order]
    groups = _groups(anat, reg)

    with case_dir(root).build() as build:
        np.save(build.path / "vectors.npy", vecs)
        np.save(build.path / "ids.npy", ids_sorted)
        group_meta: dict[str, dict[str, Any]] = {}
        for key, (start, end) in groups.items():
            hnsw_file = None
            if end - start >= params.hnsw_min_cases:
                hnsw_file = f"hnsw-{key.replace('/', '__')}.faiss"
                index = faiss.IndexHNSWSQ(vecs.shape[1], hnsw_quantiser(params.hnsw_codes), params.hnsw_m, faiss.METRIC_INNER_PRODUCT)
                index.hnsw.efConstruction = params.hnsw_ef_construction
                index.train(vecs[start:end])
                index.add(vecs[start:end])
                write_faiss(index, build.path / hnsw_file)
            group_meta[key] = {"start": start, "end": end, "hnsw": hnsw_file}
        manifest = {
            "dim": int(vecs.shape[1]),
            "count": len(ids_sorted),
            "encoder_id": encoder_id,
            "table_checksum": table_checksum,
            "params": params.__dict__,
            "groups": group_meta,
            "faiss_version": faiss.__version__,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }
        return build.commit(manifest, version=_content_version)


class CaseIndex:
    """A loaded, verified index version. Thread-safe for concurrent searches."""

    def __init__(self, path: Path, *, verify: bool = True) -> None:
        self.manifest: dict[str, Any] = KIND.read(path, verify=verify)
        try:
            self.vectors: np.ndarray = np.load(path / "vectors.npy", mmap_mode="r")
            self.ids: np.ndarray = np.load(path / "ids.npy")
        except (OSError, ValueError) as exc:
            raise IndexStateError(f"Case index arrays unreadable: {exc}") from exc
        if self.vectors.shape != (self.manifest["count"], self.manifest["dim"]):
            raise IndexStateError("Case index vectors do not match the manifest")
        self.path = path
        self.version: str = self.manifest["version"]
        self.groups: dict[str, dict[str, Any]] = self.manifest["groups"]
        self._hnsw: dict[str, Any] = {
            key: faiss.read_index(str(path / g["hnsw"])) for key, g in self.groups.items() if g["hnsw"]
        }

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self.manifest["dim"])

    def group_size(self, anatomy: str | None, region: str | None) -> int:
        """Number of cases matching the filter."""
        g = self.groups.get(group_key(anatomy, region))
        return 0 if g is None else int(g["end"] - g["start"])

    def search(
        self, query: np.ndarray, anatomy: str | None, region: str | None, k: int, *, ef_search: int, rerank: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``min(k, group size)`` case ids and cosine scores, best first."""
        g = self.groups.get(group_key(anatomy, region))
        if g is None or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        start, end = int(g["start"]), int(g["end"])
        q = _normalise(np.asarray(query, dtype=np.float32).reshape(1, -1))[0]
        k = min(k, end - start)
        hnsw = self._hnsw.get(group_key(anatomy, region))
        rows: np.ndarray | None = None
        if hnsw is not None:
            n_cand = min(end - start, k * rerank)
            # Per-call parameters: the shared index object is never mutated, so threads may search at once.
            params: Any = faiss.SearchParametersHNSW()  # type: ignore[attr-defined]  # missing from the stubs
            params.efSearch = max(ef_search, n_cand)
            _, cand = hnsw.search(q.reshape(1, -1), n_cand, params=params)
            cand = cand[0][cand[0] >= 0]
            if len(cand) >= k:
                rows = start + np.sort(cand)
        if rows is None:
            rows = np.arange(start, end)
            block = self.vectors[start:end]
        else:
            block = self.vectors[rows]
        scores = np.asarray(block @ q, dtype=np.float32)
        top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        top = top[np.argsort(-scores[top], kind="stable")]
        return self.ids[rows[top]], scores[top]
