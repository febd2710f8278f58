"""The Ask AI panel: conversation history, streamed answers, citation chips, badges, abstention banners."""

from __future__ import annotations

import time
from contextlib import closing
from typing import TYPE_CHECKING, Any

import streamlit as st

from core.answer.compose import carries_to_guidelines, is_pointer
from core.contracts import INSUFFICIENT_DATA, NO_COMPARABLE_CASES
from core.errors import CasebookError, ConflictError, RateLimitedError
from pages._model_choice import ChoiceBox, model_for
from pages._shared import show_error
from pages._text import inert
from pages._widgets import citation_chips, confidence_badge

if TYPE_CHECKING:
    from collections.abc import Iterator

    from core.answer.service import AskEvent, AskResult
    from core.auth import CurrentUser
    from core.llm.plan import Choice
    from core.runtime import Runtime

_ABSTAIN = {NO_COMPARABLE_CASES: "no comparable cases", INSUFFICIENT_DATA: "insufficient data"}
_REASONS = {
    "no_embedding": "this scan has no imaging embedding",
    "low_confidence": "the scan's AI confidence is below the safety threshold",
    "no_similar_cases": "no similar historical cases were found",
    "search_failed": "similar-case search failed",
}


def _assistant(content: str, cited: list[str], confidence: str | None, key: str, reason: str | None = None) -> None:
    if content in _ABSTAIN:
        why = _REASONS.get(reason or "", reason) if reason else _ABSTAIN[content]
        st.warning(f"**The AI abstained.** {inert(content)}\n\n{inert(why[0].upper() + why[1:])}", icon="🛑")
    else:
        st.markdown(inert(content))  # model text renders as plain text: no links, images or HTML
    if not is_pointer(content):  # a pointer to Guideline QA is no case-based answer: no evidence badge
        confidence_badge(confidence)
    citation_chips(cited, key)


GUIDELINE_PAGE = "pages/guideline_qa.py"
GUIDELINE_INPUT = "guideline-question"  # the question box of pages/_guideline.py


def _guideline_link(question: str, key: str) -> None:
    """Open Guideline QA with the question carried over into its question box."""
    if st.button("Ask Guideline QA instead", key=f"to-guidelines-{key}", icon="📚", type="primary"):
        st.session_state[GUIDELINE_INPUT] = question
        st.switch_page(GUIDELINE_PAGE)


def _status_line(result: AskResult) -> None:
    """One short line when the model was not used (timeout, failure, guard): the badge is the shown answer's."""
    if result.path == "extractive" and result.reason:
        st.caption(f"Model not used ({inert(result.reason)}): showing the answer computed from the similar cases.")


def _history(rt: Runtime, user: CurrentUser, scan_id: str) -> list[dict[str, Any]]:
    from core.answer.records import history

    return history(rt.db, scan_id, user.id)


def _box(scan_id: str) -> ChoiceBox:
    """Ask AI's choice when the local model cannot answer in time: run anyway, the remote backend, or no model."""
    return ChoiceBox(f"ask:{scan_id}", "ask", scan_id, "instant", "Keep the instant answer",
                     note="The instant answer above stands.")  # fmt: skip


CANCELLED_NOTE = "Cancelled: the model was stopped. The instant answer from the similar cases stands."
_FLASH = "ask_flash"


def _cancel(rt: Runtime, scan_id: str, doctor_id: int, instant: AskEvent, started: float) -> None:
    """The Cancel button's callback, run before the rerun paints: stop the model and free the scan in core.

    Streamlit starts that rerun beside the run still streaming (``runner.fastReruns``), which stops
    only at its next Streamlit call; the history and the next question must not wait for it.
    """
    from core.answer.service import cancel_answer

    if cancel_answer(rt, scan_id, doctor_id, instant):  # False: the answer had arrived first, and stands
        st.session_state[_FLASH] = (
            f"Cancelled after {time.monotonic() - started:.0f} s: the model was stopped. Ask again at once."
        )


def _ask(rt: Runtime, user: CurrentUser, scan_id: str, question: str, key: str, choice: Choice = "auto") -> None:
    from core.answer.service import stream_answer

    llm = model_for(rt, choice)
    # closing(): when this run is stopped (a Cancel or any other click), the stop unwinds through here and
    # closes the stream at once: the backend's connection is dropped and an unfinished question is stored
    # as cancelled, instead of whenever the garbage collector gets to the generator
    with closing(stream_answer(rt, scan_id, question, user.id, llm, choice)) as events:
        _show(rt, user, scan_id, question, key, events)


