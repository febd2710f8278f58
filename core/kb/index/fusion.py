"""Reciprocal rank fusion over ranked id lists (pure; no index, no model)."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["rrf"]


def rrf(rankings: Sequence[Sequence[int]], k: int) -> list[tuple[int, float]]:
    """Fuse rankings (best first) into ``(id, sum of 1/(k + rank))`` pairs, best first.

    Ranks are 1-based (Cormack et al., 2009). Ties are broken by the best rank
    an id reached, then by id, so the result is deterministic.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    scores: dict[int, float] = {}
    best: dict[int, int] = {}
    for ranking in rankings:
        seen: set[int] = set()
        for rank, item in enumerate(ranking, start=1):
            if item in seen:
                continue
            seen.add(item)
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
            best[item] = min(best.get(item, rank), rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))
