"""Import-path backends: ``llm.backend`` / ``embed.backend`` = ``package.module:ClassName`` (core.plugins).

The two backends below are what a new backend is: one class plus one settings group of its own,
reached through settings alone (no edit to a factory or a page).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Unpack

import pytest
from pydantic import BaseModel, ConfigDict, Field

from core.config import EmbedSettings
from core.embed import Embedder, make_embedder
from core.errors import ConfigError
from core.llm.base import LLM, Completion, GenOptions, GenParams, Message, TokenLogprobs, truncate_at_stop
from core.llm.budget import CancelToken
from core.llm.factory import make_llm
from core.plugins import is_import_path
from core.settings import Settings, load_settings
from tests.test_kb_corpus import HashEmbedder

# This module as pytest imported it, so the classes the factories build are the ones defined here.
HERE = __name__


class EchoOptions(BaseModel):
    """Settings group of :class:`EchoLLM` (read from ``llm.options``)."""

    model_config = ConfigDict(extra="forbid")

    prefix: str = Field("echo:", description="Put before every answer.")


class EchoLLM:
    """A deterministic language model: answers with the prefix and the last message's words, one token per word."""

    backend = "echo"

    def __init__(self, settings: Settings, *, api_key: str | None = None) -> None:
        self.options = EchoOptions.model_validate(settings.llm.options)
        self.settings = settings.llm
        self.model = f"echo{'+key' if api_key else ''}"

    def _answer(self, text: str, gen: GenParams) -> Completion:
        gen = gen.resolved(self.settings)
        words = [self.options.prefix, *text.split()]
        limit = gen.max_tokens or len(words)
        out, stopped = truncate_at_stop(" ".join(words[:limit]), gen.stop)
        tokens = [TokenLogprobs(w, 0.0, {w: 0.0}) for w in out.split()] if gen.logprobs else []
        reason = "stop" if stopped or len(words) <= limit else "length"
        return Completion(out, reason, len(text.split()), len(out.split()), self.backend, self.model, tokens)

    def chat(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Completion:
        return self._answer(messages[-1]["content"], GenParams.of(params, **options))

    def complete(self, prompt: str, params: GenParams | None = None, **options: Unpack[GenOptions]) -> Completion:
        return self._answer(prompt, GenParams.of(params, **options))

    def stream(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Iterator[str]:
        text = self.chat(messages, params, **options).text
        yield from (w + " " for w in text.split())


class HashingOptions(BaseModel):
    """Settings group of :class:`HashingEmbedder` (read from ``embed.options``)."""

    model_config = ConfigDict(extra="forbid")

    dim: int = Field(48, ge=8, description="Vector dimension.")
    seed: int = Field(0, description="Seed of the random projection.")


class HashingEmbedder(HashEmbedder):
    """The hashed bag-of-words encoder of the corpus tests, built from ``embed`` settings like any backend."""

    def __init__(self, settings: EmbedSettings) -> None:
        options = HashingOptions.model_validate(settings.options)
        super().__init__(dim=options.dim, model_id=f"test/hashing-{options.dim}", seed=options.seed)


class NotAModel:
    """Constructs fine but satisfies no protocol."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        pass


def test_llm_backend_by_import_path_gets_settings_and_key() -> None:
    settings = load_settings(llm={"backend": f"{HERE}:EchoLLM", "options": {"prefix": "E>"}, "max_tokens": 4})
    llm = make_llm(settings, api_key="secret")
    assert isinstance(llm, EchoLLM) and isinstance(llm, LLM) and llm.model == "echo+key"
    out = llm.chat([{"role": "user", "content": "one two three four five"}])
    assert (out.text, out.finish_reason) == ("E> one two three", "length")  # llm.max_tokens applied
    out = llm.complete("alpha beta STOP gamma", GenParams(max_tokens=10, stop=(" STOP",), logprobs=1))
    assert (out.text, out.finish_reason, [t.token for t in out.tokens]) == ("E> alpha beta", "stop", ["E>", "alpha", "beta"])
    bound = CancelToken(budget_s=5).bind(llm)
    assert "".join(bound.stream([{"role": "user", "content": "x y"}], max_tokens=2)) == "E> x "


def test_embed_backend_by_import_path() -> None:
    embed = load_settings(embed={"backend": f"{HERE}:HashingEmbedder", "options": {"dim": 16}}).embed
    embedder = make_embedder(embed)
    assert isinstance(embedder, HashingEmbedder) and isinstance(embedder, Embedder)
    q, p = embedder.embed_queries(["isoniazid liver"]), embedder.embed_passages(["isoniazid liver injury", "sepsis"])
    assert q.shape == (1, 16) and p.shape == (2, 16)
    assert float(q[0] @ p[0]) > float(q[0] @ p[1])


def test_built_in_names_still_win_and_bad_values_are_refused_early() -> None:
    assert make_llm(load_settings(llm={"backend": "extractive"})) is None
    assert is_import_path("a.b_c:D") and not is_import_path("llamacpp") and not is_import_path("a.b:")
    for bad in ("llama", HERE, "tests/test_plugins:EchoLLM", "a:b:c"):
        with pytest.raises(ConfigError, match="backend"):
            load_settings(llm={"backend": bad})


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("tests.no_such_module:EchoLLM", "cannot import tests.no_such_module"),
        (f"{HERE}:NoSuchClass", "has no class NoSuchClass"),
        (f"{HERE}:NotAModel", "not a LLM"),
    ],
)
def test_import_path_failures_are_config_errors(path: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        make_llm(load_settings(llm={"backend": path}))


def test_plugin_options_are_checked_by_the_plugin() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="prefx"):
        make_llm(load_settings(llm={"backend": f"{HERE}:EchoLLM", "options": {"prefx": "typo"}}))
