"""Report Draft: saved drafts of a scan, the editor (save, sign), and signed report versions with amendments."""

from __future__ import annotations

import streamlit as st

from core.errors import CasebookError
from core.reports import list_drafts, report_versions
from pages._amend import FLASH, amend_form
from pages._draft import draft_editor, open_saved, state_key
from pages._draft_live import draft_generation
from pages._shared import DEMO_NOTICE, DRAFT_NOTICE, get_runtime, pick_scan, require_user, show_error
from pages._text import inert
from pages._widgets import reports_view

user = require_user(doctor=True)
st.title("Report Draft")
st.caption(DEMO_NOTICE)
scan = pick_scan(user)
if scan is None:
    st.stop()
rt = get_runtime()
st.info(DRAFT_NOTICE, icon="📝")
st.markdown(f"Scan: **{inert(scan.diagnosis)}** · {inert(scan.anatomy)} · {scan.created_at:%Y-%m-%d}")

try:
    drafts = list_drafts(rt.db, scan.scan_id)
    reports = report_versions(rt.db, scan.scan_id)
except CasebookError as exc:
    show_error("Reports are unavailable", exc)
    st.stop()

left, right = st.columns([2, 3], gap="large")
with left:
    st.subheader("Saved drafts")
    if not drafts:
        st.caption("No saved drafts for this scan.")
    for d in drafts:
        with st.container(border=True, key=f"draft-row-{d.id}"):
            state = "open" if d.is_open else f"signed as report #{d.report_id}"
            st.markdown(f"**Draft #{d.id:d}** · {inert(state)} · {d.updated_at:%Y-%m-%d %H:%M} · {inert(d.author)}")
            st.caption(inert(d.impression[:160]))
            if d.is_open:
                st.button("Open in editor", key=f"open-{d.id}", on_click=open_saved, args=(d,))
    draft_generation(rt, scan.scan_id, st.button("Generate new draft", key="generate-draft", icon="🪄"))

with right:
    st.subheader("Editor")
    draft_editor(rt, user, scan.scan_id)
    if st.session_state.get(state_key(scan.scan_id)) is None and drafts and any(d.is_open for d in drafts):
        st.caption("Open a saved draft to edit or sign it.")


st.subheader("Version history")
slot = st.empty()
if flash := st.session_state.pop(FLASH, None):
    (slot.success if flash[0] == "success" else slot.error)(inert(flash[1]))
reports_view(reports)
current = next((r for r in reports if r.is_current), None)
if current is not None:
    amend_form(rt, user, current)
