"""Time budgets, cancellation and speed estimates for language-model calls.

Every feature that calls a model has one budget (:func:`feature_budget`): Ask AI
(``ask.llm_budget_s``), report drafts, the Guideline QA writer and one Self-RAG stage
(``llm.budget_*_s``), each capped by ``llm.timeout_s``. A :class:`CancelToken` carries
that budget and a Cancel flag to the backend, which stops generation itself when either
fires (llama.cpp and transformers read it between tokens) instead of running on in a
thread nobody waits for::

    token = CancelToken(feature_budget(settings, "draft"))
    reply = token.bind(llm).chat(messages)      # stops at the budget, or when token.cancel() is called

:class:`~core.llm.speed.SpeedMeter` keeps the prompt and generation speed the local model
showed on this machine (from every call, persisted under the data folder by :func:`attach_meter`),
so a caller can say up front "the local model needs about 40 s here" and never start work that
is certain to time out (:func:`estimate`), while a slow estimate taken under load is re-tried
once the load drops (:meth:`~core.llm.speed.SpeedMeter.stale`).
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
from core.llm.speed import SpeedMeter, load_now

if TYPE_CHECKING:
    from core.llm.base import LLM, Completion, Message
    from core.settings import Settings

__all__ = [
    "FEATURES",
    "SPEED_FILE",
    "CancelToken",
    "Estimate",
    "Feature",
    "SpeedMeter",
    "attach_meter",
    "budget_rows",
    "current_token",
    "estimate",
    "feature_budget",
    "load_now",
    "speed_line",
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

    def __init__(self, budget_s: float | None = None, *, lift_ceiling: bool = False, started: float | None = None) -> None:
        self.budget_s = budget_s
        self.lift_ceiling = lift_ceiling  # a doctor chose "run anyway": this budget, not llm.timeout_s, stops the model
        # ``started`` (time.monotonic()): when the doctor asked, so work done before the model call (the instant
        # answer, a cold start) counts against the budget too; default now
        self.started = time.monotonic() if started is None else started
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


_METER = SpeedMeter()


SPEED_FILE = "llm_speed.json"  # under paths.data_dir


def speed_meter() -> SpeedMeter:
    """The process-wide meter the local backend feeds."""
    return _METER


def attach_meter(settings: Settings) -> SpeedMeter:
    """The process-wide meter with the ``llm.speed_*`` settings, persisted in ``<data_dir>/llm_speed.json``."""
    llm = settings.llm
    _METER.configure(
        half_life_s=llm.speed_half_life_s, load_ratio=llm.speed_retry_load_ratio, retry_after_s=llm.speed_retry_after_s
    )
    _METER.attach(settings.paths.resolve(settings.paths.data_dir) / SPEED_FILE)
    return _METER


def speed_line(settings: Settings, now: float | None = None) -> str:
    """One sentence for Settings / Status: the measured speed, when and under what load, or that none is measured."""
    r = attach_meter(settings).reading()
    if r.measured_at is None:
        return "Local model speed: no speed measured yet on this machine (the first call measures it)."
    now = time.time() if now is None else now
    ago = max(0.0, now - r.measured_at)
    when = f"{ago:.0f} s ago" if ago < 120 else f"{ago / 60:.0f} min ago" if ago < 7200 else f"{ago / 3600:.0f} h ago"
    at = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(r.measured_at))
    speeds = ", ".join(
        f"{label} {v:.1f} tokens/s" for label, v in (("reads", r.prompt_tps), ("writes", r.gen_tps)) if v is not None
    )
    load = "" if r.load is None else f" at load average {r.load:.1f}"
    how = " (last call cut at its budget or cancelled)" if r.partial else ""
    retry = " A slow estimate is re-tried once the load drops to half or after " f"{settings.llm.speed_retry_after_s / 60:g} min."
    return f"Local model speed: {speeds}{load}, measured {when} ({at}, {r.samples} calls){how}.{retry}"


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
