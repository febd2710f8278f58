"""Structurally constrained retrieval for one routed question, with its trace.

Per knowledge base on the route: search, calibrate, boost, anchor, diagnosis
gate, then the per-KB confidence threshold. Candidates of the KBs that pass
are merged and the best ``evidence_chunks`` become the evidence. On the mixed
route the corpora in ``guideline.mixed_corpora`` are one more KB,
``corpus:A+B`` (see :class:`core.kb.corpus.WithCorpora`).
"""

from __future__ import annotations

from dataclasses import dataclass

from core.guideline.calibration import confidence
from core.guideline.constraints import (
    Candidate,
    apply_section_boost,
    diagnosis_gate,
    drug_anchor_filter,
    relevance,
    section_markers,
)
from core.guideline.settings import GuidelineQASettings
from core.guideline.types import RouteDecision, Trace
from core.kb.types import Retriever

__all__ = ["RetrievalOutcome", "constrained_retrieval"]


@dataclass(frozen=True)
class RetrievalOutcome:
    """The evidence (best first), or why there is none (``stage`` and ``reason``)."""

    evidence: list[Candidate]
    stage: str = ""
    reason: str = ""


def _ids(cands: list[Candidate]) -> list[str]:
    return [c.hit.chunk_id for c in cands]


def _one_kb(
    question: str, kb: str, decision: RouteDecision, synonyms: set[str], retriever: Retriever,
    cfg: GuidelineQASettings, rrf_k: int, trace: Trace,
) -> tuple[list[Candidate], str]:  # fmt: skip
    """Surviving candidates of one KB, and the reason when none survive."""
    hits = retriever.search(question, kb=kb, top_k=cfg.candidates, mode=cfg.search_mode)
    mid, scale = cfg.calibration(kb)
    top_bm25 = max((h.score for h in hits), default=0.0)
    cands = [
        Candidate(h, relevance(h, cfg.search_mode, rrf_k, top_bm25), confidence(h.dense_score, mid, scale))
        for h in hits
    ]
    trace.add("retrieve", after=_ids(cands), kb=kb, mode=cfg.search_mode,
              confidence={c.hit.chunk_id: round(c.confidence, 4) for c in cands})  # fmt: skip
    markers = section_markers(question, cfg)
    boosted = apply_section_boost(cands, markers, cfg.alpha)
    trace.add("section_boost", _ids(cands), _ids(boosted), kb=kb, markers=markers, alpha=cfg.alpha,
              boosted=[c.hit.chunk_id for c in boosted if c.boost])  # fmt: skip
    cands = boosted
    if synonyms:
        kept, rejected = drug_anchor_filter(cands, synonyms, cfg.label_must_match_drug)
        trace.add("drug_anchor", _ids(cands), _ids(kept), kb=kb, synonyms=sorted(synonyms), rejected=_ids(rejected))
        cands = kept
        if not cands:
            return [], f"no {kb} chunk names {', '.join(decision.drugs)}"
    if decision.diagnosis:
        kept, rejected = diagnosis_gate(cands, cfg.diagnosis_keywords, cfg.diagnosis_window_chars)
        trace.add("diagnosis_gate", _ids(cands), _ids(kept), kb=kb, rejected=_ids(rejected))
        cands = kept
        if not cands:
            return [], f"no {kb} chunk carries diagnostic evidence"
    threshold = cfg.threshold(kb)
    best = max((c.confidence for c in cands), default=0.0)
    cosine = max((c.hit.dense_score or 0.0 for c in cands), default=0.0)
    passed = best >= threshold
    trace.add("confidence", _ids(cands), _ids(cands) if passed else [], kb=kb, best=round(best, 4),
              best_cosine=round(cosine, 5), threshold=threshold, passed=passed)  # fmt: skip
    if not passed:
        return [], f"retrieval confidence {best:.2f} in {kb} below threshold {threshold:.2f}"
    return cands, ""


def constrained_retrieval(
    question: str, decision: RouteDecision, synonyms: set[str], retriever: Retriever,
    cfg: GuidelineQASettings, rrf_k: int, trace: Trace,
) -> RetrievalOutcome:  # fmt: skip
    """Run every constraint on every KB of the route and pick the evidence."""
    merged: list[Candidate] = []
    reasons: list[str] = []
    kbs = decision.kbs
    if decision.route == "mixed" and cfg.mixed_corpora:
        kbs = (*kbs, "corpus:" + "+".join(cfg.mixed_corpora))
    for kb in kbs:
        cands, reason = _one_kb(question, kb, decision, synonyms, retriever, cfg, rrf_k, trace)
        merged += cands
        if reason:
            reasons.append(reason)
    if not merged:
        stage = "confidence" if all("confidence" in r for r in reasons) else "retrieval"
        return RetrievalOutcome([], stage, "; ".join(reasons) or "nothing retrieved")
    merged.sort(key=lambda c: c.rank_score, reverse=True)
    evidence = merged[: cfg.evidence_chunks]
    trace.add("evidence", _ids(merged), _ids(evidence), kept=len(evidence))
    return RetrievalOutcome(evidence)
