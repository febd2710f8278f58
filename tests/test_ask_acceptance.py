"""Ask AI asks the model on its own only while its answers pass the guard (issue 27 item 4, ``ask.model_answers``).

The counts are the real store on disk (core/llm/acceptance.py); the plans come from the real
``plan_call``; the backends are real objects (a llama.cpp model that is never loaded, the
OpenAI-compatible backend against the loopback server); the answers go through the real guard.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path

import pytest
from sqlalchemy import select

from core.answer.service import stream_answer
from core.cases import build_context_bundle
from core.llm.acceptance import VERDICTS_FILE, VerdictStore, pass_rate, rate_rows, verdict_store
from core.llm.base import Message
from core.llm.budget import SpeedMeter
from core.llm.factory import make_llm
from core.llm.llamacpp import LlamaCppLLM
from core.llm.plan import plan_call
from core.runtime import Runtime, open_runtime
from core.settings import Settings
from core.store.models import User
from pages._text import inert
from tests.conftest import make_settings, scan_of
from tests.llm_server import FakeLLMServer

DEFAULT_MODEL = "qwen2.5-coder-1.5b-instruct-q4_k_m"  # the shipped model: models.json holds its measured 5 of 8
MESSAGES: list[Message] = [{"role": "user", "content": "What do similar cases show?"}]
BAD_REPLY = "The patient should start aspirin 100 mg daily."  # a drug and a dose, no citation: the guard refuses it


# --- the store -------------------------------------------------------------------------------------------


def test_verdicts_persist_and_reload(tmp_path: Path) -> None:
    path = tmp_path / "data" / VERDICTS_FILE
    store = VerdictStore(path)
    for passed in (True, True, False):
        store.record("openai", "m1", passed)
    store.record("llamacpp", "m2", False)
    again = VerdictStore(path)
    assert again.counts("openai", "m1") == (2, 3) and again.counts("llamacpp", "m2") == (0, 1)
    assert again.counts("groq", "never") == (0, 0) and again.keys() == ["llamacpp/m2", "openai/m1"]
    assert not list(path.parent.glob("*.tmp")), "the temporary file was renamed into place"


@pytest.mark.parametrize(
    "content",
    ["{not json", '{"models": []}', '{"models": {"a/b": {"passed": 5, "total": 3}}}', '{"models": {"a/b": {}}}', "[]"],
)
def test_a_damaged_file_starts_empty_and_says_so(tmp_path: Path, content: str, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / VERDICTS_FILE
    path.write_text(content)
    with caplog.at_level(logging.WARNING, logger="core.llm.acceptance"):
        store = VerdictStore(path)
    assert store.keys() == [] and "unreadable" in caplog.text
    store.record("a", "b", True)  # counting goes on, and the file is whole again
    assert json.loads(path.read_text())["models"]["a/b"]["passed"] == 1


def test_concurrent_verdicts_are_all_counted(tmp_path: Path) -> None:
    path = tmp_path / VERDICTS_FILE
    store = VerdictStore(path)
    start = threading.Barrier(8)

    def judge(n: int) -> None:
        start.wait()
        for i in range(40):
            store.record("openai", f"m{n % 2}", passed=i % 4 != 0)

    threads = [threading.Thread(target=judge, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert store.counts("openai", "m0") == store.counts("openai", "m1") == (120, 160)
    assert VerdictStore(path).counts("openai", "m0") == (120, 160), "the file holds every verdict"


# --- the plan --------------------------------------------------------------------------------------------


@pytest.fixture()
def fresh_meter(monkeypatch: pytest.MonkeyPatch) -> SpeedMeter:
    """No speed measured: the speed estimate never decides these plans."""
    meter = SpeedMeter()
    monkeypatch.setattr("core.llm.budget._METER", meter)
    return meter


def _settings(root: Path, **ask: object) -> Settings:
    return make_settings(root, ask=ask)


def _local(settings: Settings, root: Path) -> LlamaCppLLM:
    return LlamaCppLLM(root / f"{DEFAULT_MODEL}.gguf", settings.llm)  # never loaded: plan_call reads its name


def test_the_default_model_starts_instant_only_from_our_measurement(tmp_path: Path, fresh_meter: SpeedMeter) -> None:
    s = _settings(tmp_path)
    plan = plan_call(s, "ask", _local(s, tmp_path), MESSAGES)
    assert plan.waits and not plan.starts and plan.held_back is not None
    assert plan.held_back.startswith(
        "Instant answer only: the local model's answers passed the grounding check 5 of 8 times (62%; 80% needed)."
    )
    assert "bench/guard_bench.py --llm 8 on 2026-11-27" in plan.held_back and "0 of 0 on this machine" in plan.held_back
    assert plan.anyway_label() == f"Ask the local model anyway (up to {s.ask.llm_budget_s:.0f} s)"
    local = plan_call(s, "ask", _local(s, tmp_path), MESSAGES, "local")  # the doctor asks it anyway
    assert local.starts and local.held_back is None and local.budget_s == s.ask.llm_budget_s
    assert plan_call(s, "draft", _local(s, tmp_path), MESSAGES).starts, "only Ask AI answers are judged this way"


def test_answers_passing_here_lift_the_pooled_rate_over_the_floor(tmp_path: Path, fresh_meter: SpeedMeter) -> None:
    s = _settings(tmp_path)
    for _ in range(6):
        verdict_store(s).record("llamacpp", DEFAULT_MODEL, True)
    assert plan_call(s, "ask", _local(s, tmp_path), MESSAGES).waits, "11 of 14 (79%) is under 80%"
    verdict_store(s).record("llamacpp", DEFAULT_MODEL, True)
    r = pass_rate(s, "llamacpp", DEFAULT_MODEL)
    assert (r.pooled_passed, r.pooled_total, r.passed, r.total) == (12, 15, 7, 7)
    assert plan_call(s, "ask", _local(s, tmp_path), MESSAGES).starts, "12 of 15 is 80%"
    assert VerdictStore(tmp_path / "data" / VERDICTS_FILE).counts("llamacpp", DEFAULT_MODEL) == (7, 7)


def test_a_model_without_a_prior_is_asked_until_it_has_enough_answers(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    s = make_settings(tmp_path, llm=llm_server.llm_overrides("openai"))
    llm = make_llm(s)
    assert llm is not None and pass_rate(s, llm.backend, llm.model).prior is None
    assert plan_call(s, "ask", llm, MESSAGES).starts, "no opinion: it runs as before"
    for _ in range(s.ask.min_guard_samples - 1):
        verdict_store(s).record(llm.backend, llm.model, False)
    assert plan_call(s, "ask", llm, MESSAGES).starts, "7 judged answers are too few for an opinion"
    verdict_store(s).record(llm.backend, llm.model, False)
    plan = plan_call(s, "ask", llm, MESSAGES)
    assert plan.waits and plan.held_back is not None and plan.estimate is None
    assert "the openai model's answers passed the grounding check 0 of 8 times (0%; 80% needed)" in plan.held_back
    assert plan.anyway_label() == "Ask the model anyway (up to 2 s)"  # llm.timeout_s caps the loopback budget
    assert plan_call(s, "ask", llm, MESSAGES, "remote").starts and plan_call(s, "ask", llm, MESSAGES, "local").starts
    assert not plan_call(s, "ask", llm, MESSAGES, "none").starts


@pytest.mark.parametrize(
    ("ask", "starts"),
    [
        ({}, False),
        ({"model_answers": "always"}, True),
        ({"min_guard_pass_rate": 0.6}, True),  # 62% clears a 60% floor
        ({"min_guard_samples": 9}, True),  # the 8 measured answers alone form no opinion
        ({"model_answers": "on_request"}, False),
    ],
)
def test_the_settings_decide(tmp_path: Path, fresh_meter: SpeedMeter, ask: dict[str, object], starts: bool) -> None:
    s = _settings(tmp_path, **ask)
    assert plan_call(s, "ask", _local(s, tmp_path), MESSAGES).starts is starts


def test_on_request_holds_even_a_model_that_passes(tmp_path: Path, fresh_meter: SpeedMeter) -> None:
    s = _settings(tmp_path, model_answers="on_request")
    for _ in range(20):
        verdict_store(s).record("llamacpp", DEFAULT_MODEL, True)
    plan = plan_call(s, "ask", _local(s, tmp_path), MESSAGES)
    assert plan.waits and "given on request here" in (plan.held_back or "")
    assert plan_call(s, "ask", _local(s, tmp_path), MESSAGES, "local").starts


def test_status_rows_show_the_rate_and_where_it_comes_from(tmp_path: Path) -> None:
    s = _settings(tmp_path)
    verdict_store(s).record("openai", "fake-model", True)
    rows = {r["model"]: r for r in rate_rows(s)}
    local = rows[f"llamacpp/{DEFAULT_MODEL}"]
    assert (local["passed unchanged"], local["answers judged"], local["pass rate"]) == (5, 8, "62%")
    assert local["on this machine"] == "0 of 0" and local["Ask AI under auto"] == "instant only"
    assert rows["openai/fake-model"]["from our measurement"] == "none"
    assert rows["openai/fake-model"]["Ask AI under auto"] == "no opinion yet: asked"


# --- Ask AI, end to end against the loopback model -------------------------------------------------------


def _doctor(rt: Runtime) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)


def test_ask_ai_goes_instant_only_once_answers_fail_and_asks_anyway_on_request(
    fresh: Runtime, llm_server: FakeLLMServer
) -> None:
    root = fresh.settings.paths.data_dir.parent
    rt = open_runtime(make_settings(root, llm=llm_server.llm_overrides("openai"), ask={"min_guard_samples": 2}))
    llm, doc, sid = make_llm(rt.settings), _doctor(rt), scan_of(rt, "rahul.mehta")
    assert llm is not None
    llm_server.reply = BAD_REPLY
    for q in ("What do similar cases show?", "How severe are similar cases?"):  # judged and counted: 0 of 2
        final = list(stream_answer(rt, sid, q, doc, llm))[-1].result
        assert final is not None and final.path == "extractive" and final.reason == "the model's answer failed the answer rules"
    assert len(llm_server.requests) == 2 and pass_rate(rt.settings, "openai", llm.model).total == 2

    events = list(stream_answer(rt, sid, "What happened to similar patients?", doc, llm))
    assert [e.kind for e in events] == ["instant", "final"] and len(llm_server.requests) == 2, "the model was not asked"
    plan, final = events[-1].plan, events[-1].result
    assert plan is not None and plan.waits and final is not None and final.answer == events[0].result.answer  # type: ignore[union-attr]
    assert (plan.held_back or "").startswith("Instant answer only: the openai model's answers passed the grounding "
                                             "check 0 of 2 times (0%; 80% needed)")  # fmt: skip
    assert (final.reason or "").startswith("not started: the openai model's answers passed")

    ids = build_context_bundle(rt, sid).case_ids
    llm_server.reply = f"Based on similar cases, {ids[0]} and {ids[1]} show COPD with emphysema."
    events = list(stream_answer(rt, sid, "What happened to similar patients?", doc, llm, "local"))  # ask anyway
    final = events[-1].result
    assert final is not None and final.path == "llm" and final.answer.answer == llm_server.reply
    assert len(llm_server.requests) == 3
    assert pass_rate(rt.settings, "openai", llm.model).passed == 1, "the good answer raised the rate: 1 of 3"


def test_the_chat_page_says_instant_only_with_the_figures_and_asks_anyway(
    fresh: Runtime, llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_app_support import page, shown, texts, use_root, user_of

    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    for name, value in llm_server.llm_env("openai").items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CASEBOOK_ASK__MIN_GUARD_SAMPLES", "3")
    for passed in (True, False, False):  # 1 of 3 answered unchanged here before
        verdict_store(fresh.settings).record("openai", llm_server.model, passed)
    scan = scan_of(fresh, "rahul.mehta")
    ids = build_context_bundle(fresh, scan).case_ids
    llm_server.reply = f"Based on similar cases, {ids[0]} and {ids[1]} show COPD with emphysema."
    at = page("scan_review", user_of(fresh, "dr.chen"), scan).run()
    at.chat_input[0].set_value("What do similar cases show?").run()
    assert not at.exception and not llm_server.requests, "the model was not asked"
    note = next(shown(w.value) for w in at.warning if "Instant answer only" in shown(w.value))
    assert note.startswith("Instant answer only: the openai model's answers passed the grounding check 1 of 3 times "
                           "(33%; 80% needed). Counted: 1 of 3 on this machine.")  # fmt: skip
    assert "The instant answer above stands." in note
    anyway = at.button(key=f"ask-anyway-{scan}")
    assert anyway.label == inert("Ask the model anyway (up to 2 s)")  # typed-text rule: labels go through inert()
    anyway.click().run()
    assert not at.exception and len(llm_server.requests) == 1
    assert any(shown(m.value) == llm_server.reply for m in at.markdown), "the guarded model answer is shown"
    assert "Instant answer only" not in texts(at)
    assert pass_rate(fresh.settings, "openai", llm_server.model).passed == 2
