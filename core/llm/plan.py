"""Before a model call starts: the local model's estimate here, and what to do when it cannot fit.

Ask AI and report drafts share this one path (issue 17: never start work that is certain
to time out). :func:`local_estimate` says how long a call to the local model should take
at the speed measured on this machine; :func:`plan_call` turns it and the doctor's
:data:`Choice` into a :class:`CallPlan`:

* ``auto`` (the first try): the configured model within the feature's budget, unless the
  local model's estimate cannot fit that budget. Then nothing starts (:attr:`CallPlan.waits`)
  and the page offers the other choices, while the answer that needs no model (Ask AI's
  instant answer, the template draft) stands. A slow estimate that is stale (the load fell
  well below the load it was measured under, or it is old: :meth:`core.llm.speed.SpeedMeter.stale`)
  does not refuse: the call runs as a trial (:attr:`CallPlan.trial`) with the budget as its cap,
  and what it measures, finished or cut, replaces the estimate;
* ``local`` ("Run anyway"): the local model, with a budget half as long again as the estimate
  (:meth:`Estimate.run_anyway_s`) that the backend's ``llm.timeout_s`` ceiling yields to;
* ``remote``: the remote backend that has a key set (:attr:`core.runtime.Runtime.remote_backend`),
  within the feature's budget;
* ``none``: no model call (the instant answer or the template stands).

Ask AI under ``auto`` also asks :func:`core.llm.acceptance.hold_reason` first: when the model's
answers pass the output guard unchanged too rarely (``ask.model_answers``, measured per model),
nothing starts either (:attr:`CallPlan.held_back` says why, with the figures), and ``local``
asks it anyway.

::

    plan = plan_call(settings, "ask", llm, messages)
    if plan.waits:
        offer_choices(plan.estimate.message(), plan.estimate.run_anyway_s())
    elif plan.starts:
        text = plan.token().bind(llm).chat(messages)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from core.llm.acceptance import hold_reason
from core.llm.budget import CancelToken, Estimate, Feature, estimate, feature_budget, speed_meter
from core.llm.speed import load_for_retry

if TYPE_CHECKING:
    from core.llm.base import LLM, Message
    from core.settings import Settings

__all__ = ["CHOICES", "CallPlan", "Choice", "local_estimate", "plan_call"]

Choice = Literal["auto", "local", "remote", "none"]
CHOICES: tuple[Choice, ...] = ("auto", "local", "remote", "none")
LOCAL_BACKEND = "llamacpp"  # the one backend whose speed this machine decides (core.llm.llamacpp feeds the meter)


def local_estimate(
    settings: Settings, feature: Feature, llm: LLM | None, messages: Sequence[Message] | None
) -> Estimate | None:
    """The local model's expected seconds for ``messages`` here (None: no local model call, or no prompt).

    The fixed system prompt is not counted: llama.cpp keeps it in its prompt cache.
    """
    if llm is None or llm.backend != LOCAL_BACKEND or not messages:
        return None
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    return estimate(settings, feature, messages, cached_chars=len(system))


@dataclass(frozen=True)
class CallPlan:
    """How one model call will run: its budget, the estimate behind it, or that it waits for the doctor."""

    choice: Choice
    budget_s: float
    estimate: Estimate | None = None  # the local model's (None: a remote model, no model, or no prompt)
    lift_ceiling: bool = False  # "run anyway": this budget, not llm.timeout_s, stops the model
    waits: bool = False  # nothing starts (the estimate cannot fit, or held_back) until the doctor chooses
    trial: bool = False  # the estimate says it cannot fit, but it is stale: re-measure within the budget
    held_back: str | None = None  # Ask AI: why the model is not asked on its own (its measured guard pass rate)

    @property
    def starts(self) -> bool:
        """True when the model call should start now."""
        return not self.waits and self.choice != "none"

    def token(self, started: float | None = None) -> CancelToken:
        """A fresh token for the call: this plan's budget (and Cancel), counted from ``started`` (monotonic; default now)."""
        return CancelToken(self.budget_s, lift_ceiling=self.lift_ceiling, started=started)

    def wait_message(self) -> str:
        """Why nothing started, for the doctor's choice: the measured pass rate, or the estimate that cannot fit."""
        if self.held_back is not None:
            return self.held_back
        assert self.estimate is not None, "only a plan with a local estimate waits for time"
        return f"Local model: {self.estimate.message()}. Not started: it would run out of time."

    def why(self) -> str:
        """The short reason stored with an answer nothing was started for."""
        if self.held_back is not None:
            return self.held_back.removeprefix("Instant answer only: ")
        return self.estimate.message() if self.estimate is not None else "no model call"

    def anyway_s(self) -> float:
        """The budget a "local" choice gets: the estimate's longer one when it cannot fit, else this budget."""
        if self.estimate is not None and not self.estimate.fits:
            return self.estimate.run_anyway_s()
        return self.budget_s

    def anyway_label(self) -> str:
        """The button that asks the model anyway."""
        who = "the local model" if self.estimate is not None else "the model"  # only the local model has an estimate
        ask = f"Ask {who} anyway" if self.held_back is not None else "Run anyway"
        return f"{ask} (up to {self.anyway_s():.0f} s)"

    def note(self) -> str | None:
        """One line for the page while the local model runs, e.g. "Local model: ... needs about 40 s here (budget 60 s)"."""
        if self.estimate is None:
            return None
        if self.trial:
            return f"Local model: re-measuring its speed (the last estimate was taken under more load), {self.estimate.message()}"
        return f"Local model: {self.estimate.message()}"


def plan_call(
    settings: Settings,
    feature: Feature,
    llm: LLM | None,
    messages: Sequence[Message] | None,
    choice: Choice = "auto",
    load: float | None = None,
) -> CallPlan:
    """How ``feature``'s call of ``llm`` on ``messages`` runs under ``choice`` (see the module docstring).

    ``llm`` is the model the choice stands for (the configured one for ``auto`` and ``local``,
    the remote one for ``remote``); ``None`` or an empty prompt plans no call. ``load``: the load
    now (None: :func:`~core.llm.speed.load_for_retry`, the load average or, when it lags a drop, what runs now).
    """
    budget = feature_budget(settings, feature)
    if choice == "none" or llm is None or not messages:
        return CallPlan("none", budget)
    est = local_estimate(settings, feature, llm, messages)
    if choice == "auto" and feature == "ask" and (why := hold_reason(settings, llm)) is not None:
        return CallPlan(choice, budget, est, waits=True, held_back=why)  # its answers rarely pass the guard here
    if est is None or est.fits:
        return CallPlan(choice, budget, est)
    if choice == "auto":
        if speed_meter().stale(load_for_retry() if load is None else load):  # measured under more load, or long ago
            return CallPlan(choice, budget, est, trial=True)
        return CallPlan(choice, budget, est, waits=True)  # never start work the measured speed says cannot finish
    return CallPlan(choice, est.run_anyway_s(), est, lift_ceiling=True)  # the doctor chose to wait
