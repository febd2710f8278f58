"""Worklist: the doctor's studies, critical AI readings first, then the oldest; log-in lands here.

Filters and search cut the whole list, then it pages (``ui.page_size`` a page, Previous / Next page
buttons, Alt+PageUp / Alt+PageDown); next / previous study on Scan Review walks the whole filtered
order, and coming back opens the page of the study last opened.
"""

from __future__ import annotations

import streamlit as st

from core.worklist import STATUSES, page_of, paginate, worklist
from pages._shared import DEMO_NOTICE, get_runtime, require_user
from pages._text import inert

PAGE = "wl-page"


def _first_page() -> None:
    st.session_state[PAGE] = 1  # a changed filter starts again at the top


def _turn(step: int) -> None:
    st.session_state[PAGE] = int(st.session_state.get(PAGE, 1)) + step  # paginate clamps it


user = require_user(doctor=True)
st.title("Worklist")
st.caption(DEMO_NOTICE)
rt = get_runtime()
critical = rt.settings.reports.critical_findings
everything = worklist(rt.db, user, critical)
anatomies = sorted({i.anatomy for i in everything})
with st.container(horizontal=True, key="worklist-filters", vertical_alignment="bottom"):
    status = st.multiselect(
        "Status", STATUSES, default=["unread", "draft"], key="wl-status", width=300, on_change=_first_page
    )
    anatomy = st.multiselect("Anatomy", anatomies, key="wl-anatomy", width=260, on_change=_first_page)
    query = st.text_input(
        "Search", placeholder="Patient, anatomy or AI reading…", key="wl-query", width=260, on_change=_first_page
    )
    critical_only = st.toggle("Critical only", key="wl-critical", on_change=_first_page)
items = worklist(
    rt.db, user, critical, status=status, anatomy=anatomy, critical_only=critical_only, query=query
)
order = [i.scan_id for i in items]
st.session_state["worklist_order"] = order  # next / previous study on Scan Review: the whole order, every page
size = rt.settings.ui.page_size
reading = st.session_state.get("scan_id")
if reading and reading != st.session_state.get("wl-seen") and reading in order:
    st.session_state[PAGE] = page_of(order, reading, size)  # back from a study: its page
st.session_state["wl-seen"] = reading
shown = paginate(items, int(st.session_state.get(PAGE, 1)), size)
st.session_state[PAGE] = shown.number
counts = {s: sum(1 for i in everything if i.status == s) for s in STATUSES}
st.caption(
    f"{len(items):d} match · unread {counts['unread']:d} · draft {counts['draft']:d} · signed {counts['signed']:d}"
    " · order: critical AI readings first, then the oldest study"
)
if not items:
    st.info("No study matches these filters.", icon="🔎")
if shown.pages > 1:
    with st.container(horizontal=True, vertical_alignment="center", key="worklist-pager"):
        st.button("Previous page", key="wl-prev", icon="⬅️", shortcut="Alt+PageUp", disabled=not shown.has_previous,
                  on_click=_turn, args=(-1,))  # fmt: skip
        st.caption(f"Page {shown.number:d} of {shown.pages:d} · studies {shown.first:d}–{shown.last:d} of {shown.total:d}")
        st.button("Next page", key="wl-next", icon="➡️", shortcut="Alt+PageDown", disabled=not shown.has_next,
                  on_click=_turn, args=(1,))  # fmt: skip
with st.container(key="worklist-rows"):
    for item in shown.items:
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