def _show(rt: Runtime, user: CurrentUser, scan_id: str, question: str, key: str, events: Iterator[AskEvent]) -> None:
    """Render one streamed answer: the instant answer, the model's progress and Cancel, then the final answer."""
    try:
        first = next(events)
    except RateLimitedError as exc:
        st.error(f"Rate limited, retry in {max(1, round(exc.retry_after_s)):d} s.", icon="⏳")
        return
    except ConflictError as exc:
        st.warning(f"{inert(exc)}. {inert(exc.hint)}", icon="⏳")
        return
    except CasebookError as exc:
        show_error("Ask AI could not answer", exc)
        return
    plan = first.plan
    runs = plan is not None and plan.starts
    box = st.empty()
    with box.container():
        st.markdown(inert(first.text))
        st.caption("Instant answer from the similar cases" + (" · the model is writing…" if runs else ""))
    if runs and plan is not None and (note := plan.note()):  # measured speed here, said up front
        st.caption(f"{inert(note)}. The instant answer stands if it runs out.")
    cancel = st.empty()  # emptied once the answer is final: a Cancel left under it would cancel nothing
    if runs:  # a click reruns the page, which closes the stream: the backend stops between two tokens
        cancel.button("Cancel", key=f"cancel-{key}", icon="⏹️", help="Stop the model; the instant answer stays.",
                      on_click=_cancel, args=(rt, scan_id, user.id, first, time.monotonic()))  # fmt: skip
    final: AskResult | None = first.result if first.result and first.result.path == "fixed" else None

    def deltas() -> Any:
        nonlocal final
        for ev in events:
            if ev.kind in ("delta", "tick"):  # a tick ("") moves the clock while the model reads the prompt
                yield ev.text
            elif ev.kind == "final":
                final = ev.result

    try:
        if runs and plan is not None:  # unchecked text is never shown: a temporary "writing…" line the answer replaces
            writing, received, started = st.empty(), 0, time.monotonic()
            for piece in deltas():
                received += len(piece)
                writing.caption(
                    f"The model is writing… {time.monotonic() - started:.0f} s of {plan.budget_s:g} s, "
                    f"{received:d} characters, shown once they pass the answer rules."
                )
            writing.empty()
        else:
            for _ in deltas():
                pass
    except CasebookError as exc:
        show_error("The answer stream failed", exc)
    cancel.empty()
    box.empty()
    result = final or first.result
    if result is None:
        return
    a = result.answer
    with box.container():
        _assistant(
            a.answer, list(a.citedCaseIds), a.confidence, key, result.abstention.reason if result.abstention else None
        )
        if plan is not None and plan.waits:  # nothing started: the doctor chooses how to go on
            _box(scan_id).hold(plan, question=question)
            _box(scan_id).show(rt)
        else:
            _status_line(result)
        if result.guideline_question:
            _guideline_link(result.guideline_question, key)


def chat_panel(rt: Runtime, user: CurrentUser, scan_id: str) -> None:
    """Ask AI about one scan (doctors only): history, then the question box and the streamed answer."""
    st.subheader("Ask AI")
    # the question box comes first: a keyboard user reaches it within three Tab presses of the image,
    # however long the conversation below it (each answer's sources are one tab stop)
    question = st.chat_input("Ask about this scan…", key="ask-input", max_chars=rt.settings.ask.max_question_chars)
    try:
        past = _history(rt, user, scan_id)
    except CasebookError as exc:
        show_error("Conversation history is unavailable", exc)
        past = []
    with st.container(key="chat-history"):
        if not past and not st.session_state.get("ask-input"):
            st.caption(
                "No questions on this scan yet. Answers cite similar case IDs or say there is not enough evidence."
            )
        for i, m in enumerate(past):
            with st.chat_message(m["role"]):
                if m["role"] == "user":
                    st.markdown(inert(m["content"]))
                elif m.get("pending"):
                    st.caption("Answer pending… it appears here when ready (reload to refresh).")
                else:
                    _assistant(m["content"], m["citedCaseIds"] or [], m["confidence"], f"{scan_id}-{i}")
                    if m.get("cancelled"):
                        st.caption(inert(CANCELLED_NOTE))
                    if carries_to_guidelines(m["content"]) and i > 0:
                        _guideline_link(past[i - 1]["content"], f"{scan_id}-{i}")
    if note := st.session_state.pop(_FLASH, None):
        st.info(inert(note), icon="⏹️")
    box = _box(scan_id)
    clicked = box.take()
    choice: Choice = "auto"
    if question or clicked:
        held = box.clear()  # a new question or a click ends the wait
        if not question and held and clicked in ("local", "remote"):
            question, choice = str(held["question"]), clicked  # asked again with the model the doctor chose
    box.show(rt)  # a choice still waiting stays under the history
    if question:
        with st.chat_message("user"):
            st.markdown(inert(question))
        with st.chat_message("assistant"):
            _ask(rt, user, scan_id, question, f"{scan_id}-{len(past) + 1}", choice)
