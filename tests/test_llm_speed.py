"""The local model's speed meter learns from every call, persists, ages, and is re-tried when the load drops (issue 27).

The meter, the plan and the llama.cpp backend's measuring are the real code. The llama.cpp
server itself is a stand-in that streams tokens at a set speed with llama.cpp's per-token
timings (``timings_per_token``), because the real model would take minutes per call on this
machine; the load average it runs under is set by the test (``load_now``).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from core.errors import BackendTimeoutError
from core.llm.base import Message
from core.llm.budget import CHARS_PER_TOKEN, SPEED_FILE, attach_meter, speed_line
from core.llm.llamacpp import LlamaCppLLM
from core.llm.plan import plan_call
from core.llm.speed import SpeedMeter
from core.settings import Settings, load_settings

PROMPT_TOKENS = 600


class StandInLlamaServer:
    """xllamacpp's streaming handler: the prompt read in ``prompt_s``, then tokens every ``token_s``, with timings."""

    def __init__(self, prompt_s: float, token_s: float, tokens: int = 128) -> None:
        self.prompt_s, self.token_s, self.tokens = prompt_s, token_s, tokens

    def handle_chat_completions(self, request: dict[str, Any], callback: Any) -> dict[str, Any]:
        assert request["timings_per_token"] is True  # what lets a cut call report its speed
        time.sleep(self.prompt_s)
        started = time.monotonic()
        for n in range(1, self.tokens + 1):
            time.sleep(self.token_s)
            timings = {"prompt_n": PROMPT_TOKENS, "prompt_ms": self.prompt_s * 1000, "cache_n": 0}
            timings |= {"predicted_n": n, "predicted_ms": (time.monotonic() - started) * 1000}
            chunk = {"choices": [{"index": 0, "delta": {"content": " word"}, "finish_reason": None}], "timings": timings}
            if callback(chunk):
                return {}
        callback({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "timings": timings})
        return {}


def _settings(tmp_path: Path) -> Settings:
    return load_settings(
        paths={"data_dir": str(tmp_path)},
        ask={"llm_budget_s": 1.5},
        llm={"timeout_s": 1.5, "max_tokens": 128, "llamacpp": {"threads": 1}},
    )


def _messages() -> list[Message]:
    return [{"role": "user", "content": "y" * int(PROMPT_TOKENS * CHARS_PER_TOKEN)}]


def test_meter_persists_ages_and_follows_the_load(tmp_path: Path) -> None:
    path = tmp_path / SPEED_FILE
    meter = SpeedMeter(smoothing=0.5, half_life_s=3600)
    meter.attach(path)
    meter.record(600, 6000, 40, 20_000, threads=2, load=2.0, now=1000.0)  # 100 and 2 tok/s
    meter.record(600, 3000, 40, 10_000, threads=2, load=2.2, now=1000.0)  # same regime, same time: plain average
    assert meter.prompt_tps == pytest.approx(150) and meter.gen_tps == pytest.approx(3)
    again = SpeedMeter()
    again.attach(path)  # a restart: the persisted estimate, with when and under what load it was measured
    assert again.reading() == meter.reading() and again.reading().measured_at == 1000.0 and again.load == 2.2
    again.record(600, 2000, 40, 8000, threads=2, load=2.0, now=1000.0 + 7200)  # 300 tok/s, two half-lives later
    assert again.prompt_tps == pytest.approx((0.5 * 300 + 0.125 * 150) / 0.625)  # the old estimate weighs a quarter
    again.record(600, 60_000, 40, 80_000, threads=2, load=9.0, now=9000.0)  # load 9 vs 2: another regime, replaced
    assert again.prompt_tps == pytest.approx(10) and again.gen_tps == pytest.approx(0.5)
    assert not again.stale(8.0, now=9010.0) and again.stale(4.5, now=9010.0)  # the load halved: re-try
    assert again.stale(9.0, now=9000.0 + 600)  # or it is ten minutes old
    path.write_text("{not json", encoding="utf-8")
    fresh = SpeedMeter()
    fresh.attach(path)  # a damaged file: measured afresh, never a crash
    assert fresh.reading().measured_at is None
    fresh.record(100, 1000, 10, 1000, threads=1, partial=True)
    assert json.loads(path.read_text(encoding="utf-8"))["partial"] is True


