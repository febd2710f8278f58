"""``ask_question``: the contract's askQuestion with instant extractive answers and a guarded LLM.

Flow: validate -> rate limit -> bundle (read-only) -> fixed answer if the bundle
is empty -> extractive answer (instant) -> LLM answer within the time budget,
checked sentence by sentence by :mod:`core.answer.guard` -> store the exchange
and an audit record. Any LLM failure, timeout or rule breach leaves the
extractive answer standing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Literal

from core.answer.compose import compose, confidence_for, out_of_scope_answer
from core.answer.facts import AnswerFacts
from core.answer.guard import GuardReport, enforce
from core.answer.guard_inputs import refusal_lists
from core.answer.kit import AskKit, HasAskKit, kit_of
from core.answer.parts_answer import PREDICTION_CAVEAT, about_future, covered_by_guidelines
from core.answer.prompt import ask_grammar, ask_messages, prompt_hash
from core.answer.reader import Reading
from core.answer.records import ANSWERED, CANCELLED, answer_status, audit, begin_exchange, complete_exchange
from core.cases.bundle import build_context_bundle
from core.contracts import Abstention, AskAnswer, BundleResult, no_comparable_answer
from core.errors import BackendCancelledError, BackendTimeoutError, CasebookError, InvalidInputError, NotFoundError
from core.llm.acceptance import verdict_store
from core.llm.base import LLM
from core.llm.budget import CancelToken, feature_budget
from core.llm.call import chat_call, stream_call
from core.llm.plan import CallPlan, Choice, plan_call
from core.store.models import User

__all__ = [
    "ANSWER_FAILED",
    "CANCELLED_REASON",
    "AskEvent",
    "AskResult",
    "answer_readonly",
    "ask_question",
    "cancel_answer",
    "stream_answer",
]

ANSWER_FAILED = "The answer could not be produced; please ask again."
CANCELLED_REASON = "cancelled before the model finished"

log = logging.getLogger(__name__)
Path_ = Literal["fixed", "extractive", "llm"]


@dataclass(frozen=True)
class AskResult:
    """The final answer, which path produced it, and why any fallback happened.

    A ``fixed`` answer (the contract's fail-closed text) comes with its
    :class:`~core.contracts.Abstention`; ``fallback`` says why the model's answer
    was not used when the extractive one stands.
    """

    answer: AskAnswer
    path: Path_
    fallback: str | None = None
    instant: AskAnswer | None = None
    removed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0
    intent: str | None = None
    facts: AnswerFacts | None = None
    guideline_question: str | None = None
    abstention: Abstention | None = None
    injected: bool = False  # instructions inside the question were refused: the instant answer is final

    @property
    def final(self) -> bool:
        """True when no model is asked: a fixed answer, or a question that carried instructions to the assistant."""
        return self.path == "fixed" or self.injected

    @property
    def reason(self) -> str | None:
        """Why the answer is not the model's: the abstention's reason, else the fallback's (None for a model answer)."""
        return self.abstention.reason if self.abstention is not None else self.fallback

    @property
    def model_used(self) -> bool:
        """True when the answer shown was written by the language model."""
        return self.path == "llm"


@dataclass(frozen=True)
class AskEvent:
    """One step of a streamed answer: ``instant``, ``delta`` (LLM text), ``tick`` (time passes) or ``final``."""

    kind: Literal["instant", "delta", "tick", "final"]
    text: str = ""
    result: AskResult | None = None
    plan: CallPlan | None = None  # on ``instant`` and ``final``: the model call's budget and estimate, or that it waits
    exchange: int | None = None  # on ``instant``: the stored answer row (what :func:`cancel_answer` marks cancelled)
    token: CancelToken | None = None  # on ``instant`` when the model starts: its budget and Cancel


def _validate(rt: AskKit, question: str, doctor_id: int) -> str:
    q = (question or "").strip()
    if not q:
        raise InvalidInputError("The question is empty", hint="Type a question about this scan.")
    if len(q) > rt.settings.ask.max_question_chars:
        raise InvalidInputError(
            f"The question is {len(q)} characters; the limit is {rt.settings.ask.max_question_chars}"
        )
    with rt.db.read_only() as s:
        user = s.get(User, doctor_id)
        if user is None or user.role != "doctor":
            raise NotFoundError(f"No doctor with id {doctor_id}", hint="Ask AI is for signed-in doctors.")
    return q


def _stale_after_s(rt: AskKit) -> float:
    """A pending answer older than this is treated as abandoned (a crashed session), not in flight."""
    return 2 * rt.settings.ask.llm_budget_s + 30


def _prepare(rt: AskKit, scan_id: str, question: str, doctor_id: int) -> tuple[str, BundleResult, AskResult, int]:
    """Validate, count the request, store the question, then compose the instant answer."""
    q = _validate(rt, question, doctor_id)
    a = rt.settings.ask
    # the in-flight check, the rate-limit count and the stored question are one transaction:
    # a refused question (in flight, or over the limit) spends nothing
    pending = begin_exchange(
        rt.db, scan_id, doctor_id, q, stale_after_s=_stale_after_s(rt),
        limit=a.rate_limit_per_minute, window_s=a.rate_window_s,
    )  # fmt: skip
    try:
        return (q, *_instant(rt, scan_id, q), pending)
    except Exception:
        complete_exchange(rt.db, pending, AskAnswer(answer=ANSWER_FAILED, citedCaseIds=[], confidence="low"))
        raise


def _instant(rt: AskKit, scan_id: str, q: str) -> tuple[BundleResult, AskResult]:
    result = build_context_bundle(rt.case_search, scan_id)
    if result.bundle is None:  # fail closed first: nothing about this scan is answered without comparable cases
        reason = result.empty_reason.value if result.empty_reason else "no_bundle"
        return result, AskResult(no_comparable_answer(), "fixed", abstention=Abstention(reason=reason, stage="retrieval"))
    reading: Reading = rt.reader.read(q)
    conditions = rt.settings.guideline.conditions
    if all(u.intent == "treatment" for u in reading.parts):  # out of scope whatever the evidence holds
        in_scope = bool(covered_by_guidelines(q, result.bundle.currentScan.diagnosis, conditions))
        composed_ans = out_of_scope_answer(in_scope, conditions)
        if any(u.intent == "prediction" or about_future(u.text) for u in reading.parts):
            composed_ans = composed_ans.model_copy(update={"answer": f"{composed_ans.answer} {PREDICTION_CAVEAT}"})
        why = "treatment and management are out of scope"
        return result, AskResult(
            composed_ans, "fixed", None, composed_ans, intent="treatment", guideline_question=q if in_scope else None,
            abstention=Abstention(reason=why, stage="router"),
        )  # fmt: skip
    composed = compose(q, result, rt.settings.ask, rt.reader, conditions=conditions, reading=reading)
    carried = q if composed.in_scope else None
    if composed.kind in {"out_of_scope", "refused"}:
        res = AskResult(composed.answer, "fixed", None, composed.answer, intent=composed.intent, guideline_question=carried,
                        abstention=Abstention(reason=composed.reason or "", stage="router"))  # fmt: skip
    elif composed.kind == "insufficient":
        res = AskResult(composed.answer, "fixed", None, composed.answer, intent=composed.intent, facts=composed.facts,
                        guideline_question=carried, abstention=Abstention(reason=composed.reason or "", stage="evidence"))  # fmt: skip
    else:
        res = AskResult(composed.answer, "extractive", None, composed.answer, intent=composed.intent,
                        facts=composed.facts, guideline_question=carried)  # fmt: skip
    return result, replace(res, injected=composed.injected)


def _judged(
    rt: AskKit, result: BundleResult, text: str, instant: AskResult, started: float, llm: LLM | None = None
) -> AskResult:
    """The model's ``text`` through the guard; with ``llm``, its verdict is counted (:mod:`core.llm.acceptance`)."""
    report = enforce(text, result, facts=instant.facts, **refusal_lists(rt))
    if llm is not None:  # passed unchanged: kept whole, with a citation (bench/guard_bench.py counts the same)
        passed = bool(report.kept and report.cited and not report.removed and not report.insufficient)
        verdict_store(rt.settings).record(llm.backend, llm.model, passed)
    return _from_guard(rt, result, report, instant, started)


def _from_guard(
    rt: AskKit, result: BundleResult, report: GuardReport, instant: AskResult, started: float
) -> AskResult:
    elapsed = time.monotonic() - started
    if report.insufficient:
        return replace(
            instant,
            path="extractive",
            fallback="the model found the data insufficient; extractive answer kept",
            removed=report.removed,
            seconds=elapsed,
        )
    if not report.kept or not report.cited:
        return replace(
            instant,
            path="extractive",
            fallback="the model's answer failed the answer rules",
            removed=report.removed,
            seconds=elapsed,
        )
    assert result.bundle is not None
    answer = AskAnswer(
        answer=report.text, citedCaseIds=report.cited, confidence=confidence_for(result.bundle, rt.settings.ask)
    )
    return replace(instant, answer=answer, path="llm", fallback=None, removed=report.removed, seconds=elapsed)


def _finish(
    rt: AskKit,
    scan_id: str,
    doctor_id: int,
    pending: int,
    res: AskResult,
    backend: str | None,
    phash: str | None,
    status: str = ANSWERED,
) -> None:
    if not complete_exchange(rt.db, pending, res.answer, status=status):
        return  # cancelled meanwhile (cancel_answer stored and audited it): a late answer changes nothing
    outcome = res.path if res.reason is None else f"{res.path}:fallback"
    audit(
        rt.db,
        actor_id=doctor_id,
        action="ask",
        scan_ref=scan_id,
        backend=backend,
        prompt_hash=phash,
        outcome=f"{res.path}:cancelled" if status == CANCELLED else outcome,
        detail={
            "removed": len(res.removed),
            "cited": len(res.answer.citedCaseIds),
            "reason": res.reason,
            "intent": res.intent,
        },
    )


def _with_llm(
    rt: AskKit, result: BundleResult, instant: AskResult, q: str, llm: LLM, started: float, *, count: bool = True
) -> AskResult:
    """The guarded LLM answer within the time budget, or the instant answer with the reason it stands.

    ``count``: the guard's verdict is counted for the model (not for read-only evaluation).
    """
    messages = ask_messages(result, q, instant.answer.answer)
    try:  # returns at the budget in wall time; the backend itself stops between two tokens
        token = CancelToken(feature_budget(rt.settings, "ask"), started=started)  # counted from the question
        completion = chat_call(llm, messages, token, grammar=ask_grammar(result))  # citations (llamacpp only)
        return _judged(rt, result, completion.text, instant, started, llm if count else None)
    except BackendTimeoutError:
        return replace(instant, path="extractive", fallback="the model was slower than its time budget")
    except CasebookError as exc:
        log.warning("LLM backend failed: %s", exc)
        return replace(instant, path="extractive", fallback=f"the model failed: {exc}")


def answer_readonly(
    source: AskKit | HasAskKit, scan_id: str, question: str, llm: LLM | None = None
) -> tuple[BundleResult, AskResult]:
    """The answer ``ask_question`` would give, without rate limit, history or audit (for evaluation)."""
    rt = kit_of(source)
    started = time.monotonic()
    result, instant = _instant(rt, scan_id, question.strip())
    if instant.final or llm is None:
        return result, replace(instant, seconds=time.monotonic() - started)
    return result, _with_llm(rt, result, instant, question.strip(), llm, started, count=False)


def ask_question(
    source: AskKit | HasAskKit, scan_id: str, question: str, doctor_id: int, llm: LLM | None = None
) -> AskResult:
    """Answer ``question`` about ``scan_id`` for ``doctor_id`` (the runtime or its kit); see the module docstring."""
    rt = kit_of(source)
    started = time.monotonic()
    q, result, instant, pending = _prepare(rt, scan_id, question, doctor_id)
    if instant.final or llm is None:
        _finish(rt, scan_id, doctor_id, pending, instant, None, None)
        return instant
    try:
        final = _with_llm(rt, result, instant, q, llm, started)
    except Exception:
        _finish(rt, scan_id, doctor_id, pending, instant, llm.backend, None)
        raise
    phash = prompt_hash(ask_messages(result, q, instant.answer.answer))
    _finish(rt, scan_id, doctor_id, pending, final, llm.backend, phash)
    return final


def stream_answer(
    source: AskKit | HasAskKit,
    scan_id: str,
    question: str,
    doctor_id: int,
    llm: LLM | None = None,
    choice: Choice = "auto",
) -> Generator[AskEvent, None, None]:
    """Yield the instant answer (with the model call's plan), then LLM text deltas, then the final guarded answer.

    ``llm`` is the model ``choice`` stands for (:mod:`core.llm.plan`). Under ``auto``, when the
    speed measured here says the local model cannot finish within ``ask.llm_budget_s``, the model
    is not started: the instant answer is final, and the plan (``waits``) lets the page offer
    "run anyway" or the remote backend, each of which asks again with that ``choice``. The same
    happens when the model's answers pass the guard unchanged too rarely (``ask.model_answers``,
    :mod:`core.llm.acceptance`; the plan's ``held_back`` says why). Every model answer the guard
    judges here is counted for its model.

    The question is stored before the first event. If the consumer stops early (the doctor's
    Cancel: the page closes the stream), the question is stored as cancelled with the instant
    answer and the in-flight marker is released at once, so the next question is accepted;
    the backend's stream is closed first (it stops between two tokens). A consumer must close
    the generator when it stops (``contextlib.closing``): a generator left to the garbage
    collector keeps the scan's marker until it is collected.
    """
    rt = kit_of(source)
    started = time.monotonic()
    q, result, instant, pending = _prepare(rt, scan_id, question, doctor_id)
    done = False
    try:
        messages = ask_messages(result, q, instant.answer.answer) if not instant.final else None
        plan = plan_call(rt.settings, "ask", llm, messages, choice)
        token = plan.token(started) if plan.starts and llm is not None and messages is not None else None  # from the question
        yield AskEvent("instant", instant.answer.answer, instant, plan, exchange=pending, token=token)
        if llm is None or messages is None or not plan.starts:
            kept = instant
            if plan.waits:  # nothing left the process: no backend in the audit row
                kept = replace(instant, path="extractive", fallback=f"not started: {plan.why()}")
            _finish(rt, scan_id, doctor_id, pending, kept, None, None)
            done = True
            yield AskEvent("final", result=kept, plan=plan)
            return
        parts: list[str] = []
        final: AskResult | None = None
        assert token is not None
        for event in stream_call(llm, messages, token, grammar=ask_grammar(result)):  # citations (llamacpp only)
            if event.kind == "delta":
                parts.append(event.text)
                yield AskEvent("delta", event.text)
            elif event.kind == "tick":  # the page's clock while the model reads the prompt, and its Cancel
                yield AskEvent("tick")
            elif isinstance(event.error, BackendCancelledError):  # stored as the doctor's Cancel (finally below)
                return
            elif isinstance(event.error, BackendTimeoutError):
                final = replace(instant, path="extractive", fallback="the model was slower than its time budget")
            elif isinstance(event.error, CasebookError):
                final = replace(instant, path="extractive", fallback=f"the model failed: {event.error}")
            elif event.error is not None:
                raise event.error
        if final is None:
            final = _judged(rt, result, "".join(parts), instant, started, llm)
        _finish(rt, scan_id, doctor_id, pending, final, llm.backend, prompt_hash(messages))
        done = True
        yield AskEvent("final", result=final, plan=plan)
    finally:
        if not done:  # closed early or cancelled: the instant answer stands, stored as cancelled
            stopped = instant if instant.final or llm is None else replace(
                instant, path="extractive", fallback=CANCELLED_REASON
            )
            _finish(rt, scan_id, doctor_id, pending, stopped, llm.backend if llm else None, None, CANCELLED)


def cancel_answer(source: AskKit | HasAskKit, scan_id: str, doctor_id: int, instant: AskEvent) -> bool:
    """The doctor's Cancel of the answer that ``instant`` (the stream's first event) began.

    True when the question now stands cancelled (by this call, or by the stream's close that got
    there first); False when its answer had already been stored, which then stands.

    Stops the model (its token: the backend stops between two tokens) and stores the question
    as cancelled with its instant answer, audited once, so the scan is free for the next
    question at once, whatever the stream's consumer is still doing. Streamlit runs the
    Cancel click's rerun beside the run that streams (``runner.fastReruns``): that run only
    stops at its next call into Streamlit, too late for a history read or a new question.
    """
    rt = kit_of(source)
    if instant.token is not None:
        instant.token.cancel()
    if instant.exchange is None or instant.result is None:
        return False
    res = instant.result
    kept = res if res.path == "fixed" else replace(res, path="extractive", fallback=CANCELLED_REASON)
    if not complete_exchange(rt.db, instant.exchange, kept.answer, status=CANCELLED):
        return answer_status(rt.db, instant.exchange) == CANCELLED  # the stopped stream stored (and audited) it
    audit(
        rt.db, actor_id=doctor_id, action="ask", scan_ref=scan_id, backend=None, prompt_hash=None,
        outcome=f"{kept.path}:cancelled", detail={"removed": 0, "cited": len(kept.answer.citedCaseIds),
                                                  "reason": kept.reason, "intent": kept.intent},
    )  # fmt: skip
    return True
