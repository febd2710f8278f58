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
from core.llm.budget import CancelToken, feature_budget
from core.privacy.text import escape_markdown
from pages._draft import flash, load_generated, state_key
from pages._shared import current_user, get_llm, get_remote_llm, remote_backend

if TYPE_CHECKING:
    from core.llm.base import LLM
    from core.reports.writer import DraftPlan
    from core.runtime import Runtime

MODES = ("auto", "local", "remote", "template")  # auto: the configured model, unless its estimate cannot fit


def _choose(scan_id: str, mode: str) -> None:
    st.session_state[f"{state_key(scan_id)}:run"] = mode


def _cancel(scan_id: str) -> None:
    token = st.session_state.pop(f"{state_key(scan_id)}:token", None)
    if isinstance(token, CancelToken):
        token.cancel()  # the rerun has already closed the stream; this stops a worker still reading the prompt
        flash("info", f"Cancelled after {token.elapsed():.0f} s: the model was stopped and nothing was saved.")


def _choices(scan_id: str, rt: Runtime) -> None:
    """The estimate and the three ways on, while a draft waits for the doctor's choice."""
    pending = st.session_state.get(f"{state_key(scan_id)}:choice")
    if not pending:
        return
    with st.container(border=True, key=f"draft-choice-{scan_id}"):
        st.warning(f"Local model: {pending['message']}. Not started: it would run out of time.", icon="⏱️")
        left, middle, right = st.columns(3)
        left.button(f"Run anyway (up to {pending['anyway_s']:.0f} s)", key=f"draft-anyway-{scan_id}",
                    on_click=_choose, args=(scan_id, "local"))  # fmt: skip
        remote = remote_backend(rt)
        middle.button(f"Use {remote or 'a remote backend'}", key=f"draft-remote-{scan_id}", disabled=remote is None,
                      on_click=_choose, args=(scan_id, "remote"),
                      help="Names are removed before anything leaves." if remote else "No remote backend has a key set.")  # fmt: skip
        right.button(
            "Template draft now", key=f"draft-template-{scan_id}", on_click=_choose, args=(scan_id, "template")
        )


def _model(rt: Runtime, mode: str) -> LLM | None:
    if mode == "template":
        return None
    return get_remote_llm(rt) if mode == "remote" else get_llm(rt)


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
    clock.caption(f"{writer} is starting…")
    with closing(stream_draft(rt, plan, llm, token, doctor_id=user.id if user else None)) as events:
        for event in events:
            if event.kind == "tick":
                clock.caption(f"{writer} is writing… {event.elapsed_s:.0f} s of {token.budget_s or 0:.0f} s · "
                              f"{event.chars} characters received; sections appear once they pass the answer rules.")  # fmt: skip
            elif event.kind == "section":
                checked.markdown("\n\n".join(f"**{k.upper()}** (checked): {escape_markdown(v)}"
                                             for k, v in event.sections.items()))  # fmt: skip
            else:
                draft = event.draft
    st.session_state.pop(f"{key}:token", None)
    live.empty()
    if draft is not None:
        load_generated(scan_id, draft)


def draft_generation(rt: Runtime, scan_id: str, requested: bool) -> None:
    """Start a draft when ``requested`` (the Generate button) or a choice was clicked; else show a pending choice."""
    key = state_key(scan_id)
    mode = "auto" if requested else st.session_state.pop(f"{key}:run", None)
    if mode not in MODES:
        _choices(scan_id, rt)
        return
    st.session_state.pop(f"{key}:choice", None)
    from core.reports.writer import plan_draft

    try:
        with st.spinner("Gathering the similar-case evidence…"):
            plan = plan_draft(rt, scan_id)
        llm = _model(rt, mode)
        budget, lift = feature_budget(rt.settings, "draft"), False
        estimate = plan.estimate(rt.settings, llm)
        if estimate is not None and not estimate.fits:
            if mode == "auto":  # never start work that is certain to time out: ask first
                st.session_state[f"{key}:choice"] = {"message": estimate.message(), "anyway_s": estimate.run_anyway_s()}
                _choices(scan_id, rt)
                return
            budget, lift = estimate.run_anyway_s(), True  # the doctor chose to wait
        if estimate is not None and estimate.seconds is not None:
            st.caption(f"Local model: {estimate.message()}.")
        _write(rt, scan_id, plan, llm, CancelToken(budget, lift_ceiling=lift))
    except CasebookError as exc:
        flash("error", f"Could not generate a draft: {exc}. {exc.hint}")
