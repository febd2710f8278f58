"""Groq and OpenAI-compatible backends against the loopback server (real SDKs, real sockets)."""

from __future__ import annotations

import math
import time

import pytest

from core.errors import BackendAuthError, BackendError, BackendTimeoutError, RateLimitedError
from core.llm.base import LLM
from core.llm.factory import make_llm
from core.settings import load_settings
from tests.llm_server import DEFAULT_REPLY, FakeLLMServer

MESSAGES = [{"role": "system", "content": "Answer from the context."}, {"role": "user", "content": "What is shown?"}]


@pytest.fixture(params=["groq", "openai"])
def remote(request: pytest.FixtureRequest, llm_server: FakeLLMServer, groq_key: str) -> LLM:
    llm = make_llm(load_settings(llm=llm_server.llm_overrides(request.param)))
    assert llm is not None and llm.backend == request.param
    return llm


def test_chat_returns_text_usage_and_model(remote: LLM, llm_server: FakeLLMServer) -> None:
    out = remote.chat(MESSAGES, max_tokens=50)
    assert out.text == DEFAULT_REPLY
    assert out.finish_reason == "stop"
    assert out.completion_tokens == len(llm_server.tokens())
    assert out.prompt_tokens and out.model == "fake-model"
    body = llm_server.requests[-1].body
    assert body["messages"] == MESSAGES and body["max_tokens"] == 50 and body["temperature"] == 0.0


def test_settings_supply_max_tokens(remote: LLM, llm_server: FakeLLMServer) -> None:
    remote.chat(MESSAGES)
    assert llm_server.requests[-1].body["max_tokens"] == load_settings().llm.max_tokens


def test_groq_uses_openai_v1_path_and_bearer_key(llm_server: FakeLLMServer, groq_key: str) -> None:
    llm = make_llm(load_settings(llm=llm_server.llm_overrides("groq")))
    assert llm is not None
    llm.chat(MESSAGES)
    seen = llm_server.requests[-1]
    assert seen.path == "/openai/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {groq_key}"


def test_chat_logprobs_are_sorted_log_probabilities(remote: LLM, llm_server: FakeLLMServer) -> None:
    out = remote.chat(MESSAGES, logprobs=3)
    assert [t.token for t in out.tokens] == llm_server.tokens()
    for tok in out.tokens:
        values = list(tok.top.values())
        assert len(values) == 3 and values == sorted(values, reverse=True)
        assert sum(math.exp(v) for v in values) <= 1.0
        assert tok.top[tok.token] == tok.logprob
    assert llm_server.requests[-1].body["top_logprobs"] == 3


def test_fixed_token_probabilities_come_back(remote: LLM, llm_server: FakeLLMServer) -> None:
    llm_server.reply = "Yes"
    llm_server.token_probs = {"Yes": {"Yes": 0.8, "No": 0.15}}
    out = remote.chat(MESSAGES, logprobs=2)
    assert out.tokens[0].prob("Yes") == pytest.approx(0.8)
    assert out.tokens[0].prob("No") == pytest.approx(0.15)
    assert out.tokens[0].prob("Maybe") == 0.0


def test_openai_raw_completion_with_legacy_logprobs(llm_server: FakeLLMServer) -> None:
    llm = make_llm(load_settings(llm=llm_server.llm_overrides("openai")))
    assert llm is not None
    out = llm.complete("Question: is it relevant?\nAnswer:", max_tokens=3, logprobs=2)
    assert llm_server.requests[-1].path == "/v1/completions"
    assert out.finish_reason == "length" and out.text == "".join(llm_server.tokens()[:3])
    assert len(out.tokens) == 3 and all(len(t.top) == 2 for t in out.tokens)


def test_groq_complete_is_sent_as_one_user_message(llm_server: FakeLLMServer, groq_key: str) -> None:
    llm = make_llm(load_settings(llm=llm_server.llm_overrides("groq")))
    assert llm is not None
    llm.complete("raw prompt", max_tokens=5)
    assert llm_server.requests[-1].body["messages"] == [{"role": "user", "content": "raw prompt"}]


