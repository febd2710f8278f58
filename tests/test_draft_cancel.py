"""Report drafts written live by a real backend (the OpenAI-compatible one over a loopback server).

Checked sections arrive before the end, a clock ticks while the model is slow, and Cancel
(the token, or a page rerun closing the stream) stops the model mid-way, hangs up on the
server and saves nothing; the audit row says the call was cancelled.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from core.llm.budget import CancelToken, SpeedMeter
from core.llm.factory import make_llm
from core.llm.plan import plan_call
from core.reports.writer import DraftEvent, plan_draft, stream_draft
from core.runtime import Runtime, open_runtime
from core.store.models import AuditLog, Report, ReportDraft
from tests.conftest import make_settings, scan_of
from tests.llm_server import FakeLLMServer

CHECKED = "IMPRESSION: COPD with emphysema.\nRECOMMENDATIONS: Follow-up imaging as clinically indicated.\n"
TAIL = "FINDINGS: " + "unchanged " * 200  # the model's FINDINGS are never used: a long, slow tail


@pytest.fixture()
def rt(fresh: Runtime, llm_server: FakeLLMServer) -> Iterator[Runtime]:
    """The fresh demo store with the loopback server as its language model (a generous 30 s budget)."""
    llm_server.reply = CHECKED + TAIL
    overrides = llm_server.llm_overrides("openai", timeout_s=30.0)
    yield open_runtime(make_settings(fresh.settings.paths.data_dir.parent, llm=overrides))


def _rows(rt: Runtime) -> tuple[int, int, list[str]]:
    with rt.db.read_only() as s:
        drafts = int(s.scalar(select(func.count()).select_from(ReportDraft)) or 0)
        reports = int(s.scalar(select(func.count()).select_from(Report)) or 0)
        outcomes = list(s.scalars(select(AuditLog.outcome).where(AuditLog.action == "draft").order_by(AuditLog.id)))
    return drafts, reports, outcomes


def test_checked_sections_arrive_before_the_end(rt: Runtime, llm_server: FakeLLMServer) -> None:
    llm_server.reply = CHECKED + "FINDINGS: unchanged."
    llm_server.token_delay_s = 0.02
    events = list(stream_draft(rt, plan_draft(rt, scan_of(rt, "rahul.mehta")), make_llm(rt.settings),
                               CancelToken(30), tick_s=0.05))  # fmt: skip
    kinds = [e.kind for e in events]
    assert "tick" in kinds and kinds[-1] == "final"  # ticks while tokens come faster than ticks and kinds.count("final") == 1
    checked = [e.sections for e in events if e.kind == "section"]  # each shown once the next header closes it
    assert checked == [{"impression": "COPD with emphysema."},
                       {"impression": "COPD with emphysema.",
                        "recommendations": "Follow-up imaging as clinically indicated."}]  # fmt: skip
    final = events[-1].draft
    assert final is not None and final.author == "model" and final.impression == "COPD with emphysema."
    assert _rows(rt)[2] == ["llm"]


def test_cancel_stops_the_model_and_saves_nothing(rt: Runtime, llm_server: FakeLLMServer) -> None:
    llm_server.token_delay_s = 0.05  # 200-odd tokens: about 11 s if nothing stops it
    before = _rows(rt)
    token = CancelToken(30)
    events: list[DraftEvent] = []
    for event in stream_draft(rt, plan_draft(rt, scan_of(rt, "rahul.mehta")), make_llm(rt.settings), token,
                              tick_s=0.02):  # fmt: skip
        events.append(event)
        if event.kind == "section":
            token.cancel()  # the Cancel button, once the checked sections are on screen
    final = events[-1].draft
    assert final is not None and final.author == "template" and final.reason == "the model was cancelled"
    sent = len(llm_server.tokens())
    assert llm_server.streamed and llm_server.streamed[-1] < sent - 100  # the server was stopped mid-way
    drafts, reports, outcomes = _rows(rt)
    assert (drafts, reports) == before[:2]  # nothing saved
    assert outcomes[-1] == "extractive:cancelled"


def test_a_page_rerun_closing_the_stream_hangs_up_on_the_server(rt: Runtime, llm_server: FakeLLMServer) -> None:
    llm_server.token_delay_s = 0.05
    before = _rows(rt)
    events = stream_draft(rt, plan_draft(rt, scan_of(rt, "rahul.mehta")), make_llm(rt.settings), CancelToken(30),
                          tick_s=0.02)  # fmt: skip
    for event in events:
        if event.kind == "tick" and event.chars > 0:
            break
    events.close()  # what Streamlit's rerun does to the page's loop
    deadline = time.monotonic() + 60  # only bounds a hang: the server notices at its next token
    while llm_server.dropped == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert llm_server.dropped == 1 and llm_server.streamed[-1] < len(llm_server.tokens()) - 100
    drafts, reports, outcomes = _rows(rt)
    assert (drafts, reports) == before[:2] and outcomes[-1] == "extractive:cancelled"


def test_the_local_estimate_and_run_anyway_budget(rt: Runtime, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from core.llm.llamacpp import LlamaCppLLM

    plan = plan_draft(rt, scan_of(rt, "rahul.mehta"))
    meter = SpeedMeter(smoothing=1.0)
    monkeypatch.setattr("core.llm.budget._METER", meter)
    remote = plan_call(rt.settings, "draft", make_llm(rt.settings), plan.messages)
    assert remote.estimate is None and remote.starts  # a remote backend: no local estimate
    llamacpp = LlamaCppLLM(tmp_path / "never-loaded.gguf", rt.settings.llm)
    first = plan_call(rt.settings, "draft", llamacpp, plan.messages).estimate
    assert first is not None and first.fits and first.seconds is None  # nothing measured yet
    meter.record(prompt_tokens=500, prompt_ms=50_000, gen_tokens=40, gen_ms=20_000, threads=1)  # 10 and 2 tok/s
    waiting = plan_call(rt.settings, "draft", llamacpp, plan.messages)
    slow = waiting.estimate
    assert waiting.waits and slow is not None and not slow.fits and "the local model needs about" in slow.message()
    assert slow.run_anyway_s() >= 1.5 * (slow.seconds or 0) > slow.budget_s
    anyway = plan_call(rt.settings, "draft", llamacpp, plan.messages, "local")
    assert anyway.starts and anyway.lift_ceiling and anyway.budget_s == slow.run_anyway_s()
