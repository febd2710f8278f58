"""A local model too slow for its budget here: Ask AI and report drafts start nothing and let the doctor choose.

One measured speed (5 tok/s reading, 1 tok/s writing) puts both features over their budgets;
the configured backend is llama.cpp with an operator's file that nothing loads until a doctor
chooses "Run anyway", and the remote backend offered is the loopback server (OpenAI wire format).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from core.cases import build_context_bundle
from core.llm.budget import SpeedMeter
from core.runtime import Runtime
from core.store.models import AuditLog
from pages._text import inert
from tests.conftest import scan_of
from tests.llm_server import FakeLLMServer
from tests.test_app_support import page, shown, texts, use_root, user_of


@pytest.fixture()
def slow_local(fresh: Runtime, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, llm_server: FakeLLMServer) -> Runtime:
    """The fresh store, llama.cpp configured and measured slow here, OpenAI (the loopback server) with a key set."""
    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    gguf = tmp_path / "never-loaded.gguf"  # an operator's file: built, loaded only when a doctor runs it anyway
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("CASEBOOK_LLM__BACKEND", "llamacpp")
    monkeypatch.setenv("CASEBOOK_LLM__LLAMACPP__MODEL_PATH", str(gguf))
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-loopback")  # a remote backend with a key set is offered
    for name, value in llm_server.llm_env("openai").items():
        if "__OPENAI__" in name:  # the remote is the loopback server; the configured backend stays local
            monkeypatch.setenv(name, value)
    meter = SpeedMeter(smoothing=1.0)
    meter.record(prompt_tokens=500, prompt_ms=100_000, gen_tokens=40, gen_ms=40_000, threads=1)  # 5 and 1 tok/s
    monkeypatch.setattr("core.llm.budget._METER", meter)
    return fresh


def _audited(rt: Runtime, action: str) -> list[AuditLog]:
    with rt.db.read_only() as s:
        return list(s.scalars(select(AuditLog).where(AuditLog.action == action).order_by(AuditLog.id)))


def _chips(at: AppTest) -> list[str]:
    return [b.label for b in at.button if (b.key or "").startswith("chip-")]


def _has(at: AppTest, key: str) -> bool:
    return any(b.key == key for b in at.button)


def test_a_slow_local_model_asks_before_answering(slow_local: Runtime, llm_server: FakeLLMServer) -> None:
    scan = scan_of(slow_local, "rahul.mehta")
    ids = build_context_bundle(slow_local, scan).case_ids
    llm_server.reply = f"Based on similar cases, {ids[0]} and {ids[1]} show COPD with emphysema."
    at = page("scan_review", user_of(slow_local, "dr.chen"), scan).run()
    at.chat_input[0].set_value("What do similar cases show?").run()
    assert not at.exception
    warning = next(shown(w.value) for w in at.warning if "Local model:" in shown(w.value))
    assert "the local model needs about" in warning and "Not started" in warning and "instant answer" in warning
    assert _chips(at), "the instant answer is on screen at once, citing cases"
    assert at.button(key=f"ask-anyway-{scan}").label.startswith(inert("Run anyway (up to "))
    remote = at.button(key=f"ask-remote-{scan}")
    assert remote.label == "Use openai" and not remote.disabled
    (row,) = _audited(slow_local, "ask")  # the exchange is answered and audited; no model was called
    assert row.backend is None and row.prompt_hash is None and row.outcome == "extractive:fallback"
    assert not llm_server.requests
    at.run()
    assert _has(at, f"ask-anyway-{scan}"), "the choice waits under the history across reruns"

    at.button(key=f"ask-remote-{scan}").click().run()  # asked again, with the remote backend
    assert not at.exception
    assert any(shown(m.value) == llm_server.reply for m in at.markdown), "the guarded remote answer is shown"
    assert len(llm_server.requests) == 1 and not any("Local model:" in shown(w.value) for w in at.warning)
    assert [r.backend for r in _audited(slow_local, "ask")] == [None, "openai"]

    at.chat_input[0].set_value("How severe are similar cases?").run()
    at.button(key=f"ask-anyway-{scan}").click().run()  # the local model is started, with the longer budget
    assert not at.exception
    assert "Model not used (the model failed: llama.cpp could not load" in texts(at)
    last = _audited(slow_local, "ask")[-1]
    assert last.backend == "llamacpp" and last.prompt_hash and last.outcome == "extractive:fallback"

    at.chat_input[0].set_value("What happened to similar patients?").run()
    at.button(key=f"ask-instant-{scan}").click().run()  # keep the instant answer: nothing more is asked
    assert not at.exception and not _has(at, f"ask-anyway-{scan}") and not _has(at, f"ask-instant-{scan}")
    assert len(_audited(slow_local, "ask")) == 5 and len(llm_server.requests) == 1


def test_a_slow_local_model_asks_before_drafting(slow_local: Runtime, llm_server: FakeLLMServer) -> None:
    scan = scan_of(slow_local, "rahul.mehta")
    llm_server.reply = "IMPRESSION: COPD with emphysema.\nRECOMMENDATIONS: Follow-up imaging as clinically indicated."
    at = page("scan_review", user_of(slow_local, "dr.chen"), scan).run()
    at.button(key="generate-draft").click().run()
    assert not at.exception
    warning = next(shown(w.value) for w in at.warning if "Local model:" in shown(w.value))
    assert "the local model needs about" in warning and "Not started" in warning
    assert at.button(key=f"draft-anyway-{scan}").label.startswith(inert("Run anyway (up to "))
    assert at.button(key=f"draft-remote-{scan}").label == "Use openai"
    assert not at.button(key=f"draft-remote-{scan}").disabled
    assert "Unsaved draft" not in texts(at)
    assert not _audited(slow_local, "draft"), "nothing started: no model call was audited"
    at.button(key=f"draft-template-{scan}").click().run()
    assert not at.exception
    assert "Unsaved draft" in texts(at) and not any("Local model:" in shown(w.value) for w in at.warning)
    assert "Written by the template" in texts(at) and not llm_server.requests
    at.button(key="generate-draft").click().run()
    at.button(key=f"draft-remote-{scan}").click().run()  # the doctor picks the remote backend instead
    assert not at.exception
    assert "Written by the model" in texts(at) and len(llm_server.requests) == 1
    assert at.text_area(key=f"draft:{scan}:impression").value == "COPD with emphysema."
