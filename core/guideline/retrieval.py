"""Structurally constrained retrieval for one routed question, with its trace.

Per knowledge base on the route: search (the question plus the names of the
concepts it abbreviates), section boost on the similarity and fusion, anchor,
diagnosis gate, then the calibrated confidence and the per-KB threshold. Candidates of the KBs that pass
are merged and the best ``evidence_chunks`` become the evidence. On the mixed
route the corpora in ``guideline.mixed_corpora`` are one more KB,
``corpus:A+B`` (see :class:`core.kb.corpus.serve.WithCorpora`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from core.config.guideline import GuidelineQASettings
from core.errors import MissingIndexError
from core.guideline.calibration import confidence, model_confidence, retrieval_features
from core.guideline.compose import asked_populations
from core.guideline.constraints import (
    Candidate,
    boost_and_fuse,
    diagnosis_gate,
    drug_anchor_filter,
    relevance,
    section_markers,
    section_matches,
)
from core.guideline.router import expand_query
from core.guideline.slots import Slot, focus_coverage, states_answer
from core.guideline.sources import by_document
from core.guideline.text import key_tokens
from core.guideline.types import RouteDecision, Trace
from core.kb.protocols import Retriever

__all__ = ["RetrievalOutcome", "constrained_retrieval", "kb_features", "spaces_first"]


@dataclass(frozen=True)
class RetrievalOutcome:
    """The evidence (best first), or why there is none (``stage`` and ``reason``)."""

    evidence: list[Candidate]
    stage: str = ""
    reason: str = ""
    best: float = 0.0  # the best confidence of every survivor, before a named document narrowed them


def _ids(cands: list[Candidate]) -> list[str]:
    return [c.hit.chunk_id for c in cands]


def _one_kb(
    question: str, kb: str, decision: RouteDecision, synonyms: set[str], retriever: Retriever,
    cfg: GuidelineQASettings, rrf_k: int, trace: Trace, terms: tuple[str, ...] = (),
) -> tuple[list[Candidate], str]:  # fmt: skip
    """Surviving candidates of one KB, and the reason when none survive."""
    query = expand_query(question, cfg)
    if terms:  # the documents' spellings of the question's abbreviations and misspellings (core.guideline.terms)
        query = f"{query} ({'; '.join(terms)})"
    try:
        hits = retriever.search(query, kb=kb, top_k=cfg.candidates, mode=cfg.search_mode)
    except MissingIndexError:  # a KB never built (a space-only install, a test): it covers nothing; damage still raises
        trace.add("retrieve", after=[], kb=kb, missing=True)
        return [], f"knowledge base {kb!r} is not built"
    top_bm25 = max((h.score for h in hits), default=0.0)
    cands = [Candidate(h, relevance(h, cfg.search_mode, rrf_k, top_bm25), 0.0) for h in hits]
    trace.add("retrieve", after=_ids(cands), kb=kb, mode=cfg.search_mode, query=query,
              cosine={c.hit.chunk_id: round(c.hit.dense_score or 0.0, 4) for c in cands})  # fmt: skip
    markers = section_markers(query, cfg)
    boosted = boost_and_fuse(cands, markers, cfg.alpha, cfg.search_mode, rrf_k, cfg.fusion.get(kb, "rrf"))
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
    features = kb_features(question, cands, markers, cfg)
    cands = [replace(c, confidence=_confidence(kb, c, features, markers, cfg)) for c in cands]
    threshold = cfg.threshold(kb)
    best = max((c.confidence for c in cands), default=0.0)
    cosine = max((c.hit.dense_score or 0.0 for c in cands), default=0.0)
    passed = best >= threshold
    trace.add("confidence", _ids(cands), _ids(cands) if passed else [], kb=kb, best=round(best, 4),
              best_cosine=round(cosine, 5), threshold=threshold, passed=passed,
              features={k: round(v, 5) for k, v in features.items()})  # fmt: skip
    if not passed:
        return [], f"retrieval confidence {best:.2f} in {kb} below threshold {threshold:.2f}"
    return cands, ""


def kb_features(question: str, cands: list[Candidate], markers: list[str], cfg: GuidelineQASettings) -> dict[str, float]:
    """The confidence model's features over one KB's surviving candidates (see :func:`retrieval_features`)."""
    cosines = [c.hit.dense_score for c in cands if c.hit.dense_score is not None]
    top = cands[: cfg.evidence_chunks]
    matched = bool(markers) and any(section_matches(c.hit, markers) for c in top)
    return retrieval_features(cosines, matched, len(key_tokens(question, cfg.stopwords)))


def _confidence(
    kb: str, cand: Candidate, features: dict[str, float], markers: list[str], cfg: GuidelineQASettings
) -> float:
    """One candidate's calibrated confidence: the KB's fitted model, or the cosine-only curve."""
    coef = cfg.confidence_model(kb)
    if coef is None:
        mid, scale = cfg.calibration(kb)
        return confidence(cand.hit.dense_score, mid, scale)
    own = dict(features, cosine=cand.hit.dense_score or 0.0)
    own["section_match"] = float(bool(markers) and section_matches(cand.hit, markers))
    return model_confidence(own, coef)


def spaces_first(ranked: list[Candidate], spaces: tuple[str, ...], covers: Callable[[Candidate], bool]) -> list[Candidate]:
    """The chunks of the doctor's ``spaces`` before the curated KBs' when one of them ``covers`` the question.

    Order is kept within each group; the curated KBs' chunks stay as further sources. Without this the curated
    demo KBs, written to match short questions, crowd a loaded guideline out of the evidence.
    """
    own = [c for c in ranked if c.hit.kb in spaces]
    if not any(covers(c) for c in own):
        return ranked
    return own + [c for c in ranked if c.hit.kb not in spaces]


def constrained_retrieval(
    question: str, decision: RouteDecision, synonyms: set[str], retriever: Retriever,
    cfg: GuidelineQASettings, rrf_k: int, trace: Trace, focus: frozenset[str] = frozenset(),
    spaces: tuple[str, ...] = (), only_spaces: bool = False, slot: Slot | None = None, terms: tuple[str, ...] = (),
    named: str | None = None,
) -> RetrievalOutcome:  # fmt: skip
    """Run every constraint on every KB of the route and pick the evidence.

    The evidence is the best ``evidence_chunks`` survivors by rank score plus
    ``focus_weight`` times the share of the question's focus words (``focus``,
    see :mod:`core.guideline.slots`) the chunk mentions. For a ``slot`` whose answer is
    a rare kind of sentence (how a disease passes, what a result means) the chunks
    holding one come first. ``terms`` are added to every KB's search query (the documents' spellings of
    the question's abbreviations and misspellings, :attr:`core.guideline.terms.TermReport.query_terms`).
    When the question ``named`` a document (:mod:`core.guideline.naming`) and that document has surviving
    chunks, only they are evidence.
    """
    merged: list[Candidate] = []
    reasons: list[str] = []
    kbs = decision.kbs
    if decision.route == "mixed" and cfg.mixed_corpora:
        kbs = (*kbs, "corpus:" + "+".join(cfg.mixed_corpora))
    # The asking doctor's document spaces (core.kb.spaces.doctor_spaces) are fused like the curated KBs.
    kbs = spaces if only_spaces else (*kbs, *spaces)
    for kb in kbs:
        cands, reason = _one_kb(question, kb, decision, synonyms, retriever, cfg, rrf_k, trace, terms)
        merged += cands
        if reason:
            reasons.append(reason)
    if not merged:
        stage = "confidence" if all("confidence" in r for r in reasons) else "retrieval"
        return RetrievalOutcome([], stage, "; ".join(reasons) or "nothing retrieved")
    groups = asked_populations(question, cfg)

    def order(c: Candidate) -> float:
        heading = " ".join((c.hit.section_title, *c.hit.section_path))
        group = any(g.search(heading) for g in groups)  # a section written for the asked patient group
        return (c.rank_score + cfg.focus_weight * focus_coverage(f"{heading}\n{c.hit.text}", focus, cfg)
                + cfg.population_evidence_weight * group)  # fmt: skip

    merged.sort(key=order, reverse=True)
    best = max(c.confidence for c in merged)
    own = [c for c in merged if c.hit.doc_id == named]
    if own:  # the question names this document ("per the national manual"): it answers, no other
        trace.add("named_document", _ids(merged), _ids(own), doc_id=named)
        merged = own
    merged.sort(key=lambda c: states_answer(c.hit.text, c.hit, slot), reverse=True)  # stable: order kept within
    markers = section_markers(expand_query(question, cfg), cfg)
    on_section = [c for c in merged if section_matches(c.hit, markers)] if markers else []
    if focus and not any(focus_coverage(f"{c.hit.section_title}\n{c.hit.text}", focus, cfg) for c in on_section):
        on_section = []  # the named section never mentions what is asked ("tyramine-rich foods" is no dosing)
    if decision.route == "drug" and on_section:  # the label section the question names answers it, no other
        # label: a guideline in the doctor's spaces keeps its own chunks (its answer is shown apart)
        kept = on_section + [c for c in merged if not c.is_label and c not in on_section]
        trace.add("section_only", _ids(merged), _ids(kept), markers=markers)
        merged = kept
    if spaces and not only_spaces:  # the doctor's documents answer before the curated demo KBs when they cover it
        def covers(c: Candidate) -> bool:
            text = f"{c.hit.section_title}\n{' '.join(c.hit.section_path)}\n{c.hit.text}"
            return c.confidence >= cfg.threshold(c.hit.kb) and (not focus or focus_coverage(text, focus, cfg) > 0)

        first = spaces_first(merged, spaces, covers)
        if first != merged:
            trace.add("spaces_first", _ids(merged), _ids(first), spaces=list(spaces))
            merged = first
    # every document that covers the question keeps its best chunk: its answer is shown on its own
    def mentions(c: Candidate) -> bool:
        return not focus or focus_coverage(f"{c.hit.section_title}\n{' '.join(c.hit.section_path)}\n{c.hit.text}",
                                           focus, cfg) > 0  # fmt: skip

    evidence = by_document(merged, cfg.evidence_chunks, lambda c: c.confidence >= cfg.threshold(c.hit.kb),
                           cfg.max_sources, cfg.evidence_per_source, mentions)  # fmt: skip
    trace.add("evidence", _ids(merged), _ids(evidence), kept=len(evidence))
    return RetrievalOutcome(evidence, best=best)
