"""Guideline QA end to end: route, constrained retrieval, generation, gates, alignment, patient summary.

    >>> qa = Runtime(load_settings()).guideline_qa   # core.runtime passes the shared parts
    >>> result = qa.answer("What is the adult dose of isoniazid?")
    >>> result.kind, result.route
    ('answer', 'drug')

Every failure mode is a typed :class:`~core.guideline.types.QAAbstention` (the shared
:class:`~core.contracts.Abstention`: reason, stage, detail) with its question, route and trace;
nothing here raises for a question it cannot support.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from core.errors import BackendError, IndexStateError, InvalidInputError
from core.guideline.answer_confidence import answer_features, shown_confidence
from core.guideline.catalog import Catalog, build_catalog
from core.guideline.compose import (
    Draft,
    bullet_prompt,
    extractive_bullets,
    parse_bullets,
    patient_prompt,
    plain_language,
    rank_sentences,
)
from core.guideline.conflicts import conflict_reason, drug_keys, split_conflicts
from core.guideline.constraints import Candidate
from core.guideline.doses import stated_weight
from core.guideline.gates import align, check_bullet, entity_guard, evidence_sentences, source_label
from core.guideline.headings import CarriedHeadings
from core.guideline.naming import identity_words, naming_words
from core.guideline.policy import policy_refusal
from core.guideline.preferences import SourceChoice
from core.guideline.request_guard import RequestGuard
from core.guideline.retrieval import RetrievalOutcome, constrained_retrieval
from core.guideline.router import drug_synonyms, route_question, spelled_out
from core.guideline.slots import LABEL_SLOT_SECTIONS, Slot, focus_coverage, no_answer_reason, question_slot
from core.guideline.sources import disagreements, passage_population, per_source, question_population, source_ref
from core.guideline.statements import Statement, structural_statement, yes_no_statement
from core.guideline.terms import TermReport, Vocabulary, resolve_question, shipped_everyday_words
from core.guideline.text import key_tokens, overlap_ratio
from core.guideline.types import (
    Bullet,
    EvidenceChunk,
    QAAbstention,
    QAAnswer,
    QAResult,
    Route,
    RouteDecision,
    Snippet,
    Trace,
)
from core.kb.lexicon import DrugLexicon
from core.kb.protocols import Retriever, as_sources
from core.kb.specs import LABEL_KB, ROUTED_KBS
from core.llm.base import LLM
from core.llm.budget import CancelToken, feature_budget
from core.llm.call import chat_call

if TYPE_CHECKING:
    from core.settings import Settings

__all__ = ["GuidelineQA"]

log = logging.getLogger(__name__)


class GuidelineQA:
    """Answers TB/CAP questions from the guideline and drug-label KBs, or abstains.

    Every part is passed in (``Runtime.guideline_qa`` passes the shared ones):
    ``retriever`` searches the knowledge bases (with corpora attached for the
    mixed route when ``guideline.mixed_corpora`` names any), ``lexicon`` holds
    the drug-label names, ``llm`` writes the bullets (``None``: the extractive
    composer). ``catalog`` (label sections, demo documents) defaults to one read
    from the retriever's document stores when it has them. ``guard`` reads every
    question by meaning (:mod:`core.guideline.request_guard`; ``None``: the hand
    rules and the label's doses only).
    """

    def __init__(
        self,
        settings: Settings,
        retriever: Retriever,  # a GuidelineSources is read through stored(); any other is SearchOnly
        lexicon: DrugLexicon,
        llm: LLM | None = None,
        catalog: Catalog | None = None,
        guard: RequestGuard | None = None,
    ) -> None:
        self.settings = settings
        self.cfg = settings.guideline
        self.retriever = retriever
        self.sources = as_sources(retriever)  # the stored documents behind a name (the catalogue, words, names)
        self.lexicon = lexicon
        self.llm = llm
        self._catalog = catalog
        self.guard = guard
        self._catalog_key: tuple[int, ...] = ()
        self._space_catalogs: dict[tuple[object, ...], Catalog] = {}
        self._vocabularies: dict[tuple[str, int], Vocabulary] = {}
        self.headings = CarriedHeadings(self.sources)  # a chunk's subsection when its heading ends the chunk before

    @property
    def catalog(self) -> Catalog:
        """Label sections and demo documents, re-read when an index is swapped (empty without stores)."""
        if self._catalog is not None and not self._catalog_key:
            return self._catalog
        kbs = (LABEL_KB, *(kb for kb in ROUTED_KBS if kb != LABEL_KB))
        try:
            key = tuple(id(self.sources.stored(kb)) for kb in kbs)
        except (IndexStateError, InvalidInputError):
            key = (-1,)
        if self._catalog is None or key != self._catalog_key:
            root = self.settings.paths.resolve(self.settings.paths.assets_dir) / self.settings.kb.demo_subdir
            self._catalog = build_catalog(self.sources, kbs, root)
            self._catalog_key = key or (0,)
        return self._catalog

    @property
    def backend(self) -> str:
        """``extractive`` or the LLM backend name."""
        return self.llm.backend if self.llm is not None else "extractive"

    def answer(
        self, question: str, route: Route | None = None, spaces: tuple[str, ...] = (), only_spaces: bool = False,
        choice: SourceChoice | None = None,
    ) -> QAResult:  # fmt: skip
        """An answer whose every bullet passed the gates, or an abstention with its reason.

        ``route`` (``guideline``, ``drug`` or ``mixed``) overrides which knowledge bases
        are searched, as the app's selector does; an out-of-domain question still abstains.
        ``spaces`` are the asking doctor's document spaces (``core.kb.spaces.doctor_spaces``),
        searched beside the curated KBs, or alone with ``only_spaces`` ("search my documents"): then a
        question outside tuberculosis and pneumonia is answered from those documents too (a refused
        request stays refused, and every bullet still passes the same gates). ``choice`` is the doctor's
        choice of sources (:mod:`core.guideline.preferences`): only those documents, or those first.
        """
        trace = Trace()
        lexicon = self.lexicon_for(spaces)
        decision = route_question(question, lexicon, self.cfg)
        if route is not None and route != decision.route and decision.route != "out_of_domain":
            if route == "out_of_domain":
                raise InvalidInputError("route override must be guideline, drug or mixed")
            decision = decision.model_copy(update={"route": route, "reason": f"chosen by the user ({decision.reason})"})
        trace.add("route", decision=decision.model_dump())
        refused = None if decision.refused else policy_refusal(question, self.guard, self.retriever, self.cfg, lexicon)
        if refused is not None:
            trace.add("policy", check=refused.check, **refused.detail)
        if decision.refused or refused is not None:
            return QAAbstention(question=question, route="out_of_domain" if refused else decision.route,
                                reason=refused.reason if refused else decision.reason, stage="policy", trace=trace)  # fmt: skip
        mine = only_spaces and bool(spaces)
        vocab = self.vocabulary_for(spaces, curated=not mine)
        terms = None
        if vocab is not None:
            terms = resolve_question(question, vocab, self.cfg.stopwords, self.cfg.question_filler, shipped_everyday_words(),
                                     self.cfg.coverage_everyday_words, self.cfg.coverage_min_known_words)  # fmt: skip
            naming = naming_words(question, vocab, self.cfg.stopwords, self.cfg.naming_elsewhere_chunks)
            named = next(iter(naming)) if len(naming) == 1 else None
            terms = dataclasses.replace(terms, named=named, naming=frozenset(w for ws in naming.values() for w in ws))
            trace.add("terms", unknown=terms.unknown, everyday=terms.everyday, expansions=terms.expansions,
                      query_terms=terms.query_terms, named_document=named)  # fmt: skip
        if decision.route == "out_of_domain" and mine:  # the doctor chose their own documents: no TB/CAP scope
            decision = decision.model_copy(update={"route": "guideline", "reason": "search my documents only"})
            trace.add("route", decision=decision.model_dump(), note="scope: my documents")
        covered = None
        if decision.route == "out_of_domain":  # scope by coverage: a loaded document may cover it, whatever its words
            covered = self._coverage(question, decision, trace, spaces, mine, question_slot(question, self.cfg, set()),
                                     terms)  # fmt: skip
            outside = QAAbstention(question=question, route=decision.route, reason=decision.reason, stage="router",
                                   trace=trace)  # fmt: skip
            if covered is None:
                return outside
            decision = decision.model_copy(update={"route": "guideline", "reason": "covered by a loaded document"})
            found = self._answer_found(question, decision, trace, lexicon, covered, spaces, mine, choice, terms)
            if isinstance(found, QAAbstention):  # close to a document, but nothing in it answers: still out of domain
                return outside.model_copy(update={"reason": f"{outside.reason}; no loaded document answers it"})
            return found
        return self._answer_found(question, decision, trace, lexicon, None, spaces, mine, choice, terms)

    def _answer_found(
        self, question: str, decision: RouteDecision, trace: Trace, lexicon: DrugLexicon,
        covered: RetrievalOutcome | None, spaces: tuple[str, ...], mine: bool, choice: SourceChoice | None,
        terms: TermReport | None = None,
    ) -> QAResult:  # fmt: skip
        """The answer on the routed (or covering) knowledge bases, or an abstention.

        The question is read with its misspellings in the documents' spelling (``asked``,
        :meth:`core.guideline.terms.TermReport.rewrite`); answers keep the doctor's words.
        """
        asked = terms.rewrite(question) if terms is not None else question
        asked = spelled_out(asked, decision.drugs, self.cfg.drug_aliases)  # "PZA" is read as "pyrazinamide"
        if asked != question:
            trace.add("read_as", question=asked)
        synonyms = drug_synonyms(lexicon, decision.drugs, self.cfg.drug_aliases)
        slot = question_slot(asked, self.cfg, synonyms)
        trace.add("slot", slot=slot.name, yes_no=slot.yes_no, focus=sorted(slot.focus))
        structural = self._structural(decision, slot, trace, lexicon, self.catalog_for(spaces, curated=not mine))
        if structural is not None:
            return self._statement_answer(question, decision, slot, structural, trace)
        found = covered or constrained_retrieval(
            asked, decision, synonyms, self.retriever, self.cfg, self.settings.kb.rrf_k, trace, slot.focus,
            spaces, mine, slot, tuple(terms.query_terms) if terms else (), terms.named if terms else None,
        )  # fmt: skip
        if choice is not None and found.evidence:
            chosen = sorted((c for c in found.evidence if choice.allows(c.hit.doc_id)),
                            key=lambda c: choice.rank(c.hit.doc_id))  # fmt: skip
            trace.add("sources", _chunk_ids(found.evidence), _chunk_ids(chosen), chosen=list(choice.doc_ids),
                      only=choice.only)  # fmt: skip
            found = RetrievalOutcome(chosen, "retrieval", "none of the chosen sources covers the question")
        if not found.evidence:
            return QAAbstention(question=question, route=decision.route, reason=found.reason, stage=found.stage,
                              trace=trace)  # fmt: skip
        token = CancelToken(feature_budget(self.settings, "guideline"))  # one budget for the bullets and the summary
        drafts = self._draft(asked, found.evidence, slot, trace, lexicon.names(), token)
        if not drafts:
            return QAAbstention(question=question, route=decision.route, stage="generation", trace=trace,
                              reason=no_answer_reason(slot))  # fmt: skip
        group = question_population(asked, self.cfg)
        bullets = self._verify(drafts, found.evidence, trace, group)
        keys = drug_keys(lexicon, self.cfg.drug_aliases)  # every spelling of a labelled drug -> one name, once
        bullets, conflicts = split_conflicts(bullets, self.retriever, lexicon, self.cfg, keys)  # a label is never overridden
        if conflicts:
            trace.add("conflicts", after=[c.chunk_id for c in conflicts], doses=[c.stated for c in conflicts])
        if not bullets:
            reason = conflict_reason(conflicts[0]) if conflicts else "every drafted sentence failed the entailment gate"
            return QAAbstention(question=question, route=decision.route, stage="verification", trace=trace,
                              reason=reason)  # fmt: skip
        own = [b for b in bullets if not b.other_population]  # the patient summary speaks of the asked group only
        shown = self._shown_confidence(asked, found.evidence, bullets, slot, trace)
        best = next((c.hit for c in found.evidence if c.hit.chunk_id == bullets[0].evidence.chunk_id), None)
        said = yes_no_statement(asked, slot, bullets[0].text, best.section_code if best else None, self.cfg)
        return QAAnswer(
            question=question,
            route=decision.route,
            statement=said.text if said else None,
            finding=said.finding if said else None,
            slot=slot.name,
            bullets=bullets,
            # a conflicting upload is shown once, as the conflict, never again as evidence beside the answer
            # (unless another sentence of its chunk is a kept bullet, which must cite evidence shown)
            evidence=[self._evidence_chunk(c) for c in found.evidence if c.hit.chunk_id not in
                      {k.chunk_id for k in conflicts} - {b.evidence.chunk_id for b in bullets}],
            patient_summary=self._patient(own or bullets, trace, lexicon.names(), token),
            conflicts=conflicts,
            disagreements=disagreements(bullets, slot.name, keys, self.cfg, stated_weight(asked), slot.terms),
            population=group,
            backend=trace.writer(),
            confidence=shown,
            trace=trace,
        )

    def _shown_confidence(
        self, asked: str, evidence: list[Candidate], bullets: list[Bullet], slot: Slot, trace: Trace
    ) -> float:
        """The answer's shown confidence: the fitted P(correct) map (:mod:`core.guideline.answer_confidence`,
        ``guideline.answer_calib``) for an answer that quotes a doctor's document, else the retrieval confidence.

        The map was fitted on answers over the doctor's documents only; an answer whose every bullet quotes a
        curated knowledge base keeps the retrieval confidence it showed before the map, whether or not the
        doctor has spaces (the map read a correct curated label answer as 11% right)."""
        retrieval = max(c.confidence for c in evidence)
        said = "\n".join(b.text for b in bullets)
        focus = focus_coverage(said, slot.focus, self.cfg) if slot.focus else 1.0
        where = " ".join(b.evidence.ref.section for b in bullets if b.evidence.ref)
        overlap = overlap_ratio(key_tokens(asked, self.cfg.stopwords), key_tokens(f"{said}\n{where}", self.cfg.stopwords))
        features = answer_features(evidence, bullets, focus, overlap)
        coef = self.cfg.answer_calib if features["space"] > 0 else {}
        shown = shown_confidence(features, coef) if coef else retrieval
        trace.add("answer_confidence", retrieval=round(retrieval, 4), shown=round(shown, 4), mapped=bool(coef),
                  features={k: round(v, 5) for k, v in features.items()})  # fmt: skip
        return shown

    def _coverage(
        self, question: str, decision: RouteDecision, trace: Trace, spaces: tuple[str, ...], mine: bool, slot: Slot,
        terms: TermReport | None,
    ) -> RetrievalOutcome | None:
        """Evidence from the guidelines and ``spaces`` when a loaded document covers the question, else ``None``.

        Covered: every topic word of the question is a word of the loaded documents (as written, as an
        abbreviation they define, misspelt or contracted: :mod:`core.guideline.terms`), the best evidence's
        confidence reaches ``coverage_floor``, and the evidence mentions every focus word (or the documents'
        spelling of it); a retriever without stores to read words from (``terms`` is ``None``) needs every focus
        word mentioned, and with the words vouched for ``coverage_focus_share`` of them is enough.
        """
        if terms is not None and not terms.covered:
            trace.add("coverage", after=[], unknown=terms.unknown, covered=False)
            return None
        probe = decision.model_copy(update={"route": "guideline"})
        extra = tuple(terms.query_terms) if terms else ()
        found = constrained_retrieval(question, probe, set(), self.retriever, self.cfg, self.settings.kb.rrf_k, trace,
                                      slot.focus, spaces, mine, slot, extra, terms.named if terms else None)  # fmt: skip
        # a document named in the question answers; whether the loaded documents cover it is read over all of them
        best = max(found.best, max((c.confidence for c in found.evidence), default=0.0))
        # covering means mentioning what is asked: the focus words somewhere in the evidence (or its headings)
        text = "\n".join(f"{c.hit.title}\n{' '.join(c.hit.section_path)}\n{c.hit.text}" for c in found.evidence)
        if terms is not None:  # a word the documents spell another way counts when they mention that spelling,
            # and a word that names a document ("per the intl guideline") asks for no topic
            text += "\n" + " ".join(w for w, full in terms.expansions.items() if focus_coverage(text, _prefixes(full), self.cfg))
            text += "\n" + " ".join(terms.naming)
        mentioned = focus_coverage(text, slot.focus, self.cfg) if slot.focus else 1.0
        share = self.cfg.coverage_focus_share if terms is not None else 1.0
        covered = bool(found.evidence) and best >= self.cfg.coverage_floor and mentioned >= share
        trace.add("coverage", after=[c.hit.chunk_id for c in found.evidence], best=round(best, 4),
                  floor=self.cfg.coverage_floor, focus_mentioned=round(mentioned, 3), focus_share=share,
                  covered=covered)  # fmt: skip
        return found if covered else None

    def vocabulary_for(self, spaces: tuple[str, ...], curated: bool = True) -> Vocabulary | None:
        """The words of the curated KBs (unless not ``curated``) and of ``spaces``, read once per index version.

        ``None`` when the retriever has no stores to read (an in-memory retriever) or none is built.
        """
        parts = []
        for kb in (*(ROUTED_KBS if curated else ()), *spaces):
            try:
                store = self.sources.stored(kb)
            except (IndexStateError, InvalidInputError):
                continue  # a KB never built knows no word
            if store is None:
                continue  # searched, never read (a corpus, fixed passages)
            key = (kb, id(store))
            if key not in self._vocabularies:
                if len(self._vocabularies) > 32:
                    self._vocabularies.clear()
                vocab = Vocabulary(prefix=self.cfg.focus_prefix)
                for _, c in store.iter_chunks():
                    vocab.add(f"{c.title}\n{c.organisation or ''}\n{' '.join(c.section_path)}\n{c.text}", c.doc_id)
                    if c.doc_id not in vocab.identities:
                        vocab.identities[c.doc_id] = identity_words(c.title, c.organisation, c.source, self.cfg.stopwords)
                self._vocabularies[key] = vocab.ready()
            parts.append(self._vocabularies[key])
        return Vocabulary.merge(parts) if parts else None

    def lexicon_for(self, spaces: tuple[str, ...]) -> DrugLexicon:
        """The curated labels' drug names plus those of the labels in ``spaces`` (a doctor's uploaded labels)."""
        if not spaces:
            return self.lexicon
        rows = [(e.name, kind, doc) for e in self.lexicon.entries.values() for kind in e.kinds for doc in e.doc_ids]
        for kb in spaces:
            try:
                store = self.sources.stored(kb)
            except (IndexStateError, InvalidInputError):
                continue  # an empty or missing space names no drug
            rows += store.names() if store is not None else []
        return DrugLexicon.from_rows(rows)

    def catalog_for(self, spaces: tuple[str, ...], curated: bool = True) -> Catalog:
        """The label catalogue of the curated KBs (unless not ``curated``) and of the labels in ``spaces``."""
        if not spaces:
            return self.catalog
        key: tuple[object, ...] = (spaces, curated)
        try:
            key += tuple(id(self.sources.stored(kb)) for kb in spaces)
        except (IndexStateError, InvalidInputError):
            key += (-1,)
        cached = self._space_catalogs.get(key)
        if cached is not None:
            return cached
        root = self.settings.paths.resolve(self.settings.paths.assets_dir) / self.settings.kb.demo_subdir
        found = build_catalog(self.sources, spaces, root)
        if curated:
            base = self.catalog
            found = Catalog({**base.sections, **found.sections}, {**base.titles, **found.titles},
                            base.demo_docs | found.demo_docs)  # fmt: skip
        if len(self._space_catalogs) > 16:
            self._space_catalogs.clear()
        self._space_catalogs[key] = found
        return found

    def _structural(
        self, decision: RouteDecision, slot: Slot, trace: Trace, lexicon: DrugLexicon, catalog: Catalog
    ) -> Statement | None:
        """A structural fact from the label catalogue for a one-drug, one-section question (or ``None``)."""
        if decision.route != "drug" or len(decision.drugs) != 1 or slot.name not in LABEL_SLOT_SECTIONS:
            return None
        entry = lexicon.lookup(decision.drugs[0])
        docs = [d for d in entry.doc_ids if d in catalog.sections or d in catalog.titles] if entry else []
        found = structural_statement(slot, docs, catalog, self.cfg)
        trace.add("structure", after=[found.text] if found else [], labels=docs, slot=slot.name,
                  finding=found.finding if found else None)  # fmt: skip
        return found

    def _statement_answer(
        self, question: str, decision: RouteDecision, slot: Slot, said: Statement, trace: Trace
    ) -> QAAnswer:
        """The answer for a structural fact: the statement, and the "None" section as its evidence when there is one."""
        evidence = []
        if said.hit is not None:
            cand = Candidate(said.hit, relevance=1.0, confidence=1.0)
            evidence = [self._evidence_chunk(cand)]
        return QAAnswer(question=question, route=decision.route, statement=said.text, finding=said.finding,
                        slot=slot.name, bullets=[], evidence=evidence, patient_summary=None, backend="structure",
                        confidence=1.0, trace=trace)  # fmt: skip

    def _draft(
        self, question: str, evidence: list[Candidate], slot: Slot, trace: Trace, names: list[str], token: CancelToken
    ) -> list[Draft]:
        """Bullets from the LLM, or from the extractive composer (no LLM, an LLM error, or an empty draft)."""
        failure: dict[str, str] = {}
        if self.llm is not None:
            sentences = rank_sentences(question, evidence, self.cfg, slot, names)[: self.cfg.llm_evidence_sentences]
            if not sentences:
                trace.add("generate", backend=self.backend, raw="", note="no evidence sentence to prompt with")
                return []
            try:  # chat_call returns at the token's budget in wall time
                prompt = bullet_prompt(question, sentences, self.cfg)
                reply = chat_call(self.llm, prompt, token, max_tokens=self.cfg.llm_max_tokens)
            except BackendError as exc:
                log.warning("guideline QA: LLM failed (%s); using the extractive composer", exc)
                failure = {"fallback_from": self.backend, "error": str(exc), "error_kind": type(exc).__name__}
            else:
                drafts, unknown = parse_bullets(reply.text, len(sentences))
                drafts = list({d.text.lower(): d for d in drafts}.values())[: self.cfg.max_bullets]  # no repeats
                if drafts or not self.cfg.llm_empty_fallback:
                    trace.add("generate", after=[d.text for d in drafts], backend=self.backend, raw=reply.text,
                              unresolved_citations=unknown)  # fmt: skip
                    return drafts
                failure = {"fallback_from": self.backend, "error": f"no bullet in the reply: {reply.text[:200]!r}"}
        groups = per_source(evidence)
        if len(groups) > 1:  # one answer per source: each document's bullets drafted from its own evidence
            # the best document answers as it would alone; every other one adds at most bullets_per_source
            each = self.cfg.model_copy(update={"max_bullets": self.cfg.bullets_per_source})
            drafts = [Draft(d.text, d.cites, g[0].hit.doc_id) for i, g in enumerate(groups)
                      for d in extractive_bullets(question, g, self.cfg if i == 0 else each, slot, names)]  # fmt: skip
        else:
            drafts = extractive_bullets(question, evidence, self.cfg, slot, names)
        trace.add("generate", after=[d.text for d in drafts], backend="extractive",
                  fallback_from=failure.get("fallback_from"), error=failure.get("error"),
                  error_kind=failure.get("error_kind"))  # fmt: skip
        return drafts

    def _verify(self, drafts: list[Draft], evidence: list[Candidate], trace: Trace, group: str = "adults") -> list[Bullet]:
        """Run the entailment gate on every draft and align the survivors to their best snippet.

        A draft from one document is aligned within that document (the same sentence may stand in two guidelines).
        Each bullet names its source and its patient group; bullets for another group than ``group`` come last,
        marked as such.
        """
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
            own = {c.hit.chunk_id for c in evidence if c.hit.doc_id == draft.doc_id}
            best, score = align(draft.text, [s for s in sentences if s.chunk_id in own] or sentences, self.cfg.stopwords)
            hit = next(c.hit for c in evidence if c.hit.chunk_id == best.chunk_id)
            snippet = Snippet(text=best.text, score=round(score, 4), source=best.source, kb=best.kb,
                              chunk_id=best.chunk_id, demo=hit.doc_id in self.catalog.demo_docs,
                              ref=source_ref(hit, best.text, self.headings.of(hit)))  # fmt: skip
            pop = passage_population(hit, draft.text, self.cfg)
            kept.append(Bullet(text=draft.text, evidence=snippet, overlap=round(verdict.overlap, 4), population=pop,
                               other_population=pop is not None and pop != group))  # fmt: skip
        kept.sort(key=lambda b: b.other_population)  # stable: the asked group's bullets first, in their order
        trace.add("entailment_gate", [d.text for d in drafts], [b.text for b in kept], rejected=rejected,
                  tau=self.cfg.tau)  # fmt: skip
        return kept

    def _evidence_chunk(self, cand: Candidate) -> EvidenceChunk:
        hit = cand.hit
        return EvidenceChunk(chunk_id=hit.chunk_id, kb=hit.kb, source=source_label(hit), text=hit.text,
                             drug_names=list(hit.drug_names), section_code=hit.section_code,
                             section_path=list(hit.section_path), confidence=round(cand.confidence, 4), boost=cand.boost,
                             demo=hit.doc_id in self.catalog.demo_docs)  # fmt: skip

    def _patient(self, bullets: list[Bullet], trace: Trace, names: list[str], token: CancelToken) -> str | None:
        """A patient-friendly summary whose sentences introduce no medical entity absent from the bullets.

        The model writes it only when it wrote the bullets, within what is left of ``token``'s budget."""
        if self.cfg.patient_summary == "off":
            return None
        clinician = [b.text for b in bullets]
        draft = plain_language(clinician, self.cfg)
        source = "glossary"
        if self.llm is not None and self.cfg.patient_summary == "llm" and trace.writer() == self.backend:
            try:
                reply = chat_call(self.llm, patient_prompt(clinician), token, max_tokens=self.cfg.patient_max_tokens)
                draft = reply.text.strip()
                source = self.backend
            except BackendError as exc:
                log.warning("guideline QA: patient summary LLM failed (%s); using the glossary", exc)
        kept, dropped = entity_guard(draft, "\n".join(clinician), names, self.cfg)
        trace.add("entity_guard", before=[draft], after=kept, source=source,
                  dropped=[{"sentence": s, "new_entities": e} for s, e in dropped])  # fmt: skip
        return " ".join(kept) or None


def _prefixes(text: str) -> frozenset[str]:
    """The words of ``text`` as a focus (first letters), to ask whether evidence mentions a resolved spelling."""
    return frozenset(w[:5] for w in text.lower().split() if len(w) > 2)


def _chunk_ids(cands: list[Candidate]) -> list[str]:
    return [c.hit.chunk_id for c in cands]
