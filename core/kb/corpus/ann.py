"""FAISS indexes of a corpus: chosen by size, trained once, one file per shard, searched together.

* fewer than ``kb.corpus.flat_max_chunks`` chunks: ``IndexFlatIP`` (exact);
* otherwise ``kb.corpus.ann``: ``ivfpq`` (``IndexIVFPQ``, dim/8 bytes per
  vector) or ``hnsw-sq`` (``IndexHNSWSQ``, 8-bit codes, one byte per dimension
  plus the graph).

Every shard's index is a copy of one trained template, so IVF shards share
their coarse quantizer: a query is assigned to its lists once and each shard
scans only those lists (``search_preassigned``). Indexes are opened with
``faiss.IO_FLAG_MMAP`` (IVF inverted lists stay in the file, paged in on
demand) or ``faiss.IO_FLAG_MMAP_IFC`` (flat and scalar-quantised codes), as
faiss-cpu 1.15 supports both. Scores here are approximate; the caller
re-ranks exactly from the vectors on disk.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.artifacts import write_faiss
from core.config.kb import KBSettings
from core.errors import ConfigError
from core.kb.corpus.vectors import VectorFile

__all__ = ["ShardedANN", "ann_params", "build_shard_index", "choose_kind", "sample_rows", "train_template"]

log = logging.getLogger(__name__)
_ADD_BLOCK = 16_384
_RESIDUAL_BLOCK = 4_096  # rows per in-place residual step: the gathered centroids are a 12 MB temporary at 768-d


def choose_kind(n: int, cfg: KBSettings) -> str:
    """``flat`` below ``corpus_flat_max_chunks``, else ``corpus_ann``."""
    return "flat" if n < cfg.corpus.flat_max_chunks else cfg.corpus.ann


def ann_params(kind: str, n: int, dim: int, n_train: int, cfg: KBSettings) -> dict[str, Any]:
    """The build parameters recorded in the manifest (lists, PQ bytes, graph degree)."""
    if kind == "ivfpq":
        m = cfg.corpus.pq_m or max(1, dim // 8)
        if dim % m:
            raise ConfigError(f"kb.corpus.pq_m={m} does not divide the vector dimension {dim}")
        # FAISS wants >= 39 training points per list.
        nlist = max(1, min(cfg.corpus.ivf_nlist or round(math.sqrt(n)), n_train // 39))
        return {"nlist": nlist, "pq_m": m, "pq_bits": 8}
    if kind == "hnsw-sq":
        return {"hnsw_m": cfg.corpus.hnsw_m, "ef_construction": cfg.corpus.hnsw_ef_construction, "sq": "QT_8bit"}
    return {}


def sample_rows(files: Sequence[VectorFile], size: int, seed: int = 0) -> np.ndarray:
    """``size`` rows drawn without replacement across all shards (seeded, so a resumed build trains the same).

    The rows are read straight into one float32 array: the sample is the largest allocation of an
    ingestion (``size * dim * 4`` bytes), so it is never held twice.
    """
    total = sum(f.n for f in files)
    picks = np.sort(np.random.default_rng(seed).choice(total, size=min(size, total), replace=False))
    starts = np.cumsum([0] + [f.n for f in files])
    out = np.empty((len(picks), files[0].dim), dtype=np.float32)
    done = 0
    for i, f in enumerate(files):
        local = picks[(picks >= starts[i]) & (picks < starts[i + 1])] - starts[i]
        f.rows(local.tolist(), out=out[done : done + len(local)])
        done += len(local)
    return out


def _train_ivfpq(index: Any, sample: np.ndarray) -> None:
    """What ``IndexIVFPQ.train`` does, with the PQ residuals computed in place in ``sample``.

    FAISS's own ``train`` allocates a second ``n * dim`` float array for the residuals (up to 65,536
    rows), which doubled the training peak; here the coarse k-means runs on the sample, then each row
    becomes its residual to the nearest centroid and the PQ codebooks are trained on that.
    """
    import faiss

    quantizer = faiss.downcast_index(index.quantizer)
    faiss.Clustering(index.d, index.nlist, index.cp).train(sample, quantizer)  # spherical under IP, as FAISS sets
    centroids = quantizer.reconstruct_n(0, index.nlist)
    for start in range(0, len(sample), _RESIDUAL_BLOCK):
        block = sample[start : start + _RESIDUAL_BLOCK]
        _, assign = quantizer.search(block, 1)
        block -= centroids[assign[:, 0]]
    index.pq.train(sample)
    index.is_trained = True
    index.precompute_table()


def train_template(kind: str, dim: int, params: dict[str, Any], sample: np.ndarray) -> Any:
    """A trained, empty index that every shard copies.

    A float32 C-contiguous ``sample`` is overwritten (IVF-PQ training turns it into residuals in place);
    pass a copy to keep it.
    """
    import faiss

    index: Any
    if kind == "ivfpq":
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFPQ(quantizer, dim, params["nlist"], params["pq_m"], 8, faiss.METRIC_INNER_PRODUCT)
    elif kind == "hnsw-sq":
        qtype: Any = faiss.ScalarQuantizer.QT_8bit
        index = faiss.IndexHNSWSQ(dim, qtype, params["hnsw_m"], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = params["ef_construction"]
    else:
        return faiss.IndexFlatIP(dim)
    sample = np.ascontiguousarray(sample, dtype=np.float32)
    if kind == "ivfpq":
        _train_ivfpq(index, sample)
    else:
        index.train(sample)
    return index


def build_shard_index(template: Any, vectors: VectorFile, out: Path) -> None:
    """Copy the template, add the shard's vectors in blocks and write ``out``."""
    import faiss

    index = faiss.clone_index(template)
    for start in range(0, vectors.n, _ADD_BLOCK):
        index.add(vectors.block(start, min(vectors.n, start + _ADD_BLOCK)))
    log.debug("writing %s", out, extra={"phase": "write"})
    write_faiss(index, out)