def test_estimate_recovers_within_two_calls_after_the_load_drops(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    s = _settings(tmp_path)
    meter = SpeedMeter()
    monkeypatch.setattr("core.llm.budget._METER", meter)
    load = {"now": 8.0}  # a CPU burner holds the load at 8
    monkeypatch.setattr("core.llm.llamacpp.load_now", lambda: load["now"])
    llm = LlamaCppLLM(tmp_path / "stand-in.gguf", s.llm)
    llm._server, llm._loaded_at = StandInLlamaServer(prompt_s=0.1, token_s=0.05), time.monotonic()  # 20 tok/s

    first = plan_call(s, "ask", llm, _messages(), load=load["now"])
    assert first.starts and first.estimate is not None and first.estimate.seconds is None  # nothing measured yet
    with pytest.raises(BackendTimeoutError):  # 128 tokens at 20 tok/s: cut at the 1.5 s budget
        first.token().bind(llm).chat(_messages())
    reading = meter.reading()  # the cut call counted
    assert reading.partial and reading.load == 8.0 and reading.gen_tps is not None and 10 < reading.gen_tps < 25
    assert reading.prompt_tps == pytest.approx(PROMPT_TOKENS / 0.1)
    assert plan_call(s, "ask", llm, _messages(), load=8.0).waits  # still loaded: nothing starts
    assert "tokens/s at load average 8.0" in speed_line(s) and "cut at its budget" in speed_line(s)

    load["now"] = 1.2  # the burner stops
    llm._server = StandInLlamaServer(prompt_s=0.01, token_s=0.002)  # 500 tok/s
    trial = plan_call(s, "ask", llm, _messages(), load=load["now"])  # call 1 after the burner: a trial, not a refusal
    assert trial.trial and trial.starts and trial.budget_s == 1.5 and not trial.lift_ceiling
    assert "re-measuring" in (trial.note() or "")
    trial.token().bind(llm).chat(_messages())
    recovered = plan_call(s, "ask", llm, _messages(), load=load["now"])  # call 2: the estimate itself fits
    assert recovered.starts and not recovered.trial and recovered.estimate is not None and recovered.estimate.fits
    assert meter.reading().load == 1.2 and not meter.reading().partial


def test_status_line_says_what_was_measured_and_when(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    s = _settings(tmp_path)
    monkeypatch.setattr("core.llm.budget._METER", SpeedMeter())
    assert "no speed measured yet" in speed_line(s)
    attach_meter(s).record(730, 73_000, 40, 20_000, threads=2, load=6.5, partial=True, now=1_700_000_000.0)
    line = speed_line(s, now=1_700_000_000.0 + 300)
    assert "reads 10.0 tokens/s, writes 2.0 tokens/s at load average 6.5, measured 5 min ago" in line
    assert "2023-11-14 22:13 UTC" in line and "cut at its budget or cancelled" in line
    monkeypatch.setattr("core.llm.budget._METER", SpeedMeter())
    assert "measured" in speed_line(s) and (tmp_path / SPEED_FILE).is_file()  # a new process reads it back


def test_a_call_cut_while_reading_its_prompt_counts_at_its_deadline(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """llama.cpp streams nothing while it reads a prompt: the cut call's caller leaves at the deadline, and the
    next call must already plan with what the cut one showed, not wait for the prompt to be read (issue 27)."""
    from core.llm.budget import CancelToken
    from core.llm.call import chat_call

    s = _settings(tmp_path)
    meter = SpeedMeter()
    monkeypatch.setattr("core.llm.budget._METER", meter)
    monkeypatch.setattr("core.llm.llamacpp.load_now", lambda: 8.0)
    meter.record(PROMPT_TOKENS, 100, 0, 0.0, threads=1, load=8.0)  # an estimate that fits: 6,000 tok/s
    llm = LlamaCppLLM(tmp_path / "stand-in.gguf", s.llm)
    llm._server, llm._loaded_at = StandInLlamaServer(prompt_s=3.0, token_s=0.01), time.monotonic()  # 200 tok/s
    assert plan_call(s, "ask", llm, _messages(), load=8.0).starts
    started = time.monotonic()
    with pytest.raises(BackendTimeoutError):
        chat_call(llm, _messages(), CancelToken(1.5))
    assert time.monotonic() - started < 1.5 + 1.0  # the caller left at the deadline, the prompt is still being read
    waited = time.monotonic()
    while not meter.reading().partial and time.monotonic() - waited < 2.0:  # a timer thread, late on a loaded CPU
        time.sleep(0.01)
    reading = meter.reading()
    assert reading.partial and reading.samples == 2 and reading.prompt_tps is not None
    assert reading.prompt_tps <= PROMPT_TOKENS / 1.3  # at most what fits in the budget, not the old 6,000
    again = plan_call(s, "ask", llm, _messages(), load=8.0)
    assert again.waits and again.estimate is not None and not again.estimate.fits  # the same load: nothing starts
    waited = time.monotonic()  # the abandoned prompt is read at last: llama.cpp's own count follows, still bounded
    while meter.reading().samples < 3 and time.monotonic() - waited < 10.0:
        time.sleep(0.05)
    assert meter.reading().samples == 3 and (meter.reading().prompt_tps or 0) <= PROMPT_TOKENS / 1.3


def test_generation_not_measured_yet_is_never_free() -> None:
    meter = SpeedMeter()
    meter.record(600, 10_000, 0, 0.0, threads=2, load=1.0)  # only prompt reading seen: 60 tok/s
    total, prompt = meter.seconds(600, 120)
    assert prompt is not None and total is not None
    assert prompt == pytest.approx(10.0) and total > prompt + 120 / 60  # writing is taken as slower than reading


def test_a_load_that_just_dropped_shows_before_the_load_average_does(monkeypatch: pytest.MonkeyPatch) -> None:
    from core.llm import speed

    real = speed.runnable_now(sample_s=0.02, reads=2)  # this machine, now: a count of other runnable tasks
    assert real is None or real >= 0
    monkeypatch.setattr(speed, "load_now", lambda: 7.5)  # the 1-minute average still remembers the burner
    monkeypatch.setattr(speed, "runnable_now", lambda: 1.0)  # what runs now
    assert speed.load_for_retry() == 1.0
    monkeypatch.setattr(speed, "runnable_now", lambda: 9.0)  # a load that just rose shows in neither at once
    assert speed.load_for_retry() == 7.5
    monkeypatch.setattr(speed, "runnable_now", lambda: None)  # no /proc/stat: the load average alone
    assert speed.load_for_retry() == 7.5
