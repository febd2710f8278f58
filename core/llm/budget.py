"""Time budgets, cancellation and speed estimates for language-model calls.

Every feature that calls a model has one budget (:func:`feature_budget`): Ask AI
(``ask.llm_budget_s``), report drafts, the Guideline QA writer and one Self-RAG stage
(``llm.budget_*_s``), each capped by ``llm.timeout_s``. A :class:`CancelToken` carries
that budget and a Cancel flag to the backend, which stops generation itself when either
fires (llama.cpp and transformers read it between tokens) instead of running on in a
thread nobody waits for::

    token = CancelToken(feature_budget(settings, "draft"))
    reply = token.bind(llm).chat(messages)      # stops at the budget, or when token.cancel() is called

:class:`SpeedMeter` keeps the prompt and generation speed the local model showed on this
machine, so a caller can say up front "the local model needs about 40 s here" and never
start work that is certain to time out (:func:`estimate`).
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Unpack

from core.errors import BackendCancelledError, BackendTimeoutError
from core.llm.base import GenOptions, GenParams

if TYPE_CHECKING:
    from core.llm.base import LLM, Completion, Message
    from core.settings import Settings

__all__ = [
    "FEATURES",
    "CancelToken",
    "Estimate",
    "Feature",
    "SpeedMeter",
    "budget_rows",
    "current_token",
    "estimate",
    "feature_budget",
    "speed_meter",
    "typical_estimate",
]

Feature = Literal["ask", "draft", "guideline", "selfrag"]
FEATURES: dict[Feature, str] = {
    "ask": "Ask AI",
    "draft": "Report drafts",
    "guideline": "Guideline QA writer",
    "selfrag": "Self-RAG stage",
}
CHARS_PER_TOKEN = 2.4  # Qwen2.5 BPE: an Ask AI prompt of 1,734 characters (English + JSON) read as 730 tokens
TYPICAL_ANSWER_TOKENS = 128  # Ask AI answers were 36-82 tokens, drafts about 120 (docs/benchmarks/ask.md)

_TOKEN: contextvars.ContextVar[CancelToken | None] = contextvars.ContextVar("casebook_llm_token", default=None)


def feature_budget(settings: Settings, feature: Feature) -> float:
    """Seconds a model call of ``feature`` may take: its own budget, capped by ``llm.timeout_s``."""
    own = {
        "ask": settings.ask.llm_budget_s,
        "draft": settings.llm.budget_draft_s,
        "guideline": settings.llm.budget_guideline_s,
        "selfrag": settings.llm.budget_selfrag_s,
    }[feature]
    return min(own, settings.llm.timeout_s)


class CancelToken:
    """A deadline and a Cancel flag shared by the caller (UI) and the backend doing the work."""

    def __init__(self, budget_s: float | None = None, *, lift_ceiling: bool = False) -> None:
        self.budget_s = budget_s
        self.lift_ceiling = lift_ceiling  # a doctor chose "run anyway": this budget, not llm.timeout_s, stops the model
        self.started = time.monotonic()
        self.deadline = None if budget_s is None else self.started + budget_s
        self._event = threading.Event()

    def cancel(self) -> None:
        """Ask the backend to stop as soon as it can (between two tokens)."""
        self._event.set()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._event.is_set()

    def elapsed(self) -> float:
        """Seconds since the token was made."""
        return time.monotonic() - self.started

    def remaining(self) -> float | None:
        """Seconds left in the budget (None: no budget)."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    def expired(self) -> bool:
        """True once the budget is spent."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def stop_reason(self) -> str | None:
        """``cancelled``, ``budget`` or None while work may go on."""
        if self.cancelled:
            return "cancelled"
        return "budget" if self.expired() else None

    @contextmanager
    def active(self) -> Iterator[CancelToken]:
        """Make this the token backends see in the current thread (and threads started from its context)."""
        reset = _TOKEN.set(self)
        try:
            yield self
        finally:
            try:
                _TOKEN.reset(reset)
            except ValueError:  # a stream closed from another context: clear it there instead
                _TOKEN.set(None)

    def bind(self, llm: LLM) -> LLM:
        """``llm`` whose every call runs under this token, in whatever thread calls it."""
        return _Bound(llm, self)


def current_token() -> CancelToken | None:
    """The token of the call running in this context, if any (read by the backends)."""
    return _TOKEN.get()


class _Bound:
    """An LLM whose calls run with a token active; streams stop when the token fires."""

    def __init__(self, llm: LLM, token: CancelToken) -> None:
        self._llm, self._token = llm, token
        self.backend, self.model = llm.backend, llm.model

    def chat(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Completion:
        with self._token.active():
            return self._llm.chat(messages, GenParams.of(params, **options))

    def complete(self, prompt: str, params: GenParams | None = None, **options: Unpack[GenOptions]) -> Completion:
        with self._token.active():
            return self._llm.complete(prompt, GenParams.of(params, **options))

    def stream(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Iterator[str]:
        with self._token.active():
            stream = self._llm.stream(messages, GenParams.of(params, **options))
            try:
                for delta in stream:
                    yield delta
                    reason = self._token.stop_reason()
                    if reason == "cancelled":  # closing the stream (finally) stops the backend's generation
                        raise BackendCancelledError(f"cancelled after {self._token.elapsed():.1f} s")
                    if reason == "budget":
                        raise BackendTimeoutError(f"the model ran past its budget of {self._token.budget_s:g} s")
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()


@dataclass(frozen=True)
class Estimate:
    """How long a call should take here, against its budget."""

    seconds: float | None  # None: no measurement yet on this machine
    budget_s: float
    prompt_s: float | None  # reading the prompt alone (a lower bound)

    @property
    def fits(self) -> bool:
        """True when the estimate is within the budget (or unknown)."""
        return self.seconds is None or self.seconds <= self.budget_s

    @property
    def certain_to_time_out(self) -> bool:
        """True when even reading the prompt would take longer than the budget."""
        return self.prompt_s is not None and self.prompt_s > self.budget_s

    def run_anyway_s(self) -> float:
        """The budget for "run anyway": half as long again as the estimate, never less than the feature's budget."""
        return max(self.budget_s, float(math.ceil(1.5 * (self.seconds or 0.0))))

    def message(self) -> str:
        """A sentence for the UI, e.g. "the local model needs about 40 s here (budget 45 s)"."""
        if self.seconds is None:
            return f"no speed measured yet on this machine (budget {self.budget_s:g} s)"
        return f"the local model needs about {self.seconds:.0f} s here (budget {self.budget_s:g} s)"


