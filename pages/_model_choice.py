"""The choice a page offers when the model is not started on its own (Ask AI and report drafts).

Two reasons, both decided in core: the local model cannot finish in time here, or (Ask AI) its
answers pass the output guard unchanged too rarely here (``ask.model_answers``).

:func:`core.llm.plan.plan_call` decides; this renders. When a plan :attr:`~core.llm.plan.CallPlan.waits`,
the page :meth:`ChoiceBox.hold` s it in the session and shows the box: the estimate, and
**Run anyway (up to N s)**, **Use groq/openai** (enabled when that backend has a key set)
and the feature's own way on without a model (Ask AI: keep the instant answer; drafts: the
template). A click stores the choice; the next run :meth:`ChoiceBox.take` s it and starts
the call that choice plans.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import streamlit as st

from pages._shared import get_llm, get_remote_llm, remote_backend
from pages._text import inert

if TYPE_CHECKING:
    from core.llm.base import LLM
    from core.llm.plan import CallPlan, Choice
    from core.runtime import Runtime


def model_for(rt: Runtime, choice: Choice) -> LLM | None:
    """The runtime's model that ``choice`` stands for: the remote one, none, or the configured one."""
    if choice == "none":
        return None
    return get_remote_llm(rt) if choice == "remote" else get_llm(rt)


@dataclass(frozen=True)
class ChoiceBox:
    """One feature's choice on one scan: where it waits in the session, its widget keys and its labels.

    Buttons are keyed ``<widget>-anyway-<ident>``, ``<widget>-remote-<ident>`` and
    ``<widget>-<none_key>-<ident>``; the box is ``<widget>-choice-<ident>``.
    """

    state: str  # session-state prefix, e.g. "draft:<scan>"
    widget: str  # widget-key prefix, e.g. "draft"
    ident: str  # e.g. the scan id
    none_key: str  # e.g. "template"
    none_label: str  # e.g. "Template draft now"
    note: str = ""  # said after "Not started: it would run out of time."

    def hold(self, plan: CallPlan, **extra: Any) -> None:
        """Keep a waiting plan's reason (and ``extra``, e.g. the question) until the doctor chooses."""
        held = {"message": plan.wait_message(), "anyway": plan.anyway_label(), **extra}
        st.session_state[f"{self.state}:choice"] = held

    def held(self) -> dict[str, Any] | None:
        """The plan waiting for a choice, if any."""
        held = st.session_state.get(f"{self.state}:choice")
        return held if isinstance(held, dict) else None

    def take(self) -> Choice | None:
        """The choice clicked since the last run (once), or None."""
        choice: Choice | None = st.session_state.pop(f"{self.state}:run", None)
        return choice

    def clear(self) -> dict[str, Any] | None:
        """Forget the waiting plan; returns what was held."""
        held = self.held()
        st.session_state.pop(f"{self.state}:choice", None)
        return held

    def _choose(self, choice: Choice) -> None:
        st.session_state[f"{self.state}:run"] = choice

    def show(self, rt: Runtime) -> None:
        """Why nothing started and the three ways on, while a plan waits (nothing when none does)."""
        held = self.held()
        if held is None:
            return
        w, i = self.widget, self.ident
        with st.container(border=True, key=f"{w}-choice-{i}"):
            st.warning(f"{inert(held['message'])} {inert(self.note)}".strip(), icon="⏱️")
            # one under another, full width: three columns cut the labels to "Ask t…" in Ask AI's narrow panel
            st.button(inert(str(held["anyway"])), key=f"{w}-anyway-{i}", width="stretch",
                      on_click=self._choose, args=("local",))  # fmt: skip
            remote = remote_backend(rt)
            st.button(f"Use {inert(remote or 'a remote backend')}", key=f"{w}-remote-{i}", disabled=remote is None,
                      on_click=self._choose, args=("remote",), width="stretch",
                      help="Names are removed before anything leaves." if remote else "No remote backend has a key set.")  # fmt: skip
            st.button(inert(self.none_label), key=f"{w}-{self.none_key}-{i}", on_click=self._choose, args=("none",),
                      width="stretch")  # fmt: skip
