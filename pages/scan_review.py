"""Scan Review: the scan card, similar cases, Ask AI, the report draft and the signed reports.

Doctors get everything; a patient sees their own scan card and signed reports, no chat, no drafts.
"""

from __future__ import annotations

import streamlit as st

from core.auth import AWAITING_REVIEW, patient_scan_view
from core.errors import CasebookError
from core.reports import report_versions
from pages._draft import draft_editor
from pages._draft_live import draft_generation
from pages._reading import reading_bar
from pages._shared import DEMO_NOTICE, DRAFT_NOTICE, get_runtime, pick_scan, require_user, show_error, similar_for
from pages._structured import structured_form
from pages._text import inert
from pages._viewer import ai_reading, image_panel, neighbour_thumbnails
from pages._widgets import case_cards, reports_view, scan_card

user = require_user()
# reading room density: the image starts above the fold at 1366x768
st.html("<style>.stMainBlockContainer { padding-top: 2.5rem; }</style>")
st.title("Scan Review" if user.is_doctor else "My scans")
st.caption(DEMO_NOTICE)
scan = pick_scan(user)
if scan is None:
    st.stop()
rt = get_runtime()
if user.is_doctor:
    reading_bar(user, scan.scan_id)

if not user.is_doctor:  # the access layer hands a patient only what a doctor signed (core.auth)
    view = patient_scan_view(rt.db, user, scan.scan_id)
    with st.container(border=True, key="patient-scan"):
        region = f" · region: {view.region.replace('_', ' ')}" if view.region else ""
        st.markdown(f"**{inert(view.anatomy.capitalize())} scan** of {view.created_at:%Y-%m-%d}{inert(region)}")
        if view.awaiting_review:
            st.info(f"{AWAITING_REVIEW}. Results appear here once your doctor has signed a report.", icon="⏳")
    image_panel(scan, show_reading=False)  # their own images; no AI reading until a doctor signs
    st.subheader("Signed reports")
    reports_view(view.reports)
    st.stop()

reading_col, side = st.columns([3, 2], gap="medium")
with reading_col:
    image_panel(scan, show_reading=True)
with side:
    ai_reading(scan)
    from pages._chat import chat_panel  # lazy: the answer service loads on first use

    with st.container(border=True, key="ask-ai"):
        chat_panel(rt, user, scan.scan_id)
st.info(DRAFT_NOTICE, icon="📝")
left, right = st.columns([2, 3], gap="large")
with left:
    scan_card(scan)
    st.subheader("Similar cases")
    try:
        result = similar_for(scan.scan_id)
    except CasebookError as exc:
        show_error("Similar-case search is unavailable", exc)
    else:
        case_cards(result)
        neighbour_thumbnails(result.cases, per_row=3)

with right:
    with st.container(border=True, key="draft"):
        st.subheader("Report draft")
        structured_form(rt, scan)
        requested = st.button(
            "Generate draft",
            key="generate-draft",
            icon="🪄",
            help="Writes FINDINGS / IMPRESSION / RECOMMENDATIONS from the similar-case evidence. Nothing is saved.",
        )
        draft_generation(rt, scan.scan_id, requested)
        draft_editor(rt, user, scan.scan_id)
    with st.container(border=True, key="signed-reports"):
        st.subheader("Signed reports")
        try:
            reports_view(report_versions(rt.db, scan.scan_id))
        except CasebookError as exc:
            show_error("Reports are unavailable", exc)
