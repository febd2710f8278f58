"""Structurally constrained retrieval: section boosting, drug anchor filter, diagnosis evidence gate.

Pure functions over :class:`Candidate` lists (a :class:`~core.kb.Hit` plus its
calibrated confidence and boost). Filters return ``(kept, rejected)`` so the
trace can show both sides.

The section boost is added to the dense *similarity* of a matching chunk before
the dense and BM25 rankings are fused (:func:`boost_and_fuse`), as the seed
design means it: a label's Dosage and Administration chunk at cosine 0.84 beats
its Description at 0.90 for "Bedaquiline dosage".
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from core.config.guideline import GuidelineQASettings
from core.guideline.text import contains_phrase, find_phrases
from core.kb.index.fusion import rrf
from core.kb.specs import LABEL_KB
from core.kb.types import Hit

__all__ = [
    "Candidate",
    "apply_section_boost",
    "boost_and_fuse",
    "diagnosis_gate",
    "drug_anchor_filter",
    "passes_anchor",
    "passes_diagnosis",
    "relevance",
    "section_markers",
    "section_matches",
]



@dataclass(frozen=True)
class Candidate:
    """One retrieved chunk on its way through the filters.

    ``relevance`` (0..1, see :func:`relevance`) orders candidates;
    ``confidence`` (calibrated, 0..1) decides abstention; ``boost`` is the
    section boost. After :func:`boost_and_fuse` the boost is already inside
    ``relevance`` (it was added to the similarity before fusion) and ``fused`` is set.
    """

    hit: Hit
    relevance: float
    confidence: float
    boost: float = 0.0
    fused: bool = False

    @property
    def rank_score(self) -> float:
        """Ranking score: the fused relevance (boost included), or relevance plus the boost."""
        return self.relevance if self.fused else self.relevance + self.boost

    @property
    def similarity(self) -> float:
        """The dense cosine plus the section boost (what the dense ranking orders by)."""
        return (self.hit.dense_score if self.hit.dense_score is not None else -1.0) + self.boost

    @property
    def is_label(self) -> bool:
        """Whether the chunk is a drug-label section (it has label drug names)."""
        return self.hit.kb == LABEL_KB or bool(self.hit.drug_names and self.hit.section_code)


def relevance(hit: Hit, mode: str, rrf_k: int, best_bm25: float) -> float:
    """The search score on a 0..1 scale: RRF over its maximum ``2 / (rrf_k + 1)`` (first in both rankings),
    the cosine itself in dense mode, BM25 over the best BM25 score of the list in bm25 mode."""
    if mode == "hybrid":
        return hit.score / (2.0 / (rrf_k + 1))
    if mode == "dense":
        return hit.score
    return hit.score / best_bm25 if best_bm25 > 0 else 0.0


def section_markers(question: str, cfg: GuidelineQASettings) -> list[str]:
    """The section group (LOINC codes and title words) the question's keywords map to."""
    found = find_phrases(question, cfg.section_groups, prefix=True)
    keys = [k for k in found if not any(k != other and k in other for other in found)]  # most specific wins
    return list(dict.fromkeys(m for k in keys for m in cfg.section_groups[k]))


def section_matches(hit: Hit, markers: list[str]) -> bool:
    """Whether the chunk's LOINC code or heading words belong to the section group ``markers``."""
    heading = " ".join((hit.section_title, *hit.section_path)).lower()
    return any(m == hit.section_code or (not m[0].isdigit() and m in heading) for m in markers)


def apply_section_boost(cands: list[Candidate], markers: list[str], alpha: float) -> list[Candidate]:
    """Add ``alpha`` to chunks from a matching section and re-rank (best first)."""
    boosted = [replace(c, boost=alpha) if markers and section_matches(c.hit, markers) else c for c in cands]
    return sorted(boosted, key=lambda c: c.rank_score, reverse=True)


