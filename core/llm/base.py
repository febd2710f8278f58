"""The language-model protocol and its typed results.

Every backend (``llamacpp``, ``groq``, ``openai``, ``transformers``) satisfies
:class:`LLM`. A request's generation parameters travel as one :class:`GenParams`
(or as its fields given as keywords: ``llm.chat(messages, max_tokens=8)``);
``max_tokens``, ``temperature`` and ``seed`` left as ``None`` take the values
from :class:`core.config.llm.LLMSettings`, so no number is defaulted twice.
Failures raise the :mod:`core.errors` tree:

    BackendError          5xx, malformed JSON, a stream cut midway, a model that will not load
    ├── BackendTimeoutError   past the call's budget (:mod:`core.llm.budget`), or certain to be
    ├── BackendCancelledError the caller's :class:`~core.llm.budget.CancelToken` was cancelled
    └── BackendAuthError      401/403: the key is missing or refused
    RateLimitedError      429; ``retry_after_s`` comes from the Retry-After header
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, Unpack, runtime_checkable

if TYPE_CHECKING:
    from core.config.llm import LLMSettings

__all__ = ["LLM", "Completion", "GenOptions", "GenParams", "Message", "TokenLogprobs", "truncate_at_stop"]


class Message(TypedDict):
    """One chat turn in the OpenAI shape: ``{"role": "user", "content": "..."}``."""

    role: str
    content: str


class GenOptions(TypedDict, total=False):
    """The fields of :class:`GenParams` as keyword arguments of :meth:`LLM.chat`, ``complete`` and ``stream``."""

    max_tokens: int | None
    temperature: float | None
    stop: Sequence[str] | None
    logprobs: int | None
    seed: int | None
    grammar: str | None


@dataclass(frozen=True)
class GenParams:
    """What one generation request asks for, beside its prompt.

    ``None`` in ``max_tokens``, ``temperature`` or ``seed`` means the value in
    ``LLMSettings`` (:meth:`resolved` fills them in). ``logprobs=k`` asks for the
    top-k alternatives of every token (``chat`` and ``complete``; a stream has none).
    A ``seed`` left as ``None`` is not sent to a remote server. ``grammar`` is a llama.cpp GBNF
    grammar the reply must match (Ask AI's citations, :func:`core.answer.prompt.ask_grammar`); only
    the ``llamacpp`` backend honours it, the others ignore it and send nothing for it.
    """

    max_tokens: int | None = None
    temperature: float | None = None
    stop: tuple[str, ...] = ()
    logprobs: int | None = None
    seed: int | None = None
    grammar: str | None = None

    @classmethod
    def of(cls, params: GenParams | None = None, **options: Unpack[GenOptions]) -> GenParams:
        """``params`` (or the defaults) with the keyword ``options`` laid over it."""
        base = params if params is not None else cls()
        if not options:
            return base
        merged: dict[str, Any] = asdict(base) | dict(options)
        merged["stop"] = tuple(merged["stop"] or ())
        return cls(**merged)

    def resolved(self, settings: LLMSettings) -> GenParams:
        """These parameters with ``max_tokens`` and ``temperature`` taken from ``settings`` where unset."""
        return replace(
            self,
            max_tokens=settings.max_tokens if self.max_tokens is None else self.max_tokens,
            temperature=settings.temperature if self.temperature is None else self.temperature,
        )


@dataclass(frozen=True)
class TokenLogprobs:
    """One generated token, its log-probability and the top alternatives at that step.

    ``top`` maps token text to natural-log probability, best first. Take
    ``math.exp`` before comparing or summing: these are not probabilities.
    """

    token: str
    logprob: float
    top: dict[str, float] = field(default_factory=dict)

    def prob(self, token: str) -> float:
        """Probability of ``token`` at this step (0.0 when it is not among the top alternatives)."""
        lp = self.top.get(token)
        return math.exp(lp) if lp is not None else 0.0


@dataclass(frozen=True)
class Completion:
    """What a backend returned for one request."""

    text: str
    finish_reason: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    backend: str
    model: str
    tokens: list[TokenLogprobs] = field(default_factory=list)
    # What the backend measured, when it says: first_token_s, cached_prompt_tokens, prompt_tps, gen_tps
    timings: dict[str, float] = field(default_factory=dict)


@runtime_checkable
class LLM(Protocol):
    """A chat model that can also continue a raw prompt and report token log-probabilities."""

    backend: str
    model: str

    def chat(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Completion:
        """Answer a conversation; ``logprobs=k`` asks for the top-k alternatives of every token."""
        ...

    def stream(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Iterator[str]:
        """Answer a conversation, yielding text deltas as they arrive."""
        ...

    def complete(self, prompt: str, params: GenParams | None = None, **options: Unpack[GenOptions]) -> Completion:
        """Continue a raw prompt (no chat template added by us)."""
        ...


def truncate_at_stop(text: str, stop: Sequence[str] | None) -> tuple[str, bool]:
    """Cut ``text`` before the first stop string; returns the text and whether a stop was found."""
    cut = min((i for s in stop or () if s and (i := text.find(s)) >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)