def test_stream_yields_deltas_in_order(remote: LLM, llm_server: FakeLLMServer) -> None:
    deltas = list(remote.stream(MESSAGES))
    assert deltas == llm_server.tokens()
    assert llm_server.requests[-1].body["stream"] is True


def test_401_is_an_auth_error_without_retry(remote: LLM, llm_server: FakeLLMServer) -> None:
    llm_server.fail_status(401)
    with pytest.raises(BackendAuthError, match="refused the API key") as info:
        remote.chat(MESSAGES)
    assert "API key" in info.value.hint
    assert len(llm_server.requests) == 1


def test_429_carries_retry_after(remote: LLM, llm_server: FakeLLMServer) -> None:
    llm_server.fail_status(429, headers={"Retry-After": "7"})
    with pytest.raises(RateLimitedError) as info:
        remote.chat(MESSAGES)
    assert info.value.retry_after_s == 7.0
    assert "7 s" in info.value.hint


def test_5xx_then_success_is_retried(remote: LLM, llm_server: FakeLLMServer) -> None:
    llm_server.fail_status(503, times=2)
    assert remote.chat(MESSAGES).text == DEFAULT_REPLY
    assert len(llm_server.requests) == 3


def test_5xx_beyond_retries_is_a_backend_error(remote: LLM, llm_server: FakeLLMServer) -> None:
    llm_server.fail_status(500, times=3)
    with pytest.raises(BackendError, match="HTTP 500"):
        remote.chat(MESSAGES)
    assert len(llm_server.requests) == 3


def test_stream_retries_a_5xx_before_the_first_token(remote: LLM, llm_server: FakeLLMServer) -> None:
    llm_server.fail_status(502)
    assert "".join(remote.stream(MESSAGES)) == DEFAULT_REPLY


def test_slow_answer_times_out(llm_server: FakeLLMServer, groq_key: str) -> None:
    for backend in ("groq", "openai"):
        llm = make_llm(load_settings(llm=llm_server.llm_overrides(backend, timeout_s=0.3)))
        assert llm is not None
        llm_server.fail_slow(20.0)  # far past the 0.3 s timeout, so a late reply cannot pass for a timeout
        started = time.monotonic()
        with pytest.raises(BackendTimeoutError):
            llm.chat(MESSAGES)
        assert time.monotonic() - started < 15


def test_malformed_json_is_a_backend_error(remote: LLM, llm_server: FakeLLMServer) -> None:
    llm_server.fail_malformed()
    with pytest.raises(BackendError, match="malformed"):
        remote.chat(MESSAGES)


def test_malformed_stream_event_is_a_backend_error(remote: LLM, llm_server: FakeLLMServer) -> None:
    llm_server.fail_malformed()
    with pytest.raises(BackendError, match="malformed"):
        list(remote.stream(MESSAGES))


def test_cut_stream_is_a_backend_error_after_partial_text(remote: LLM, llm_server: FakeLLMServer) -> None:
    llm_server.fail_cut(after_chunks=2)
    received: list[str] = []
    with pytest.raises(BackendError) as info:
        for delta in remote.stream(MESSAGES):
            received.append(delta)
    assert received == llm_server.tokens()[:2]
    assert not isinstance(info.value, BackendTimeoutError)


def test_cut_body_is_retried_then_succeeds(remote: LLM, llm_server: FakeLLMServer) -> None:
    llm_server.fail_cut()
    assert remote.chat(MESSAGES).text == DEFAULT_REPLY


def test_missing_groq_key_is_a_clear_auth_error(llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GROQ_API_KEY", raising=False)
    with pytest.raises(BackendAuthError, match="GROQ_API_KEY"):
        make_llm(load_settings(llm=llm_server.llm_overrides("groq")))


def test_key_passed_in_beats_the_environment(llm_server: FakeLLMServer, groq_key: str) -> None:
    llm = make_llm(load_settings(llm=llm_server.llm_overrides("groq")), api_key="from-secrets")
    assert llm is not None
    llm.chat(MESSAGES)
    assert llm_server.requests[-1].headers["authorization"] == "Bearer from-secrets"
