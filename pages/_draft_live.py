"""Generating a report draft: the local model's estimate first, then a clock, checked sections and Cancel.

Nothing here writes a draft: the result goes into the editor (:mod:`pages._draft`) as an
unsaved draft. When the speed measured here says the local model cannot finish within
the drafts' budget, nothing starts; the doctor chooses to run it anyway (with a budget
that fits the estimate), to use the configured remote backend, or to take the template.
Cancel reruns the page: the rerun closes the stream (the backend stops between two
tokens) and the button's callback flashes what happened.
"""

from __future__ import annotations

from contextlib import closing
from typing import TYPE_CHECKING

import streamlit as st

from core.errors import CasebookError
from core.llm.budget import CancelToken
from core.llm.plan import plan_call
from pages._draft import flash, load_generated, state_key
from pages._model_choice import ChoiceBox, model_for
from pages._shared import current_user, feature_limit
from pages._text import inert

if TYPE_CHECKING:
    from core.llm.base import LLM
    from core.llm.plan import Choice
    from core.reports.writer import DraftPlan
    from core.runtime import Runtime


def _box(scan_id: str) -> ChoiceBox:
    """The drafts' choice when the local model cannot finish in time: run anyway, the remote backend, the template."""
    return ChoiceBox(state_key(scan_id), "draft", scan_id, "template", "Template draft now")


def _cancel(scan_id: str) -> None:
    token = st.session_state.pop(f"{state_key(scan_id)}:token", None)
    if isinstance(token, CancelToken):
        token.cancel()  # the rerun has already closed the stream; this stops a worker still reading the prompt
        flash("info", f"Cancelled after {token.elapsed():.0f} s: the model was stopped and nothing was saved.")


def _write(rt: Runtime, scan_id: str, plan: DraftPlan, llm: LLM | None, token: CancelToken) -> None:
    """Run the model with a clock, the checked sections and a Cancel button; load the result into the editor."""
    from core.reports.writer import stream_draft

    key = state_key(scan_id)
    user = current_user()
    live = st.empty()
    with live.container(border=True, key=f"draft-live-{scan_id}"):
        clock, checked = st.empty(), st.empty()
        if llm is not None:
            st.session_state[f"{key}:token"] = token
            st.button("Cancel", key=f"{key}:cancel", icon="⏹️", on_click=_cancel, args=(scan_id,),
                      help="Stop the model. Nothing is saved; the editor keeps what it had.")  # fmt: skip
    draft = None
    writer = f"The model ({llm.backend})" if llm is not None else "The template"
    clock.caption(f"{inert(writer)} is starting…")
    with closing(stream_draft(rt, plan, llm, token, doctor_id=user.id if user else None)) as events:
        for event in events:
            if event.kind == "tick":
                clock.caption(f"{inert(writer)} is writing… {event.elapsed_s:.0f} s of {token.budget_s or 0:.0f} s · "
                              f"{event.chars:d} characters received; sections appear once they pass the answer rules.")  # fmt: skip
            elif event.kind == "section":
                checked.markdown("\n\n".join(f"**{inert(k.upper())}** (checked): {inert(v)}"
                                             for k, v in event.sections.items()))  # fmt: skip
            else:
                draft = event.draft
    st.session_state.pop(f"{key}:token", None)
    live.empty()
    if draft is not None:
        load_generated(scan_id, draft)


def draft_generation(rt: Runtime, scan_id: str, requested: bool) -> None:
    """Start a draft when ``requested`` (the Generate button) or a choice was clicked; else show a pending choice."""
    box = _box(scan_id)
    choice: Choice | None = "auto" if requested else box.take()
    if choice is None:
        box.show(rt)
        return
    box.clear()
    from core.reports.writer import plan_draft

    try:
        with st.spinner("Gathering the similar-case evidence…"):
            plan = plan_draft(rt, scan_id)
        llm = model_for(rt, choice)
        call = plan_call(rt.settings, "draft", llm, plan.messages, choice)
        if call.waits:  # never start work that is certain to time out: ask first
            box.hold(call)
            box.show(rt)
            return
        if call.starts and (note := call.note()):
            st.caption(f"{inert(note)}.")
        with feature_limit("draft"):
            _write(rt, scan_id, plan, llm if call.starts else None, call.token())
    except CasebookError as exc:
        flash("error", f"Could not generate a draft: {exc}. {exc.hint}")