class SpeedMeter:
    """Prompt-reading and generation speed of the local model, from its own timings (thread-safe)."""

    def __init__(self, smoothing: float = 0.5) -> None:
        self._lock = threading.Lock()
        self._a = smoothing
        self.prompt_tps: float | None = None
        self.gen_tps: float | None = None
        self.threads: int | None = None

    def record(self, prompt_tokens: int, prompt_ms: float, gen_tokens: int, gen_ms: float, threads: int) -> None:
        """Fold one call's llama.cpp timings in (exponential average; a thread change restarts it)."""
        with self._lock:
            if threads != self.threads:
                self.prompt_tps = self.gen_tps = None
                self.threads = threads
            if prompt_tokens >= 16 and prompt_ms > 0:  # a tiny (cached) prompt says little about speed
                tps = prompt_tokens / (prompt_ms / 1000)
                self.prompt_tps = tps if self.prompt_tps is None else self._a * tps + (1 - self._a) * self.prompt_tps
            if gen_tokens >= 4 and gen_ms > 0:
                tps = gen_tokens / (gen_ms / 1000)
                self.gen_tps = tps if self.gen_tps is None else self._a * tps + (1 - self._a) * self.gen_tps

    def seconds(self, prompt_tokens: int, new_tokens: int) -> tuple[float | None, float | None]:
        """(total, prompt-only) seconds for a call, or (None, None) before any measurement."""
        with self._lock:
            if self.prompt_tps is None:
                return None, None
            prompt_s = prompt_tokens / self.prompt_tps
            gen = new_tokens / self.gen_tps if self.gen_tps else 0.0
            return prompt_s + gen, prompt_s


_METER = SpeedMeter()


def speed_meter() -> SpeedMeter:
    """The process-wide meter the local backend feeds."""
    return _METER


def estimate(
    settings: Settings,
    feature: Feature,
    messages: Sequence[Message],
    new_tokens: int | None = None,
    cached_chars: int = 0,
) -> Estimate:
    """Expected seconds for ``messages`` with the local model here, against ``feature``'s budget.

    ``cached_chars``: leading prompt characters llama.cpp already holds (the fixed system prompt).
    """
    chars = max(0, sum(len(m["content"]) for m in messages) - cached_chars)
    new = new_tokens or min(settings.llm.max_tokens, TYPICAL_ANSWER_TOKENS)
    total, prompt = _METER.seconds(int(chars / CHARS_PER_TOKEN), new)
    return Estimate(total, feature_budget(settings, feature), prompt)


def budget_rows(settings: Settings, typical_prompt_tokens: int = 600) -> list[dict[str, Any]]:
    """One row per feature for Settings / Status: the budget the model is really stopped at, and an estimate.

    ``typical_prompt_tokens``: the Ask AI prompts measured were 479-730 tokens.
    """
    total, _ = _METER.seconds(typical_prompt_tokens, min(settings.llm.max_tokens, TYPICAL_ANSWER_TOKENS))
    rows = []
    for feature, label in FEATURES.items():
        budget = feature_budget(settings, feature)
        rows.append(
            {
                "feature": label,
                "budget (s)": budget,
                "the model is stopped at (s)": budget,
                "typical call here (s)": None if total is None else round(total, 1),
                "fits": None if total is None else total <= budget,
            }
        )
    return rows


def typical_estimate(settings: Settings, feature: Feature, prompt_tokens: int = 730) -> Estimate:
    """The estimate for a typical call of ``feature`` here (an uncached 730-token Ask AI prompt, 128 new tokens)."""
    total, prompt = _METER.seconds(prompt_tokens, min(settings.llm.max_tokens, TYPICAL_ANSWER_TOKENS))
    return Estimate(total, feature_budget(settings, feature), prompt)
