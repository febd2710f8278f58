"""Worklist: the doctor's studies, critical AI readings first, then the oldest; log-in lands here."""

from __future__ import annotations

import streamlit as st

from core.worklist import STATUSES, worklist
from pages._shared import DEMO_NOTICE, get_runtime, require_user
from pages._text import inert

user = require_user(doctor=True)
st.title("Worklist")
st.caption(DEMO_NOTICE)
rt = get_runtime()
critical = rt.settings.reports.critical_findings
everything = worklist(rt.db, user, critical)
anatomies = sorted({i.anatomy for i in everything})
with st.container(horizontal=True, key="worklist-filters", vertical_alignment="bottom"):
    status = st.multiselect("Status", STATUSES, default=["unread", "draft"], key="wl-status", width=300)
    anatomy = st.multiselect("Anatomy", anatomies, key="wl-anatomy", width=260)
    query = st.text_input("Search", placeholder="Patient, anatomy or AI reading…", key="wl-query", width=260)
    critical_only = st.toggle("Critical only", key="wl-critical")
items = worklist(
    rt.db, user, critical, status=status, anatomy=anatomy, critical_only=critical_only, query=query
)
st.session_state["worklist_order"] = [i.scan_id for i in items]  # next / previous study on Scan Review
counts = {s: sum(1 for i in everything if i.status == s) for s in STATUSES}
st.caption(
    f"{len(items):d} shown · unread {counts['unread']:d} · draft {counts['draft']:d} · signed {counts['signed']:d}"
    " · order: critical AI readings first, then the oldest study"
)
if not items:
    st.info("No study matches these filters.", icon="🔎")
with st.container(key="worklist-rows"):
    for item in items:
        with st.container(border=True, horizontal=True, vertical_alignment="center", key=f"wl-{item.scan_id}"):
            if item.critical:
                st.badge("Critical", icon="🚨", color="red")
            if item.status == "unread":
                st.badge("Unread", color="blue")
            elif item.status == "draft":
                st.badge("Draft", color="orange")
            else:
                st.badge("Signed", color="green")
            st.markdown(
                f"**{inert(item.patient)}** · {inert(item.anatomy)} · {item.created_at:%Y-%m-%d} · "
                f"AI reading: {inert(item.diagnosis)} ({item.confidence:.0%})",
                width="stretch",
            )
            st.page_link(
                "pages/scan_review.py",
                label=f"Open {inert(item.patient)}",
                icon="🩻",
                query_params={"scan": item.scan_id},
            )
