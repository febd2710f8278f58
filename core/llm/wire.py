"""Parse the OpenAI chat/completions wire format into :class:`~core.llm.base.Completion`.

Shared by every backend that speaks the format (Groq, OpenAI-compatible servers,
xllamacpp's embedded llama.cpp server). Three log-probability shapes exist:

* chat style, also used by llama.cpp for plain completions:
  ``logprobs.content[i] = {"token", "logprob", "top_logprobs": [{"token", "logprob"}]}``;
* legacy completions (vLLM, OpenAI): ``logprobs = {"tokens", "token_logprobs", "top_logprobs": [{tok: lp}]}``;
* llama.cpp with ``post_sampling_probs``: ``"prob"``/``"top_probs"`` instead of log-probabilities.

Anything that does not fit raises :class:`~core.errors.BackendError`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from core.errors import BackendError
from core.llm.base import Completion, TokenLogprobs

__all__ = ["completion_from_response", "delta_from_chunk", "load_json", "tokens_from_logprobs"]


def load_json(text: str | bytes, *, backend: str) -> dict[str, Any]:
    """Decode a response body; anything but a JSON object is a :class:`BackendError`."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise BackendError(f"{backend}: the server answered with malformed JSON") from exc
    if not isinstance(data, dict):
        raise BackendError(f"{backend}: expected a JSON object, got {type(data).__name__}")
    return data


def _logprob(entry: Mapping[str, Any]) -> float:
    if "logprob" in entry:
        return float(entry["logprob"])
    prob = float(entry["prob"])
    return math.log(prob) if prob > 0 else -math.inf


def _top(entries: Any) -> dict[str, float]:
    pairs = [(str(e["token"]), _logprob(e)) for e in entries or ()]
    return dict(sorted(pairs, key=lambda p: p[1], reverse=True))


def tokens_from_logprobs(logprobs: Any) -> list[TokenLogprobs]:
    """Per-token log-probabilities from any of the three wire shapes (empty when absent)."""
    if not logprobs:
        return []
    if isinstance(logprobs, list):  # llama.cpp native completion_probabilities
        content = logprobs
    elif isinstance(logprobs, Mapping) and "content" in logprobs:
        content = logprobs["content"] or []
    elif isinstance(logprobs, Mapping) and "tokens" in logprobs:
        tops = logprobs.get("top_logprobs") or [{}] * len(logprobs["tokens"])
        return [
            TokenLogprobs(str(tok), float(lp), dict(sorted(top.items(), key=lambda p: p[1], reverse=True)))
            for tok, lp, top in zip(logprobs["tokens"], logprobs["token_logprobs"], tops, strict=True)
        ]
    else:
        raise TypeError(f"unknown logprobs shape: {type(logprobs).__name__}")
    return [
        TokenLogprobs(str(e["token"]), _logprob(e), _top(e.get("top_logprobs", e.get("top_probs")))) for e in content
    ]


def completion_from_response(data: Mapping[str, Any], *, backend: str, model: str) -> Completion:
    """Build a :class:`Completion` from a chat or plain completion response body."""
    try:
        choice = data["choices"][0]
        message = choice.get("message")
        text = message.get("content") or "" if message is not None else choice["text"]
        usage = data.get("usage") or {}
        tokens = tokens_from_logprobs(choice.get("logprobs") or data.get("completion_probabilities"))
        return Completion(
            text=str(text),
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            backend=backend,
            model=str(data.get("model") or model),
            tokens=tokens,
        )
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise BackendError(f"{backend}: response does not have the chat/completions shape ({type(exc).__name__})") from exc


def delta_from_chunk(chunk: Mapping[str, Any], *, backend: str) -> tuple[str, str | None]:
    """Text delta and finish reason of one streamed chunk (chat or plain completion)."""
    try:
        choices = chunk.get("choices") or []
        if not choices:  # a usage-only chunk
            return "", None
        choice = choices[0]
        delta = choice.get("delta")
        text = (delta.get("content") or "") if delta is not None else (choice.get("text") or "")
        return str(text), choice.get("finish_reason")
    except (TypeError, AttributeError) as exc:
        raise BackendError(f"{backend}: malformed stream chunk ({type(exc).__name__})") from exc
