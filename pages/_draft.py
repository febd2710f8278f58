"""The draft editor: generated into the session, autosaved once edited, saved explicitly, signed after confirmation.

State per scan lives in ``st.session_state["draft:<scan_id>"]``: ``draft_id``
(``None`` until saved) and ``saved`` (the texts as last saved), so the page can
say "Unsaved draft" whenever the editor differs from what the database holds.
Each committed edit of a section (the box loses focus) autosaves the editor as the
doctor's own unsigned draft (:func:`core.reports.autosave_draft`); a page opened with
no draft in the session reopens the doctor's newest open draft of the scan with a
"restored" note (:func:`core.reports.restorable_draft`), so a reload (F5) loses nothing
committed, and :mod:`pages._leave_guard` warns before leaving while a box is being typed in.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import streamlit as st

from core.errors import CasebookError
from pages._text import inert

if TYPE_CHECKING:
    from core.auth import CurrentUser
    from core.reports import DraftRow, DraftText
    from core.runtime import Runtime

SECTIONS = ("comparison", "findings", "impression", "recommendations")
_HELP = {
    "comparison": "Prior signed reports of this patient, by date, labelled prior. Stored as the first paragraph of FINDINGS.",
    "findings": "The current scan only. The AI reading stays marked 'AI reading, not verified' until you verify it.",
    "impression": "Your conclusion. Similar-case IDs stay beside the report (the evidence), not in its text.",
    "recommendations": "Follow-up wording only; treatment belongs in the clinical record, not the report draft.",
}
FLASH = "draft_flash"


def state_key(scan_id: str) -> str:
    """Session key of the draft being edited for ``scan_id``."""
    return f"draft:{scan_id}"


def flash(kind: str, message: str) -> None:
    """Show ``message`` above the editor on the next run (``success``, ``info`` or ``error``)."""
    st.session_state[FLASH] = (kind, message)


def _load(
    scan_id: str,
    texts: dict[str, str],
    *,
    draft_id: int | None,
    saved: bool,
    version: int = 0,
    author: str | None = None,
) -> None:
    key = state_key(scan_id)
    for s in SECTIONS:
        st.session_state[f"{key}:{s}"] = texts[s]
    st.session_state[f"{key}:confirm"] = False
    st.session_state[key] = {
        "draft_id": draft_id,
        "saved": dict(texts) if saved else None,
        "version": version,
        "author": author,
    }


def load_generated(scan_id: str, draft: DraftText) -> None:
    """Put a generated draft into the editor as an unsaved draft, with who wrote it and the evidence beside it."""
    note = f"Written by the {draft.author}" + (f" ({draft.reason})." if draft.reason else ".")
    if draft.evidence:
        note += f" Evidence kept beside the report: {', '.join(draft.evidence)}."
    _load(scan_id, draft.sections(), draft_id=None, saved=False, author=note)


def open_saved(draft: DraftRow) -> None:
    """Put a saved draft into the editor."""
    from core.reports import split_findings

    comparison, findings = split_findings(draft.findings)
    texts = {
        "comparison": comparison,
        "findings": findings,
        "impression": draft.impression,
        "recommendations": draft.recommendations,
    }
    _load(draft.scan_id, texts, draft_id=draft.id, saved=True, version=draft.version)


def _current(key: str) -> dict[str, str]:
    return {s: str(st.session_state.get(f"{key}:{s}", "")) for s in SECTIONS}


def _autosave(rt: Runtime, user: CurrentUser, scan_id: str) -> None:
    """A section's change callback: keep the editor as the doctor's unsigned draft (never signs)."""
    from core.reports import autosave_draft

    key = state_key(scan_id)
    state, texts = st.session_state.get(key), _current(key)
    if state is None or state["saved"] == texts:
        return
    try:
        done = autosave_draft(rt.db, scan_id, user.id, texts, draft_id=state["draft_id"], version=state["version"])
    except CasebookError as exc:  # signed or changed elsewhere: nothing written, the text stays in the editor
        flash("error", f"Could not autosave the draft: {exc}. {exc.hint}")
        return
    if done.skipped is None:
        state.update(
            draft_id=done.draft_id,
            version=done.version,
            saved=texts,
            autosaved=time.strftime("%H:%M:%S", time.gmtime()),
        )


def _restore(rt: Runtime, user: CurrentUser, scan_id: str) -> dict[str, Any] | None:
    """Reopen the doctor's newest unsigned draft of the scan in an empty editor (after a reload), with its note."""
    from core.reports import restorable_draft, restored_note

    row = restorable_draft(rt.db, scan_id, user.id)
    if row is None:
        return None
    open_saved(row)
    state: dict[str, Any] = st.session_state[state_key(scan_id)]
    state["restored"] = restored_note(row)
    return state