class ShardedANN:
    """The shard indexes of one corpus version, searched as one (positions are corpus-global)."""

    def __init__(self, paths: Sequence[Path], offsets: Sequence[int], kind: str, cfg: KBSettings) -> None:
        import faiss

        self.kind, self.offsets = kind, list(offsets)
        flags = 0
        if cfg.corpus.mmap:
            flags = faiss.IO_FLAG_MMAP if kind == "ivfpq" else faiss.IO_FLAG_MMAP_IFC
        self.shards: list[Any] = [faiss.read_index(str(p), flags) for p in paths]
        self._quantizer: Any = None
        self.nprobe = 0
        if kind == "ivfpq":
            self.nprobe = cfg.corpus.ivf_nprobe
            for index in self.shards:
                index.nprobe = self.nprobe
            self._quantizer = faiss.extract_index_ivf(self.shards[0]).quantizer
        elif kind == "hnsw-sq":
            for index in self.shards:
                index.hnsw.efSearch = cfg.corpus.hnsw_ef_search

    def search(self, query: np.ndarray, n: int) -> list[tuple[int, float]]:
        """Up to ``n`` ``(position, approximate score)`` pairs over all shards, best first."""
        q = np.ascontiguousarray(query.reshape(1, -1), dtype=np.float32)
        found: list[tuple[int, float]] = []
        assign = None
        if self._quantizer is not None:
            coarse_d, coarse_i = self._quantizer.search(q, min(self.nprobe, self._quantizer.ntotal))
            assign = (coarse_i, coarse_d)
        for index, offset in zip(self.shards, self.offsets, strict=True):
            k = min(n, index.ntotal)
            if k == 0:
                continue
            if assign is not None:
                scores, ids = index.search_preassigned(q, k, assign[0], assign[1])
            else:
                scores, ids = index.search(q, k)
            found += [(int(i) + offset, float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]
        found.sort(key=lambda x: -x[1])
        return found[:n]