def boost_and_fuse(
    cands: list[Candidate], markers: list[str], alpha: float, mode: str, rrf_k: int, fusion: str = "rrf"
) -> list[Candidate]:
    """Add ``alpha`` to the similarity of chunks from a matching section, then re-rank (best first).

    Hybrid, ``fusion="rrf"``: the dense ranking is ordered by cosine + boost, the
    BM25 ranking by BM25 / best BM25 + boost, and the two are fused by reciprocal
    rank fusion, relevance = RRF / its maximum. ``fusion="score"``: relevance is the
    mean of the min-max scaled cosine + boost and BM25 / best BM25, so the boost
    keeps its size (RRF turns +0.12 into a rank or two, and the other rankings
    outvote it).
    Dense: relevance = cosine + boost. BM25: relevance = BM25 / best + boost.
    """
    boosted = [replace(c, boost=alpha if markers and section_matches(c.hit, markers) else 0.0) for c in cands]
    if mode == "hybrid" and fusion == "rrf":
        dense = sorted(range(len(boosted)), key=lambda i: boosted[i].similarity, reverse=True)
        best = max((c.hit.bm25_score or 0.0 for c in boosted), default=0.0) or 1.0
        lexical = sorted((i for i, c in enumerate(boosted) if c.hit.bm25_score is not None),
                         key=lambda i: (boosted[i].hit.bm25_score or 0.0) / best + boosted[i].boost,
                         reverse=True)  # fmt: skip
        top = 2.0 / (rrf_k + 1)
        fused = [replace(boosted[i], relevance=score / top, fused=True) for i, score in rrf([dense, lexical], rrf_k)]
    elif mode == "hybrid":  # scores: min-max dense similarity (boost included) and BM25 / best, averaged
        sims = [c.similarity for c in boosted]
        lo, hi = min(sims, default=0.0), max(sims, default=0.0)
        best = max((c.hit.bm25_score or 0.0 for c in boosted), default=0.0) or 1.0
        fused = [replace(c, relevance=0.5 * ((c.similarity - lo) / (hi - lo) if hi > lo else 1.0)
                         + 0.5 * (c.hit.bm25_score or 0.0) / best, fused=True) for c in boosted]  # fmt: skip
    elif mode == "dense":
        fused = [replace(c, relevance=c.similarity, fused=True) for c in boosted]
    else:
        fused = [replace(c, relevance=c.relevance + c.boost, fused=True) for c in boosted]
    return sorted(fused, key=lambda c: c.rank_score, reverse=True)


def passes_anchor(cand: Candidate, synonyms: set[str], label_must_match: bool) -> bool:
    """Whether a chunk is anchored to the target drug (any of ``synonyms``)."""
    hit = cand.hit
    if cand.is_label and label_must_match:
        return bool(synonyms.intersection(n.lower() for n in hit.drug_names))
    haystack = f"{hit.title}\n{hit.text}"
    return any(contains_phrase(haystack, s) for s in synonyms)


def drug_anchor_filter(
    cands: list[Candidate], synonyms: set[str], label_must_match: bool
) -> tuple[list[Candidate], list[Candidate]]:
    """Reject every chunk not anchored to the target drug, whatever its similarity."""
    kept = [c for c in cands if passes_anchor(c, synonyms, label_must_match)]
    return kept, [c for c in cands if c not in kept]


def passes_diagnosis(hit: Hit, keywords: list[str], window: int) -> bool:
    """Whether the chunk's metadata or first ``window`` characters name diagnostic evidence."""
    text = " ".join((hit.title, hit.section_title, *hit.section_path, hit.text[:window]))
    return bool(find_phrases(text, keywords, prefix=True))


def diagnosis_gate(cands: list[Candidate], keywords: list[str], window: int) -> tuple[list[Candidate], list[Candidate]]:
    """Keep only chunks with diagnostic evidence (used for diagnosis intent)."""
    kept = [c for c in cands if passes_diagnosis(c.hit, keywords, window)]
    return kept, [c for c in cands if c not in kept]
