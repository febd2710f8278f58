"""The self-reflective RAG pipeline, one method per stage, every result in a :class:`SelfRagTrace`.

query processing -> adaptive retrieval decision -> retrieval -> critic reranking
-> generation -> self-reflection (regenerate until the expected utility reaches
``utility_stop``; a regenerated answer replaces the current one only when its utility
is higher by ``regenerate_margin``) -> cleaned answer -> option letter.

Stages degrade instead of failing (issue 27). Each stage has a wall-time budget
(:class:`_Stage`); every backend call inside it runs under a
:class:`~core.llm.budget.CancelToken` holding only what the stage has left, so the
backend itself stops there. A stage that runs out keeps what it has: a decision that
times out retrieves (the safe path), reranking keeps the documents judged so far, a
regeneration or a utility reflection that times out keeps the best answer so far. Only
a first generation that times out, with nothing to keep, is an abstention.

Backends are passed in (:func:`core.selfrag.factory.build_pipeline` builds them
from settings); every number comes from :class:`SelfRagSettings`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from core.config.selfrag import RetrievalMode, SelfRagSettings
from core.contracts import Abstention
from core.errors import BackendError, BackendTimeoutError, RateLimitedError
from core.llm.budget import CancelToken
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
            if trace.abstention is not None:  # the first generation timed out: nothing to keep
                return trace
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
            trace.decision = self._decide_in_time(trace, query, mode)
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

    def _decide_in_time(self, trace: SelfRagTrace, query: str, mode: RetrievalMode) -> RetrievalDecision:
        """Stage 2 within ``budget_decision_s``; a decision that times out retrieves (the safe path)."""
        stage = _Stage(self.settings.budget_decision_s)
        try:
            with stage.call():
                return self.decide(query, mode)
        except BackendTimeoutError as exc:
            trace.budget_notes.append(f"decision timed out after {stage.elapsed():.1f} s: retrieving (the safe path)")
            log.info("self-RAG decision timed out (%s): retrieving", exc)
            threshold = self.settings.retrieval_threshold
            return RetrievalDecision(mode, None, threshold, True, "the retrieval decision timed out: retrieving")

    def _evidence_note(self, trace: SelfRagTrace, retrieved: int) -> str:
        floor = _needed(self.settings.relevance_floor, self.settings.relevance_margin)
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
        """Stage 4: critic scores, best first; the best ``rerank_keep`` at or above the relevance floor are kept.

        Documents are judged in groups (the native critic's whole batch, else ``concurrency`` at a time),
        each group's backend calls holding only what is left of ``budget_rerank_s``. Once the budget is
        spent, or a group times out, the documents judged so far are kept; the rest are dropped unjudged
        and ``notes`` says so. A document passes when P[Relevant] >= ``relevance_floor`` + ``relevance_margin``.
        """
        s = self.settings
        step = len(documents) if getattr(self.critic, "batched", False) else s.concurrency
        stage = _Stage(s.budget_rerank_s)
        readings = []
        for i in range(0, len(documents), max(step, 1)):
            why = None
            if i and stage.spent():
                why = f"rerank budget {s.budget_rerank_s:g} s spent"
            else:
                try:
                    with stage.call():
                        readings += self.critic.documents(query, documents[i : i + step])
                except BackendTimeoutError:
                    why = f"rerank timed out ({stage.elapsed():.1f} s of {s.budget_rerank_s:g} s)"
            if why is not None:
                if notes is not None:
                    notes.append(
                        f"{why} after {len(readings)} of {len(documents)} documents; "
                        f"{len(documents) - len(readings)} dropped unjudged"
                    )
                break
        scored = []
        for doc, reading in zip(documents, readings, strict=False):
            rel = scoring.relevance(reading.relevance)
            grd = scoring.groundedness(reading.support, s.partial_support_weight)
            use = scoring.utility_score(reading.utility, s.utility_weights)
            scored.append((scoring.critic_score(rel, grd, use, s.w_rel, s.w_sup, s.w_use), doc, rel, grd, use))
        scored.sort(key=lambda row: row[0], reverse=True)  # stable: ties keep retrieval order
        return [
            ScoredDocument(
                doc,
                rel,
                grd,
                use,
                score,
                kept=i < s.rerank_keep and _passes(rel, s.relevance_floor, s.relevance_margin),
            )
            for i, (score, doc, rel, grd, use) in enumerate(scored)
        ]

    def generate_and_reflect(self, trace: SelfRagTrace, query: str, instruction: str, evidence: list[Passage]) -> None:
        """Stages 5-6: generate, score the expected utility, regenerate below ``utility_stop``; keep the best.

        ``instruction`` is what the generator is asked; ``query`` what the critic judges the answer against.
        Everything runs within ``budget_reflection_s``: a regeneration or a utility reflection that times
        out keeps the best answer so far; a first generation that times out is the trace's abstention.
        """
        s = self.settings
        texts = [d.prompt_text(s.judge_max_chars) for d in evidence]
        stage = _Stage(s.budget_reflection_s)
        for number in range(1, s.max_iterations + 1):
            if number > 1 and stage.spent():
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
            try:
                with _timed(trace, "generation"), stage.call():
                    raw = self.generator.generate(
                        prompts.generation_prompt(asked, texts), s.generation_max_tokens, temperature
                    )
            except BackendTimeoutError as exc:
                if number == 1:  # nothing to keep
                    trace.abstention = Abstention(reason="timeout", stage="generation", detail=str(exc))
                    return
                trace.budget_notes.append(f"regeneration {number} timed out: the best answer so far is kept")
                break
            utility_timed_out = False
            try:
                with _timed(trace, "reflection"), stage.call():
                    logprobs = self.critic.utility(query, clean_answer(raw))
            except BackendTimeoutError:
                logprobs, utility_timed_out = {}, True
                trace.budget_notes.append(f"utility reflection of answer {number} timed out: answer kept unscored")
            utility = scoring.expected_utility(logprobs)
            trace.iterations.append(
                Iteration(number, raw, utility, logprobs, temperature, time.perf_counter() - started)
            )
            if utility_timed_out or utility is None or utility >= s.utility_stop:
                break  # good enough, out of time, or the critic cannot judge it: regenerating would be blind
        best = _best(trace.iterations, s.regenerate_margin)
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


def _needed(floor: float, margin: float) -> float:
    """The P[Relevant] a document needs: the floor plus the margin over chance (0 when the floor is 0)."""
    return 0.0 if floor <= 0 else min(1.0, floor + margin)


def _passes(relevance: float | None, floor: float, margin: float = 0.0) -> bool:
    """At or above floor + margin; an unscored document passes only a floor of 0."""
    if floor <= 0:
        return True
    return relevance is not None and relevance >= _needed(floor, margin)


def _best(iterations: list[Iteration], margin: float) -> Iteration:
    """The first answer, replaced by a later one only when its utility is higher by more than ``margin``."""
    best = iterations[0]
    for it in iterations[1:]:
        if it.expected_utility is None:
            continue
        if best.expected_utility is None or it.expected_utility > best.expected_utility + margin:
            best = it
    return best


class _Stage:
    """One stage's wall-time budget (0: none); each backend call inside holds only what is left."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s if budget_s > 0 else None
        self.started = time.monotonic()

    def elapsed(self) -> float:
        """Seconds since the stage started."""
        return time.monotonic() - self.started

    def left(self) -> float | None:
        """Seconds left (None: no budget)."""
        return None if self.budget_s is None else self.budget_s - self.elapsed()

    def spent(self) -> bool:
        """True once the budget is used up."""
        left = self.left()
        return left is not None and left <= 0

    @contextmanager
    def call(self) -> Iterator[None]:
        """Run one backend call under a token of the time left; raises BackendTimeoutError when none is."""
        left = self.left()
        if left is None:
            yield
            return
        if left <= 0:
            raise BackendTimeoutError(f"the stage budget of {self.budget_s:g} s is spent")
        with CancelToken(left).active():
            yield


@contextmanager
def _timed(trace: SelfRagTrace, stage: str) -> Iterator[None]:
    started = time.perf_counter()
    try:
        yield
    finally:
        trace.seconds[stage] = trace.seconds.get(stage, 0.0) + time.perf_counter() - started
