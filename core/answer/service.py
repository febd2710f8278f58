"""``ask_question``: the contract's askQuestion with instant extractive answers and a guarded LLM.

Flow: validate -> rate limit -> bundle (read-only) -> fixed answer if the bundle
is empty -> extractive answer (instant) -> LLM answer within the time budget,
checked sentence by sentence by :mod:`core.answer.guard` -> store the exchange
and an audit record. Any LLM failure, timeout or rule breach leaves the
extractive answer standing.
"""

from __future__ import annotations

import concurrent.futures
import logging
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from core.answer.compose import compose, confidence_for
from core.answer.guard import GuardReport, enforce
from core.answer.prompt import ask_messages, prompt_hash
from core.answer.records import audit, check_rate_limit, record_exchange
from core.cases import build_context_bundle
from core.contracts import AskAnswer, BundleResult, no_comparable_answer
from core.errors import CasebookError, InvalidInputError, NotFoundError
from core.llm.base import LLM
from core.runtime import Runtime
from core.store.models import User

__all__ = ["AskEvent", "AskResult", "ask_question", "stream_answer"]

log = logging.getLogger(__name__)
Path_ = Literal["fixed", "extractive", "llm"]


@dataclass(frozen=True)
class AskResult:
    """The final answer, which path produced it, and why any fallback happened."""

    answer: AskAnswer
    path: Path_
    reason: str | None = None
    instant: AskAnswer | None = None
    removed: list[tuple[str, str]] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class AskEvent:
    """One step of a streamed answer: ``instant``, ``delta`` (LLM text) or ``final``."""

    kind: Literal["instant", "delta", "final"]
    text: str = ""
    result: AskResult | None = None


def _validate(rt: Runtime, question: str, doctor_id: int) -> str:
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


def _prepare(rt: Runtime, scan_id: str, question: str, doctor_id: int) -> tuple[str, BundleResult, AskResult | None]:
    q = _validate(rt, question, doctor_id)
    a = rt.settings.ask
    check_rate_limit(rt.db, doctor_id, limit=a.rate_limit_per_minute, window_s=a.rate_window_s)
    result = build_context_bundle(rt, scan_id)
    if result.bundle is None:
        reason = result.empty_reason.value if result.empty_reason else "no_bundle"
        return q, result, AskResult(no_comparable_answer(), "fixed", reason)
    composed = compose(q, result, a)
    if composed.intent is None:
        return (
            q,
            result,
            AskResult(
                composed.answer, "fixed", f"ungrounded terms: {', '.join(composed.ungrounded)}", instant=composed.answer
            ),
        )
    return q, result, AskResult(composed.answer, "extractive", instant=composed.answer)


def _from_guard(
    rt: Runtime, result: BundleResult, report: GuardReport, instant: AskResult, started: float
) -> AskResult:
    elapsed = time.monotonic() - started
    if report.insufficient:
        return AskResult(
            instant.answer,
            "extractive",
            "the model found the data insufficient; extractive answer kept",
            instant.answer,
            report.removed,
            elapsed,
        )
    if not report.kept or not report.cited:
        return AskResult(
            instant.answer,
            "extractive",
            "the model's answer failed the answer rules",
            instant.answer,
            report.removed,
            elapsed,
        )
    assert result.bundle is not None
    answer = AskAnswer(
        answer=report.text, citedCaseIds=report.cited, confidence=confidence_for(result.bundle, rt.settings.ask)
    )
    return AskResult(answer, "llm", None, instant.answer, report.removed, elapsed)


def _finish(
    rt: Runtime, scan_id: str, doctor_id: int, q: str, res: AskResult, backend: str | None, phash: str | None
) -> None:
    record_exchange(rt.db, scan_id, doctor_id, q, res.answer)
    audit(
        rt.db,
        actor_id=doctor_id,
        action="ask",
        scan_ref=scan_id,
        backend=backend,
        prompt_hash=phash,
        outcome=res.path if res.reason is None else f"{res.path}:fallback",
        detail={"removed": len(res.removed), "cited": len(res.answer.citedCaseIds), "reason": res.reason},
    )


def ask_question(rt: Runtime, scan_id: str, question: str, doctor_id: int, llm: LLM | None = None) -> AskResult:
    """Answer ``question`` about ``scan_id`` for ``doctor_id``; see the module docstring."""
    started = time.monotonic()
    q, result, instant = _prepare(rt, scan_id, question, doctor_id)
    assert instant is not None
    if instant.path == "fixed" or llm is None:
        _finish(rt, scan_id, doctor_id, q, instant, None, None)
        return instant
    messages = ask_messages(result, q)
    phash = prompt_hash(messages)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    future = pool.submit(llm.chat, messages)
    try:
        completion = future.result(timeout=rt.settings.ask.llm_budget_s)
        final = _from_guard(rt, result, enforce(completion.text, result), instant, started)
    except concurrent.futures.TimeoutError:
        final = AskResult(instant.answer, "extractive", "the model was slower than its time budget", instant.answer)
    except CasebookError as exc:
        log.warning("LLM backend failed: %s", exc)
        final = AskResult(instant.answer, "extractive", f"the model failed: {exc}", instant.answer)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    _finish(rt, scan_id, doctor_id, q, final, llm.backend, phash)
    return final


def stream_answer(
    rt: Runtime, scan_id: str, question: str, doctor_id: int, llm: LLM | None = None
) -> Iterator[AskEvent]:
    """Yield the instant answer, then LLM text deltas, then the final guarded answer."""
    started = time.monotonic()
    q, result, instant = _prepare(rt, scan_id, question, doctor_id)
    assert instant is not None
    yield AskEvent("instant", instant.answer.answer, instant)
    if instant.path == "fixed" or llm is None:
        _finish(rt, scan_id, doctor_id, q, instant, None, None)
        yield AskEvent("final", result=instant)
        return
    messages = ask_messages(result, q)
    parts: list[str] = []
    final: AskResult | None = None
    try:
        for delta in llm.stream(messages):
            parts.append(delta)
            yield AskEvent("delta", delta)
            if time.monotonic() - started > rt.settings.ask.llm_budget_s:
                final = AskResult(
                    instant.answer, "extractive", "the model was slower than its time budget", instant.answer
                )
                break
    except CasebookError as exc:
        final = AskResult(instant.answer, "extractive", f"the model failed: {exc}", instant.answer)
    if final is None:
        final = _from_guard(rt, result, enforce("".join(parts), result), instant, started)
    _finish(rt, scan_id, doctor_id, q, final, llm.backend, prompt_hash(messages))
    yield AskEvent("final", result=final)
