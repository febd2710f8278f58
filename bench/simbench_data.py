"""The similar-case benchmark's data: clustered or radiomics-shaped vectors, filters, queries and exact truth.

Used by ``similar_cases.py`` and ``similar_cases_pgvector.py``; see their docstrings for what is measured.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from radiomics_shaped import Shaper

DIM = 512
K = 5
SEED = 20261122
CASE_NOISE = 0.55  # as DemoSettings.noise
QUERY_NOISE = 0.3  # a new scan of a stored case: cosine ~0.96 to its source
N_OTHER_ANATOMIES = 20  # 4.5% each, so at 1M no other anatomy reaches hnsw_min_cases (50k)
LUNG_REGIONS = {"left_lung_upper": 0.1, "left_lung_lower": 0.3, "right_lung_upper": 0.3, "right_lung_lower": 0.3}
FILTERS: dict[str, tuple[str | None, str | None]] = {
    "none": (None, None),
    "10%": ("lung", None),
    "1%": ("lung", "left_lung_upper"),
}


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)).astype(np.float32)


# --- data --------------------------------------------------------------------------------------------


@dataclass
class Dataset:
    """Vectors, labels, filter masks, queries and exact ground truth for one size."""

    vectors: np.ndarray
    anatomy: np.ndarray
    region: np.ndarray
    masks: dict[str, np.ndarray | None] = field(default_factory=dict)
    queries: dict[str, np.ndarray] = field(default_factory=dict)
    truth: dict[str, np.ndarray] = field(default_factory=dict)
    kind: str = "clustered"

    @property
    def n(self) -> int:
        """Number of cases."""
        return len(self.vectors)


def _exact_counts(n: int, probs: list[float]) -> np.ndarray:
    counts = np.floor(np.asarray(probs) * n).astype(np.int64)
    counts[-1] += n - counts.sum()
    return counts


def make_dataset(n: int, n_queries: int, seed: int = SEED, bank: np.ndarray | None = None) -> Dataset:
    """Clustered unit vectors with anatomy/region labels; exact 10% and 1% filter groups.

    With ``bank`` (a built index's stored vectors), the vectors are radiomics-shaped instead
    (:mod:`radiomics_shaped`): grown from the bank on its own subspace; the labels and filter
    groups are drawn exactly as for the clustered kind but carry no vector structure.
    """
    rng = np.random.default_rng(seed)
    anatomies = ["lung"] + [f"anatomy{i:02d}" for i in range(N_OTHER_ANATOMIES)]
    diag_per = [40] + [18] * N_OTHER_ANATOMIES  # 400 diagnoses
    anat_dir = _unit(rng.standard_normal((len(anatomies), DIM)))
    centres = np.concatenate(
        [_unit(0.6 * anat_dir[a] + 0.8 * _unit(rng.standard_normal((m, DIM)))) for a, m in enumerate(diag_per)]
    )
    first_diag = np.concatenate([[0], np.cumsum(diag_per)[:-1]])
    a_idx = rng.permutation(np.repeat(np.arange(len(anatomies)), _exact_counts(n, [0.1] + [0.9 / 20] * 20)))
    diag = first_diag[a_idx] + (rng.random(n) * np.asarray(diag_per)[a_idx]).astype(np.int64)
    region = np.empty(n, dtype=object)
    lung = np.flatnonzero(a_idx == 0)
    names = list(LUNG_REGIONS)
    region[lung] = np.asarray(names, dtype=object)[
        rng.permutation(np.repeat(np.arange(len(names)), _exact_counts(len(lung), list(LUNG_REGIONS.values()))))
    ]
    other = np.flatnonzero(a_idx != 0)
    region[other] = np.asarray(["r0", "r1", "r2"], dtype=object)[rng.integers(0, 3, len(other))]
    shaper = None if bank is None else Shaper(bank, rng)
    if shaper is not None:
        vectors = shaper.cases(n)
    else:
        vectors = np.empty((n, DIM), dtype=np.float32)
        for s in range(0, n, 100_000):
            e = min(n, s + 100_000)
            noise = rng.standard_normal((e - s, DIM), dtype=np.float32) * (CASE_NOISE / np.sqrt(DIM))
            vectors[s:e] = _unit(centres[diag[s:e]] + noise)
    kind = "clustered" if shaper is None else f"radiomics-shaped ({shaper.rank}-d)"
    ds = Dataset(vectors, np.asarray(anatomies, dtype=object)[a_idx], region, kind=kind)
    for name, (anat, reg) in FILTERS.items():
        mask = None if anat is None else (ds.anatomy == anat) & (True if reg is None else ds.region == reg)
        ds.masks[name] = None if mask is None else np.asarray(mask, dtype=bool)
        rows = np.arange(n) if mask is None else np.flatnonzero(mask)
        src = vectors[rng.choice(rows, n_queries, replace=len(rows) < n_queries)]  # 1% of 10k is 100 rows
        if shaper is not None:
            ds.queries[name] = shaper.queries(src)
        else:
            noise = rng.standard_normal(src.shape, dtype=np.float32) * (QUERY_NOISE / np.sqrt(DIM))
            ds.queries[name] = _unit(src + noise)
        ds.truth[name] = exact_topk(vectors, rows, ds.queries[name], K)
    return ds


def exact_topk(vectors: np.ndarray, rows: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Exact top-k row ids (cosine) of every query among ``rows``, batched in blocks."""
    best_s = np.full((len(queries), 0), -np.inf, dtype=np.float32)
    best_i = np.zeros((len(queries), 0), dtype=np.int64)
    for s in range(0, len(rows), 50_000):
        block = rows[s : s + 50_000]
        scores = queries @ vectors[block].T
        cand_s = np.concatenate([best_s, scores], axis=1)
        cand_i = np.concatenate([best_i, np.broadcast_to(block, scores.shape)], axis=1)
        top = np.argpartition(-cand_s, min(k, cand_s.shape[1] - 1), axis=1)[:, :k]
        best_s, best_i = np.take_along_axis(cand_s, top, 1), np.take_along_axis(cand_i, top, 1)
    return best_i
