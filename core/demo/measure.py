"""Measure what the look-alikes of the demo cases look like (bench/similarity_bench.py, tests).

Each case in turn is the query; its top ``k`` neighbours are searched as the product
searches (same anatomy; the same region when it holds at least ``k`` other cases,
else the whole anatomy), by exact cosine over the stored embeddings, leaving the
case itself out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
from sqlalchemy import select

from core.store.db import Database
from core.store.models import HistoricalCase

__all__ = ["LookalikeStats", "case_matrix", "lookalike_stats"]


@dataclass(frozen=True)
class LookalikeStats:
    """Share of queries with another diagnosis in the top k, same-diagnosis precision@k, and which diagnoses mix."""

    queries: int
    k: int
    mixed_share: float
    precision: float
    per_diagnosis: dict[str, float] = field(default_factory=dict)
    confusions: list[tuple[str, str, int]] = field(default_factory=list)  # (query diagnosis, neighbour's, count)


def case_matrix(db: Database) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(anatomy, region, diagnosis, unit embeddings) of every historical case, in id order."""
    h = HistoricalCase
    with db.read_only() as s:
        rows = s.execute(select(h.anatomy, h.region, h.diagnosis, h.embedding).order_by(h.id)).all()
    return (np.array([r[0] for r in rows]), np.array([r[1] or "" for r in rows]), np.array([r[2] for r in rows]),
            np.stack([np.asarray(r[3], np.float32) for r in rows]))


def lookalike_stats(anatomy: np.ndarray, region: np.ndarray, diagnosis: np.ndarray, vectors: np.ndarray,
                    queries: np.ndarray | None = None, k: int = 5) -> LookalikeStats:
    """Leave-one-out top-``k`` statistics over ``queries`` (row indices; default every case)."""
    idx = np.arange(len(diagnosis)) if queries is None else queries
    mixed, precision = 0, []
    per: dict[str, list[float]] = {}
    confusions: Counter[tuple[str, str]] = Counter()
    for i in idx:
        pool = anatomy == anatomy[i]
        pool[i] = False
        same_region = pool & (region == region[i])
        if same_region.sum() >= k:
            pool = same_region
        cand = np.flatnonzero(pool)
        top = cand[np.argsort(-(vectors[cand] @ vectors[i]), kind="stable")[:k]]
        hits = diagnosis[top] == diagnosis[i]
        mixed += int(not hits.all())
        precision.append(float(hits.mean()))
        per.setdefault(str(diagnosis[i]), []).append(float(hits.mean()))
        confusions.update((str(diagnosis[i]), str(d)) for d in diagnosis[top][~hits])
    return LookalikeStats(
        len(idx), k, mixed / max(len(idx), 1), float(np.mean(precision)) if precision else 0.0,
        {d: float(np.mean(v)) for d, v in sorted(per.items())},
        [(a, b, n) for (a, b), n in confusions.most_common()],
    )