def _save(rt: Runtime, user: CurrentUser, scan_id: str, state: dict[str, Any]) -> None:
    from core.reports import DraftText, join_findings, save_draft

    texts = _current(state_key(scan_id))
    draft = DraftText(
        join_findings(texts["comparison"], texts["findings"]), texts["impression"], texts["recommendations"]
    )
    try:
        state["draft_id"] = save_draft(
            rt.db, scan_id, user.id, draft, draft_id=state["draft_id"], expected_version=state["version"]
        )
    except CasebookError as exc:  # a stale edit (ConflictError) keeps the doctor's text in the editor
        flash("error", f"Could not save the draft: {exc}. {exc.hint}")
        return
    state["saved"], state["version"] = texts, state["version"] + 1  # a new draft is version 1
    state["autosaved"] = None
    flash("success", f"Saved draft #{state['draft_id']}.")


def _sign(rt: Runtime, user: CurrentUser, scan_id: str, state: dict[str, Any], signing: dict[str, Any]) -> None:
    from core.reports import sign_draft

    kwargs = {k: v for k, v in signing.items() if k != "ready"}
    try:
        report_id = sign_draft(rt.db, state["draft_id"], user.id, expected_version=state["version"], **kwargs)
    except CasebookError as exc:
        flash("error", f"Could not sign the report: {exc}. {exc.hint}")
        return
    st.session_state.pop(state_key(scan_id), None)
    st.session_state[f"{state_key(scan_id)}:confirm"] = False
    flash("success", f"Signed report #{report_id}. It is now read-only.")


def draft_editor(rt: Runtime, user: CurrentUser, scan_id: str) -> None:
    """COMPARISON / FINDINGS / IMPRESSION / RECOMMENDATIONS editor with autosave, Save and a confirmed Sign."""
    from pages._leave_guard import leave_guard

    key = state_key(scan_id)
    slot = st.empty()  # always one element here, so the widgets below keep their places between runs
    if shown := st.session_state.pop(FLASH, None):
        {"success": slot.success, "info": slot.info}.get(shown[0], slot.error)(inert(shown[1]))
    state = st.session_state.get(key) or _restore(rt, user, scan_id)
    if state is None:
        st.caption("No draft in progress for this scan.")
        return
    texts = _current(key)
    unsaved = state["saved"] != texts
    if state.get("restored"):
        st.info(inert(state["restored"]), icon="🔄")
    if state["draft_id"] is None:
        st.badge("Unsaved draft", icon="✏️", color="orange")
    elif unsaved:
        st.badge(f"Draft #{state['draft_id']:d} · unsaved changes", icon="✏️", color="orange")
    elif state.get("autosaved"):
        st.badge(
            f"Draft #{state['draft_id']:d} · autosaved {inert(state['autosaved'])} UTC, not signed",
            icon="💾",
            color="blue",
        )
    else:
        st.badge(f"Saved draft #{state['draft_id']:d}", icon="💾", color="green")
    if state.get("author"):
        st.caption(inert(state["author"]))
    for s in SECTIONS:
        st.text_area(s.upper(), key=f"{key}:{s}", height=80 if s in {"comparison", "recommendations"} else 110,
                     on_change=_autosave, args=(rt, user, scan_id))  # fmt: skip
        st.caption(_HELP[s])
    leave_guard(unsaved and state["draft_id"] is not None)  # a stored draft with edits it could not store
    st.button(
        "Save draft",
        key=f"{key}:save",
        type="primary",
        disabled=not (unsaved or state.get("autosaved")),  # Save after an autosave confirms it as saved by hand
        on_click=_save,
        args=(rt, user, scan_id, state),
        shortcut="Alt+S",
    )
    from core.reports import join_findings
    from pages._signing import signing_inputs

    stored = {
        "findings": join_findings(texts["comparison"], texts["findings"]),
        "impression": texts["impression"],
        "recommendations": texts["recommendations"],
    }
    signing = signing_inputs(rt, key, scan_id, stored)
    sure = st.checkbox(
        "I have reviewed this draft and sign it as my report",
        key=f"{key}:confirm",
        disabled=unsaved,
        help="Save the draft first. A signed report cannot be changed, only amended.",
    )
    st.button(
        "Sign report",
        key=f"{key}:sign",
        disabled=unsaved or not sure or not signing["ready"],
        on_click=_sign,
        args=(rt, user, scan_id, state, signing),
        shortcut="Alt+G",
    )
    if unsaved:
        st.caption("Edits are kept as your unsigned draft once a box loses focus; sign to make it the report.")
