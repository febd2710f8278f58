"""Cancel leaves a clean chat (issue 27, item 5): a real slow model over loopback HTTP, real SQLite.

Streamlit runs the Cancel click's rerun beside the run that streams (``runner.fastReruns``); the
streaming run stops only at its next Streamlit call. So the Cancel callback calls
:func:`~core.answer.service.cancel_answer` while the stream is still open, and the history and
the next question must be clean at once; the streaming run's stop then closes the stream
(``contextlib.closing`` in the page) and must change nothing. A stream closed without a Cancel
(the doctor clicked elsewhere) is stored as cancelled too. Each time: one row for the question,
cancelled, with its instant answer; the server hung up on.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import closing

import pytest
from sqlalchemy import select

from core.answer.records import (
    PENDING_ANSWER,
    answer_status,
    begin_exchange,
    cancel_exchange,
    complete_exchange,
    history,
    in_flight,
)
from core.answer.service import AskEvent, ask_question, cancel_answer, stream_answer
from core.contracts import AskAnswer
from core.llm.factory import make_llm
from core.runtime import Runtime, open_runtime
from core.store.models import AuditLog, User
from tests.conftest import make_settings, scan_of
from tests.llm_server import FakeLLMServer

QUESTION = "how many of the similar pts died?"


@pytest.fixture()
def rt(fresh: Runtime, llm_server: FakeLLMServer) -> Iterator[Runtime]:
    """The fresh demo store with a loopback model that writes one token every 50 ms (about 15 s in all)."""
    llm_server.reply = "Based on similar cases, " + "several " * 300
    llm_server.token_delay_s = 0.05
    runtime = open_runtime(
        make_settings(fresh.settings.paths.data_dir.parent, llm=llm_server.llm_overrides(timeout_s=60.0))
    )
    yield runtime
    runtime.db.dispose()


def _doctor(rt: Runtime) -> int:
    with rt.db.read_only() as s:
        return int(s.scalars(select(User.id).where(User.username == "dr.chen")).one())


def _audit(rt: Runtime) -> list[str]:
    with rt.db.read_only() as s:
        return list(s.scalars(select(AuditLog.outcome).where(AuditLog.action == "ask").order_by(AuditLog.id)))


def _next_deltas(events: Iterator[AskEvent], n: int) -> list[str]:
    """The kinds of the next ``n`` events that are not clock ticks (a tick comes every 0.5 s, however slow the model)."""
    kinds: list[str] = []
    while len(kinds) < n:
        if (kind := next(events).kind) != "tick":
            kinds.append(kind)
    return kinds


def _hung_up(server: FakeLLMServer) -> bool:
    deadline = time.monotonic() + 10  # the server notices the hang-up when it writes its next token
    while not server.dropped and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.dropped == 1 and server.streamed[-1] < len(server.tokens()) - 100


def _one_cancelled_row(rt: Runtime, scan: str, doctor: int, instant_text: str) -> None:
    rows = history(rt.db, scan, doctor)
    asked = [i for i, m in enumerate(rows) if m["role"] == "user" and m["content"] == QUESTION]
    assert len(asked) == 1, rows  # one row for the question, no duplicate
    answer = rows[asked[0] + 1]
    assert answer["status"] == "cancelled" and answer["cancelled"] and not answer["pending"]
    assert answer["content"] == instant_text and answer["content"] != PENDING_ANSWER  # its instant answer
    assert len(rows) == asked[0] + 2 and sum(m["pending"] for m in rows) == 0


def test_cancel_frees_the_scan_at_once_while_the_stream_is_still_open(rt: Runtime, llm_server: FakeLLMServer) -> None:
    scan, doctor = scan_of(rt, "imran.khan"), _doctor(rt)
    with closing(stream_answer(rt, scan, QUESTION, doctor, make_llm(rt.settings))) as events:
        instant = next(events)
        assert instant.kind == "instant" and instant.plan is not None and instant.plan.starts
        assert instant.exchange is not None and instant.token is not None
        assert in_flight(rt.db, scan, doctor, stale_after_s=600)  # the model is writing: the scan is busy
        assert _next_deltas(events, 3) == ["delta"] * 3

        assert cancel_answer(rt, scan, doctor, instant)  # the Cancel callback, in the rerun beside this run
        assert not in_flight(rt.db, scan, doctor, stale_after_s=600)  # free before the stream is closed
        _one_cancelled_row(rt, scan, doctor, instant.text)
        again = ask_question(rt, scan, "how many of them were admitted?", doctor)  # accepted at once
        assert again.answer.answer
        assert cancel_answer(rt, scan, doctor, instant)  # a second click: still cancelled, nothing written twice
        assert _audit(rt)[-2:] == [
            "extractive:cancelled",
            again.path if again.reason is None else f"{again.path}:fallback",
        ]
    # the streaming run stops at last: its stream closes and nothing changes
    assert [m["status"] for m in history(rt.db, scan, doctor) if m["role"] == "assistant"] == ["cancelled", "answered"]
    assert len(_audit(rt)) == 2
    assert _hung_up(llm_server)


def test_a_stream_closed_mid_answer_is_stored_as_cancelled(rt: Runtime, llm_server: FakeLLMServer) -> None:
    scan, doctor = scan_of(rt, "imran.khan"), _doctor(rt)
    with closing(stream_answer(rt, scan, QUESTION, doctor, make_llm(rt.settings))) as events:
        instant = next(events)
        assert _next_deltas(events, 3) == ["delta"] * 3
        started = time.monotonic()
    # the with block closed the stream, as the page's does when its run is stopped by another click
    assert not in_flight(rt.db, scan, doctor, stale_after_s=600)
    assert time.monotonic() - started < 2.0  # released at once, not at the end of the model's 15 s
    _one_cancelled_row(rt, scan, doctor, instant.text)
    assert _audit(rt) == ["extractive:cancelled"]
    # the Cancel callback arriving after the stopped run closed the stream (the two race): still cancelled, once
    assert cancel_answer(rt, scan, doctor, instant)
    assert _audit(rt) == ["extractive:cancelled"]
    assert _hung_up(llm_server)


def test_a_late_answer_never_replaces_a_cancelled_one(rt: Runtime) -> None:
    scan, doctor = scan_of(rt, "li.wei"), _doctor(rt)
    pending = begin_exchange(rt.db, scan, doctor, "What is the prognosis?", stale_after_s=600)
    instant = AskAnswer(answer="Instant answer.", citedCaseIds=[], confidence="low")
    assert cancel_exchange(rt.db, pending, instant)
    assert not cancel_exchange(rt.db, pending, instant)  # once
    assert answer_status(rt.db, pending) == "cancelled"
    late = AskAnswer(answer="The model's late answer.", citedCaseIds=[], confidence="low")
    assert not complete_exchange(rt.db, pending, late)
    last = history(rt.db, scan, doctor)[-1]
    assert (last["content"], last["status"]) == ("Instant answer.", "cancelled")


def test_cancel_after_the_answer_was_stored_changes_nothing(rt: Runtime, llm_server: FakeLLMServer) -> None:
    llm_server.token_delay_s = 0.0
    scan, doctor = scan_of(rt, "imran.khan"), _doctor(rt)
    with closing(stream_answer(rt, scan, QUESTION, doctor, make_llm(rt.settings))) as events:
        instant = next(events)
        final = list(events)[-1]
    assert final.kind == "final" and final.result is not None
    assert not cancel_answer(rt, scan, doctor, instant)  # a click that came too late: the answer stands
    last = history(rt.db, scan, doctor)[-1]
    assert last["status"] == "answered" and last["content"] == final.result.answer.answer
    assert [o.endswith(":cancelled") for o in _audit(rt)] == [False]
