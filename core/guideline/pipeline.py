"""Guideline QA end to end: route, constrained retrieval, generation, gates, alignment, patient summary.

    >>> qa = GuidelineQA(load_settings())
    >>> result = qa.answer("What is the adult dose of isoniazid?")
    >>> result.kind, result.route
    ('answer', 'drug')

Every failure mode is a typed :class:`Abstention` with its reason and stage;
nothing here raises for a question it cannot support.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Literal

from core.errors import BackendError, InvalidInputError
from core.guideline.compose import (
    Draft,
    bullet_prompt,
    extractive_bullets,
    parse_bullets,
    patient_prompt,
    plain_language,
    rank_sentences,
)
from core.guideline.constraints import Candidate
from core.guideline.gates import align, check_bullet, entity_guard, evidence_sentences, source_label
from core.guideline.retrieval import constrained_retrieval
from core.guideline.router import drug_synonyms, route_question
from core.guideline.types import Abstention, Bullet, EvidenceChunk, QAAnswer, QAResult, Route, Snippet, Trace
from core.kb.lexicon import DrugLexicon
from core.kb.types import Retriever
from core.llm.base import LLM

if TYPE_CHECKING:
    from core.settings import Settings

__all__ = ["FROM_SETTINGS", "GuidelineQA"]

log = logging.getLogger(__name__)
FROM_SETTINGS: Literal["settings"] = "settings"


class GuidelineQA:
    """Answers TB/CAP questions from the guideline and drug-label KBs, or abstains.

    ``retriever`` and ``lexicon`` default to the KnowledgeBase of ``settings``;
    ``llm`` defaults to ``make_llm(settings)`` (``None``: the extractive composer).
    """

    def __init__(
        self,
        settings: Settings,
        retriever: Retriever | None = None,
        lexicon: DrugLexicon | None = None,
        llm: LLM | Literal["settings"] | None = FROM_SETTINGS,
    ) -> None:
        self.settings = settings
        self.cfg = settings.guideline
        if retriever is None:
            from core.kb.base import KnowledgeBase

            retriever = KnowledgeBase(settings)
        self.retriever = retriever
        if lexicon is None:
            if not hasattr(retriever, "drug_lexicon"):
                raise TypeError("pass a DrugLexicon when the retriever is not a KnowledgeBase")
            lexicon = retriever.drug_lexicon()
        self.lexicon = lexicon
        if self.cfg.mixed_corpora:  # the mixed route also searches these corpora
            from core.kb.corpus import CorpusSearch, WithCorpora

            if not isinstance(retriever, WithCorpora):
                self.retriever = WithCorpora(retriever, CorpusSearch(settings))
        if llm == FROM_SETTINGS:
            from core.llm.factory import make_llm

            llm = make_llm(settings) if self.cfg.writer == "llm" else None
        self.llm: LLM | None = llm if not isinstance(llm, str) else None

    @property
    def backend(self) -> str:
        """``extractive`` or the LLM backend name."""
        return self.llm.backend if self.llm is not None else "extractive"

    def answer(self, question: str, route: Route | None = None) -> QAResult:
        """An answer whose every bullet passed the gates, or an abstention with its reason.

        ``route`` (``guideline``, ``drug`` or ``mixed``) overrides which knowledge bases
        are searched, as the app's selector does; an out-of-domain question still abstains.
        """
        trace = Trace()
        decision = route_question(question, self.lexicon, self.cfg)
        if route is not None and route != decision.route and decision.route != "out_of_domain":
            if route == "out_of_domain":
                raise InvalidInputError("route override must be guideline, drug or mixed")
            decision = decision.model_copy(update={"route": route, "reason": f"chosen by the user ({decision.reason})"})
        trace.add("route", decision=decision.model_dump())
        if decision.route == "out_of_domain":
            return Abstention(question=question, route=decision.route, reason=decision.reason, stage="router",
                              trace=trace)  # fmt: skip
        synonyms = drug_synonyms(self.lexicon, decision.drugs, self.cfg.drug_aliases)
        found = constrained_retrieval(
            question, decision, synonyms, self.retriever, self.cfg, self.settings.kb.rrf_k, trace
        )
        if not found.evidence:
            return Abstention(question=question, route=decision.route, reason=found.reason, stage=found.stage,
                              trace=trace)  # fmt: skip
        drafts = self._draft(question, found.evidence, trace)
        if not drafts:
            return Abstention(question=question, route=decision.route, stage="generation", trace=trace,
                              reason="the evidence yielded no answer sentence")  # fmt: skip
        bullets = self._verify(drafts, found.evidence, trace)
        if not bullets:
            return Abstention(question=question, route=decision.route, stage="verification", trace=trace,
                              reason="every drafted sentence failed the entailment gate")  # fmt: skip
        return QAAnswer(
            question=question,
            route=decision.route,
            bullets=bullets,
            evidence=[_evidence_chunk(c) for c in found.evidence],
            patient_summary=self._patient(bullets, trace),
            backend=self.backend,
            confidence=max(c.confidence for c in found.evidence),
            trace=trace,
        )

    def _draft(self, question: str, evidence: list[Candidate], trace: Trace) -> list[Draft]:
        """Bullets from the LLM, or from the extractive composer (no LLM, an LLM error, or an empty draft)."""
        failure: dict[str, str] = {}
        if self.llm is not None:
            sentences = rank_sentences(question, evidence, self.cfg)[: self.cfg.llm_evidence_sentences]
            if not sentences:
                trace.add("generate", backend=self.backend, raw="", note="no evidence sentence to prompt with")
                return []
            try:
                reply = self.llm.chat(bullet_prompt(question, sentences, self.cfg), max_tokens=self.cfg.llm_max_tokens)
            except BackendError as exc:
                log.warning("guideline QA: LLM failed (%s); using the extractive composer", exc)
                failure = {"fallback_from": self.backend, "error": str(exc)}
            else:
                drafts, unknown = parse_bullets(reply.text, len(sentences))
                drafts = list({d.text.lower(): d for d in drafts}.values())[: self.cfg.max_bullets]  # no repeats
                if drafts or not self.cfg.llm_empty_fallback:
                    trace.add("generate", after=[d.text for d in drafts], backend=self.backend, raw=reply.text,
                              unresolved_citations=unknown)  # fmt: skip
                    return drafts
                failure = {"fallback_from": self.backend, "error": f"no bullet in the reply: {reply.text[:200]!r}"}
        drafts = extractive_bullets(question, evidence, self.cfg)
        trace.add("generate", after=[d.text for d in drafts], backend="extractive",
                  fallback_from=failure.get("fallback_from"), error=failure.get("error"))  # fmt: skip
        return drafts

    def _verify(self, drafts: list[Draft], evidence: list[Candidate], trace: Trace) -> list[Bullet]:
        """Run the entailment gate on every draft and align the survivors to their best snippet."""
        hits = [c.hit for c in evidence]
        sentences = evidence_sentences(hits, self.cfg.stopwords)
        evidence_text = "\n".join(h.text for h in hits)
        kept: list[Bullet] = []
        rejected: list[dict[str, object]] = []
        for draft in drafts:
            verdict = check_bullet(draft.text, evidence_text, sentences, self.cfg)
            if not verdict.ok:
                rejected.append({"text": draft.text, "reason": verdict.reason, "overlap": round(verdict.overlap, 3)})
                continue
            best, score = align(draft.text, sentences, self.cfg.stopwords)
            snippet = Snippet(text=best.text, score=round(score, 4), source=best.source, kb=best.kb,
                              chunk_id=best.chunk_id)  # fmt: skip
            kept.append(Bullet(text=draft.text, evidence=snippet, overlap=round(verdict.overlap, 4)))
        trace.add("entailment_gate", [d.text for d in drafts], [b.text for b in kept], rejected=rejected,
                  tau=self.cfg.tau)  # fmt: skip
        return kept

    def _patient(self, bullets: list[Bullet], trace: Trace) -> str | None:
        """A patient-friendly summary whose sentences introduce no medical entity absent from the bullets."""
        if self.cfg.patient_summary == "off":
            return None
        clinician = [b.text for b in bullets]
        draft = plain_language(clinician, self.cfg)
        source = "glossary"
        if self.llm is not None and self.cfg.patient_summary == "llm":
            try:
                draft = self.llm.chat(patient_prompt(clinician), max_tokens=self.cfg.patient_max_tokens).text.strip()
                source = self.backend
            except BackendError as exc:
                log.warning("guideline QA: patient summary LLM failed (%s); using the glossary", exc)
        kept, dropped = entity_guard(draft, "\n".join(clinician), self.lexicon.names(), self.cfg)
        trace.add("entity_guard", before=[draft], after=kept, source=source,
                  dropped=[{"sentence": s, "new_entities": e} for s, e in dropped])  # fmt: skip
        return " ".join(kept) or None


def _evidence_chunk(cand: Candidate) -> EvidenceChunk:
    hit = cand.hit
    return EvidenceChunk(chunk_id=hit.chunk_id, kb=hit.kb, source=source_label(hit), text=hit.text,
                         drug_names=list(hit.drug_names), section_code=hit.section_code, confidence=round(cand.confidence, 4),
                         boost=cand.boost)  # fmt: skip
