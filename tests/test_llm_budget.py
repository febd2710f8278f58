"""Budgets, Cancel and speed estimates: pure parts, then a real tiny transformers model stopped mid-way."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from core.embed.base import free_cores, others_busy_cores
from core.errors import BackendCancelledError, BackendTimeoutError
from core.llm.base import Message
from core.llm.budget import (
    CHARS_PER_TOKEN,
    FEATURES,
    CancelToken,
    SpeedMeter,
    budget_rows,
    estimate,
    feature_budget,
    speed_meter,
    typical_estimate,
)
from core.llm.factory import make_llm
from core.settings import load_settings

MESSAGES: list[Message] = [{"role": "user", "content": "Is the finding present?"}]


def test_each_feature_has_one_budget_capped_by_the_ceiling() -> None:
    s = load_settings(ask={"llm_budget_s": 45}, llm={"timeout_s": 60, "budget_draft_s": 90, "budget_guideline_s": 20})
    assert feature_budget(s, "ask") == 45  # Ask AI's own budget, not the 60 s ceiling
    assert feature_budget(s, "draft") == 60  # capped by llm.timeout_s
    assert feature_budget(s, "guideline") == 20
    assert set(FEATURES) == {"ask", "draft", "guideline", "selfrag"}


def test_cancel_token_deadline_and_flag() -> None:
    token = CancelToken(0.05)
    assert token.stop_reason() is None and (token.remaining() or 0) > 0
    time.sleep(0.06)
    assert token.expired() and token.stop_reason() == "budget"
    open_ended = CancelToken()
    assert open_ended.remaining() is None and not open_ended.expired()
    open_ended.cancel()
    assert open_ended.stop_reason() == "cancelled"


def test_speed_meter_estimates_and_flags_certain_timeouts() -> None:
    meter = SpeedMeter(smoothing=1.0)
    assert meter.seconds(600, 100) == (None, None)
    meter.record(prompt_tokens=500, prompt_ms=5000, gen_tokens=50, gen_ms=5000, threads=2)  # 100 and 10 tok/s
    total, prompt = meter.seconds(600, 100)
    assert prompt == pytest.approx(6.0) and total == pytest.approx(16.0)
    meter.record(prompt_tokens=500, prompt_ms=1000, gen_tokens=50, gen_ms=1000, threads=1)  # new thread count
    assert meter.seconds(500, 0)[1] == pytest.approx(1.0)


def test_estimate_says_how_long_here(monkeypatch: pytest.MonkeyPatch) -> None:
    s = load_settings(ask={"llm_budget_s": 30})
    meter = SpeedMeter(smoothing=1.0)
    meter.record(prompt_tokens=320, prompt_ms=10_000, gen_tokens=40, gen_ms=10_000, threads=1)  # 32 and 4 tok/s
    monkeypatch.setattr("core.llm.budget._METER", meter)
    long_prompt: list[Message] = [{"role": "user", "content": "x" * int(4000 * CHARS_PER_TOKEN)}]  # 125 s to read
    est = estimate(s, "ask", long_prompt, new_tokens=40)
    assert est.certain_to_time_out and not est.fits and est.seconds == pytest.approx(135.0)
    assert "needs about 135 s here (budget 30 s)" in est.message()
    short = estimate(s, "ask", [Message(role="user", content="x" * int(100 * CHARS_PER_TOKEN))], new_tokens=40)
    assert short.fits and not short.certain_to_time_out


def test_free_cores_sampled_excludes_nothing_odd() -> None:
    busy = others_busy_cores(0.05)
    assert busy is None or 0.0 <= busy <= 64
    assert free_cores(0, 0.05) >= 1 and free_cores(3) == 3


# --- a real backend stopped by the token -------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("transformers")
    from core.selfrag.tiny import build_tiny_llama

    template = "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} {% endfor %}[assistant]"
    return build_tiny_llama(tmp_path_factory.mktemp("tiny"), hidden=32, layers=2, heads=2, seed=0,
                            chat_template=template, max_positions=4096)  # fmt: skip


def _tiny(tiny_dir: Path, max_tokens: int):  # type: ignore[no-untyped-def]
    s = load_settings(llm={"backend": "transformers", "transformers": {"model_path": tiny_dir}, "max_tokens": max_tokens})
    return make_llm(s)


def test_a_cancelled_token_never_starts_the_model(tiny_dir: Path) -> None:
    token = CancelToken(30)
    token.cancel()
    with pytest.raises(BackendCancelledError):
        token.bind(_tiny(tiny_dir, 4)).chat(MESSAGES)


def test_cancel_stops_a_stream_between_tokens(tiny_dir: Path) -> None:
    llm = _tiny(tiny_dir, 2000)
    token = CancelToken(60)
    got: list[str] = []
    started = time.monotonic()
    with pytest.raises(BackendCancelledError):
        for delta in token.bind(llm).stream(MESSAGES):
            got.append(delta)
            if len(got) == 3:
                threading.Timer(0.0, token.cancel).start()  # the Cancel button, from another thread
    assert 3 <= len(got) < 200 and time.monotonic() - started < 30


def test_the_budget_ends_generation_with_a_timeout(tiny_dir: Path) -> None:
    llm = _tiny(tiny_dir, 3000)
    token = CancelToken(0.3)
    started = time.monotonic()
    with pytest.raises(BackendTimeoutError):
        token.bind(llm).chat(MESSAGES)
    assert time.monotonic() - started < 5  # stopped near 0.3 s, not after 3,000 tokens


def test_the_process_meter_is_shared() -> None:
    assert speed_meter() is speed_meter()


def test_status_rows_show_the_budget_the_model_is_stopped_at(monkeypatch: pytest.MonkeyPatch) -> None:
    s = load_settings(ask={"llm_budget_s": 45}, llm={"timeout_s": 30})
    monkeypatch.setattr("core.llm.budget._METER", SpeedMeter())
    rows = {r["feature"]: r for r in budget_rows(s)}
    assert rows["Ask AI"]["the model is stopped at (s)"] == 30  # the ceiling wins over the 45 s setting
    assert rows["Ask AI"]["typical call here (s)"] is None  # nothing measured yet


def test_llamacpp_refuses_work_certain_to_time_out(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from core.llm.llamacpp import LlamaCppLLM

    meter = SpeedMeter(smoothing=1.0)
    meter.record(prompt_tokens=100, prompt_ms=10_000, gen_tokens=10, gen_ms=10_000, threads=1)  # 10 tok/s
    monkeypatch.setattr("core.llm.budget._METER", meter)
    monkeypatch.setattr("core.llm.llamacpp.speed_meter", lambda: meter)
    llm = LlamaCppLLM(tmp_path / "never-loaded.gguf", load_settings(llm={"llamacpp": {"n_ctx": 4096}}).llm)
    system = {"role": "system", "content": "fixed rules " * 40}
    scan = {"role": "user", "content": "DATA: " + "lung nodule 8 mm " * 60 + "QUESTION: what is it?"}
    with pytest.raises(BackendTimeoutError, match="not started"):  # ~340 new tokens at 10 tok/s vs 20 s left
        llm._refuse_if_certain_to_time_out({"messages": [system, scan]}, seconds_left=20)
    llm._refuse_if_certain_to_time_out({"messages": [system, scan]}, seconds_left=60)  # fits: remembered
    follow_up = {"role": "user", "content": scan["content"].replace("what is it?", "how sure?")}
    llm._refuse_if_certain_to_time_out({"messages": [system, follow_up]}, seconds_left=5)  # only the question is new
    off = LlamaCppLLM(tmp_path / "x.gguf", load_settings(llm={"refuse_certain_timeouts": False}).llm)
    off._refuse_if_certain_to_time_out({"messages": [system, scan]}, seconds_left=1)


def test_typical_estimate_before_and_after_a_measurement(monkeypatch: pytest.MonkeyPatch) -> None:
    s = load_settings(ask={"llm_budget_s": 45})
    meter = SpeedMeter(smoothing=1.0)
    monkeypatch.setattr("core.llm.budget._METER", meter)
    assert typical_estimate(s, "ask").fits and "no speed measured yet" in typical_estimate(s, "ask").message()
    meter.record(prompt_tokens=730, prompt_ms=73_000, gen_tokens=40, gen_ms=20_000, threads=1)  # 10 and 2 tok/s
    slow = typical_estimate(s, "ask")
    assert not slow.fits and slow.certain_to_time_out and "needs about 137 s here (budget 45 s)" in slow.message()


def test_plan_call_starts_waits_runs_anyway_or_goes_remote(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from core.llm.llamacpp import LlamaCppLLM
    from core.llm.plan import plan_call

    s = load_settings(ask={"llm_budget_s": 45}, llm={"timeout_s": 60, "max_tokens": 256})
    meter = SpeedMeter(smoothing=1.0)
    monkeypatch.setattr("core.llm.budget._METER", meter)
    local = LlamaCppLLM(tmp_path / "never-loaded.gguf", s.llm)
    system: Message = {"role": "system", "content": "fixed rules " * 500}  # in llama.cpp's cache: not counted
    messages = [system, Message(role="user", content="x" * int(600 * CHARS_PER_TOKEN))]
    unmeasured = plan_call(s, "ask", local, messages)
    assert unmeasured.starts and unmeasured.budget_s == 45 and unmeasured.estimate is not None
    assert unmeasured.estimate.seconds is None and not unmeasured.lift_ceiling
    meter.record(prompt_tokens=500, prompt_ms=50_000, gen_tokens=40, gen_ms=20_000, threads=1)  # 10 and 2 tok/s
    waiting = plan_call(s, "ask", local, messages)
    assert waiting.waits and not waiting.starts and waiting.estimate is not None
    assert waiting.estimate.seconds == pytest.approx(60 + 128 / 2, abs=1)  # 600 new prompt tokens, 128 written
    assert waiting.note() == "Local model: the local model needs about 124 s here (budget 45 s)"
    anyway = plan_call(s, "ask", local, messages, "local")
    assert anyway.starts and anyway.lift_ceiling and anyway.budget_s == waiting.estimate.run_anyway_s() >= 186
    token = anyway.token()  # 1.5 x the estimate, above llm.timeout_s: the backend's ceiling yields to it
    assert token.lift_ceiling and token.budget_s == anyway.budget_s
    remote_llm = make_llm(load_settings(llm={"backend": "openai"}), api_key="sk-test")
    remote = plan_call(s, "ask", remote_llm, messages, "remote")
    assert remote.starts and remote.estimate is None and remote.budget_s == 45 and not remote.lift_ceiling
    assert not plan_call(s, "ask", local, messages, "none").starts
    assert not plan_call(s, "ask", None, messages).starts and not plan_call(s, "draft", local, None).starts
