"""The self-reflective RAG pipeline, one method per stage, every result in a :class:`SelfRagTrace`.

query processing -> adaptive retrieval decision -> retrieval -> critic reranking
-> generation -> self-reflection (regenerate until the expected utility reaches
``utility_stop``, keep the best) -> cleaned answer -> option letter.

Backends are passed in (:func:`core.selfrag.factory.build_pipeline` builds them
from settings); every number comes from :class:`SelfRagSettings`.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from core.config.selfrag import RetrievalMode, SelfRagSettings
from core.contracts import Abstention
from core.errors import BackendError, BackendTimeoutError, RateLimitedError
from core.selfrag import prompts, scoring
from core.selfrag.critic import Critic
from core.selfrag.extract import extract_letter
from core.selfrag.generate import Generator
from core.selfrag.retrieval import KBRetriever, QueryProcessor, retrieve_all
from core.selfrag.tokens import clean_answer
from core.selfrag.types import (
    Iteration,
    Passage,
    RetrievalDecision,
    ScoredDocument,
    SelfRagTrace,
)

__all__ = ["STAGES", "SelfRagPipeline"]

log = logging.getLogger(__name__)
STAGES = ("query", "decision", "retrieval", "rerank", "generation", "reflection", "postprocess")


class SelfRagPipeline:
    """Runs one question through every stage; ``retriever=None`` means answers from the model alone."""

    def __init__(
        self,
        settings: SelfRagSettings,
        critic: Critic,
        generator: Generator,
        retriever: KBRetriever | None,
        query_processor: QueryProcessor | None = None,
    ) -> None:
        self.settings = settings
        self.critic = critic
        self.generator = generator
        self.retriever = retriever
        self.query_processor = query_processor or QueryProcessor.from_yaml(settings.augmentations_file)

    def run(
        self, question: str, options: Mapping[str, str] | None = None, mode: RetrievalMode | None = None
    ) -> SelfRagTrace:
        """The whole trace for ``question`` (with ``options``, letter -> text, for multiple choice)."""
        opts = dict(options or {})
        trace = SelfRagTrace(question=question, options=opts, critic=self.critic.name, generator=self.generator.model)
        query = prompts.format_mcq(question, opts, instruction=False)  # what the critic judges
        asked = prompts.format_mcq(question, opts, instruction=True)  # what the generator answers
        with _timed(trace, "query"):
            trace.query = self.query_processor.process(" ".join([question, *opts.values()]))
        try:
            self._answer(trace, query, asked, trace.query.queries, mode or self.settings.mode)
        except BackendTimeoutError as exc:  # a slow machine, not a wrong answer: the harness retries these
            log.warning("self-reflective RAG backend timeout: %s", exc)
            trace.abstention = Abstention(reason="timeout", stage="backend", detail=str(exc))
            return trace
        except (BackendError, RateLimitedError) as exc:  # no answer rather than a guessed one
            log.warning("self-reflective RAG backend failure: %s", exc)
            trace.abstention = Abstention(reason="backend-error", stage="backend", detail=str(exc))
            return trace
        with _timed(trace, "postprocess"):
            self.postprocess(trace)
        return trace

    def _answer(self, trace: SelfRagTrace, query: str, asked: str, queries: list[str], mode: RetrievalMode) -> None:
        """Stages 2-6 (backend errors propagate to :meth:`run`)."""
        with _timed(trace, "decision"):
            trace.decision = self.decide(query, mode)
        if trace.decision.retrieve and self.retriever is not None:
            with _timed(trace, "retrieval"):
                docs = retrieve_all(self.retriever, queries, self.settings.top_k)
            with _timed(trace, "rerank"):
                trace.documents = self.rerank(query, docs, trace.budget_notes)
            trace.retrieval_note = self._evidence_note(trace, len(docs))
        else:
            trace.retrieval_note = f"not retrieved: {trace.decision.reason}"
        evidence = [d.document for d in trace.documents if d.kept]
        self.generate_and_reflect(trace, query, asked, evidence)

    def _evidence_note(self, trace: SelfRagTrace, retrieved: int) -> str:
        floor = self.settings.relevance_floor
        kept = sum(d.kept for d in trace.documents)
        why = trace.decision.reason if trace.decision else ""
        if not retrieved:
            return f"retrieved ({why}), but the retriever found nothing: answered without evidence"
        if not kept:
            return (
                f"retrieved ({why}); none of {len(trace.documents)} judged documents reached relevance "
                f"{floor:g}: answered without evidence"
            )
        return f"retrieved ({why}); {kept} of {len(trace.documents)} judged documents passed relevance {floor:g}"

    def decide(self, query: str, mode: RetrievalMode) -> RetrievalDecision:
        """Stage 2: retrieve or not. Adaptive mode asks the critic; an unscored reading retrieves (the safe path)."""
        threshold = self.settings.retrieval_threshold
        if self.retriever is None:
            return RetrievalDecision(mode, None, threshold, False, "no retriever configured")
        if mode == "no-retrieval":
            return RetrievalDecision(mode, None, threshold, False, "mode no-retrieval")
        if mode == "always":
            return RetrievalDecision(mode, None, threshold, True, "mode always")
        logprobs = self.critic.retrieval(query)
        p = scoring.retrieval_probability(logprobs)
        decision = scoring.should_retrieve(p, threshold)
        if decision is None:
            return RetrievalDecision(
                mode, None, threshold, True, "critic gave no retrieval label: retrieving", logprobs
            )
        reason = f"P(retrieve)={p:.3f} {'>' if decision else '<='} {threshold:g}"
        return RetrievalDecision(mode, p, threshold, decision, reason, logprobs)

    def rerank(self, query: str, documents: list[Passage], notes: list[str] | None = None) -> list[ScoredDocument]:
        """Stage 4: critic scores, best first; the best ``rerank_keep`` at or above ``relevance_floor`` are kept.

        Documents are judged in groups (the native critic's whole batch, else ``concurrency`` at a time);
        once ``budget_rerank_s`` is spent the rest are dropped unjudged and ``notes`` says so.
        """
        s = self.settings
        step = len(documents) if getattr(self.critic, "batched", False) else s.concurrency
        started = time.perf_counter()
        readings = []
        for i in range(0, len(documents), max(step, 1)):
            if i and s.budget_rerank_s and time.perf_counter() - started > s.budget_rerank_s:
                if notes is not None:
                    notes.append(
                        f"rerank budget {s.budget_rerank_s:g} s spent after {i} of {len(documents)} documents; "
                        f"{len(documents) - i} dropped unjudged"
                    )
                break
            readings += self.critic.documents(query, documents[i : i + step])
        scored = []
        for doc, reading in zip(documents, readings, strict=False):
            rel = scoring.relevance(reading.relevance)
            grd = scoring.groundedness(reading.support, s.partial_support_weight)
            use = scoring.utility_score(reading.utility, s.utility_weights)
            scored.append((scoring.critic_score(rel, grd, use, s.w_rel, s.w_sup, s.w_use), doc, rel, grd, use))
        scored.sort(key=lambda row: row[0], reverse=True)  # stable: ties keep retrieval order
        return [
            ScoredDocument(doc, rel, grd, use, score, kept=i < s.rerank_keep and _passes(rel, s.relevance_floor))
            for i, (score, doc, rel, grd, use) in enumerate(scored)
        ]

    def generate_and_reflect(self, trace: SelfRagTrace, query: str, instruction: str, evidence: list[Passage]) -> None:
        """Stages 5-6: generate, score the expected utility, regenerate below ``utility_stop``; keep the best.

        ``instruction`` is what the generator is asked; ``query`` what the critic judges the answer against.
        """
        s = self.settings
        texts = [d.prompt_text(s.judge_max_chars) for d in evidence]
        started_stage = time.perf_counter()
        for number in range(1, s.max_iterations + 1):
            if number > 1 and s.budget_reflection_s and time.perf_counter() - started_stage > s.budget_reflection_s:
                trace.budget_notes.append(
                    f"reflection budget {s.budget_reflection_s:g} s spent after {number - 1} answer(s): "
                    "no further regeneration"
                )
                break
            temperature = s.generation_temperature if number == 1 else s.regenerate_temperature
            asked = instruction
            if number > 1 and s.regenerate_feedback and trace.iterations[-1].expected_utility is not None:
                asked += (
                    f"\n\nA previous answer was rated {trace.iterations[-1].expected_utility:.1f} of 5 for "
                    "usefulness. Give a better answer."
                )
            started = time.perf_counter()
            with _timed(trace, "generation"):
                raw = self.generator.generate(
                    prompts.generation_prompt(asked, texts), s.generation_max_tokens, temperature
                )
            with _timed(trace, "reflection"):
                logprobs = self.critic.utility(query, clean_answer(raw))
            utility = scoring.expected_utility(logprobs)
            trace.iterations.append(
                Iteration(number, raw, utility, logprobs, temperature, time.perf_counter() - started)
            )
            if utility is None or utility >= s.utility_stop:
                break  # good enough, or the critic cannot judge it: regenerating would be blind
        best = max(trace.iterations, key=lambda it: -math.inf if it.expected_utility is None else it.expected_utility)
        trace.best_iteration = best.number
        trace.raw_answer = best.raw_answer

    def postprocess(self, trace: SelfRagTrace) -> None:
        """Remove reflection and end tokens, extract the option letter; unparseable is an abstention."""
        trace.clean_answer = clean_answer(trace.raw_answer)
        if not trace.clean_answer:
            trace.abstention = Abstention(reason="empty-answer", stage="generation", detail="the generator returned no text")
            return
        if trace.options:
            trace.letter = extract_letter(trace.clean_answer, trace.options)
            if trace.letter is None:
                trace.abstention = Abstention(
                    reason="unparseable", stage="extraction", detail="no option letter or option text found in the answer"
                )


def _passes(relevance: float | None, floor: float) -> bool:
    """At or above the relevance floor; an unscored document passes only a floor of 0."""
    if floor <= 0:
        return True
    return relevance is not None and relevance >= floor


@contextmanager
def _timed(trace: SelfRagTrace, stage: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        trace.seconds[stage] = trace.seconds.get(stage, 0.0) + time.perf_counter() - started
