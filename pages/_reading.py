"""The reading bar on Scan Review: previous / next study in worklist order, and the keyboard help overlay."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from pages._shared import get_runtime

if TYPE_CHECKING:
    from core.auth import CurrentUser

# (keys, what) for the help overlay; the page's own hotkeys are Streamlit button shortcuts
PAGE_KEYS = (
    ("Alt+N", "next study on the worklist"),
    ("Alt+P", "previous study on the worklist"),
    ("Alt+S", "save the report draft"),
    ("Alt+G", "sign the report (after the review box is ticked)"),
    ("Alt+H", "this help"),
)
VIEWER_KEYS = (
    ("Wheel, ↑ ↓, Page Up/Down, Home/End", "change slice (the image must have focus: click it or Tab to it)"),
    ("Left drag", "window/level (or the tool chosen in the viewer's toolbar)"),
    ("Middle drag / right drag", "pan / zoom"),
    ("W P Z S", "left drag becomes window, pan, zoom or scroll"),
    ("L H R", "measure a length, an HU value (probe) or a rectangle ROI"),
    ("1-5", "window presets: lung, mediastinum, bone, brain, abdomen"),
    ("0", "reset view and window"),
    ("C / K", "cine play-stop / link or unlink the two panes"),
)


def _go(scan_id: str) -> None:
    st.session_state["scan_id"] = scan_id
    st.query_params["scan"] = scan_id


@st.dialog("Keyboard shortcuts", width="large")
def _help() -> None:
    st.markdown("**On this page**")
    st.table({"keys": [k for k, _ in PAGE_KEYS], "does": [d for _, d in PAGE_KEYS]})
    st.markdown("**In the image viewer**")
    st.table({"keys": [k for k, _ in VIEWER_KEYS], "does": [d for _, d in VIEWER_KEYS]})


def _order(user: CurrentUser) -> list[str]:
    order = st.session_state.get("worklist_order")
    if order is None:  # not opened from the worklist: its default order (unread and draft)
        from core.worklist import worklist

        rt = get_runtime()
        items = worklist(rt.db, user, rt.settings.reports.critical_findings, status=["unread", "draft"])
        order = [i.scan_id for i in items]
    return list(order)


def reading_bar(user: CurrentUser, scan_id: str) -> None:
    """Previous / next study (worklist order) and the shortcuts help, in one row."""
    from core.worklist import neighbours

    order = _order(user)
    before, after = neighbours(order, scan_id)
    where = order.index(scan_id) + 1 if scan_id in order else 0
    with st.container(horizontal=True, vertical_alignment="center", key="reading-bar"):
        st.button("Previous study", key="prev-study", icon="⬅️", shortcut="Alt+P", disabled=before is None,
                  on_click=_go, args=(before,))  # fmt: skip
        st.button("Next study", key="next-study", icon="➡️", shortcut="Alt+N", disabled=after is None,
                  on_click=_go, args=(after,))  # fmt: skip
        if where:
            st.caption(f"study {where:d} of {len(order):d} on the worklist")
        if st.button("Keyboard shortcuts", key="help-keys", icon="⌨️", shortcut="Alt+H", type="tertiary"):
            _help()

