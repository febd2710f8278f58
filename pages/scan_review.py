"""Scan Review: pick a scan, see its card and the similar past cases."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from pages._shared import DEMO_NOTICE, DRAFT_NOTICE, get_runtime, index_version, pick_scan, similar_cases

st.title("Scan Review")
st.caption(DEMO_NOTICE)
scan = pick_scan()
if scan is None:
    st.stop()

left, right = st.columns([2, 3], gap="large")
with left, st.container(border=True):
    st.subheader("Current scan")
    st.markdown(f"**{scan['diagnosis']}**")
    st.write(
        f"Anatomy: {scan['anatomy']}" + (f" · region: {scan['region'].replace('_', ' ')}" if scan["region"] else "")
    )
    st.write(f"Acquired: {scan['created_at']:%Y-%m-%d}")
    gauge = go.Figure(
        go.Indicator(
            mode="gauge+number",
            value=round(scan["confidence"] * 100),
            number={"suffix": "%"},
            title={"text": "AI confidence"},
            gauge={
                "axis": {"range": [0, 100]},
                "bar": {"color": "#2b6cb0"},
                "steps": [
                    {"range": [0, 30], "color": "#fed7d7"},
                    {"range": [30, 70], "color": "#fefcbf"},
                    {"range": [70, 100], "color": "#c6f6d5"},
                ],
            },
        )
    )
    gauge.update_layout(height=220, margin={"t": 40, "b": 0, "l": 20, "r": 20})
    st.plotly_chart(gauge, use_container_width=True)

with right:
    st.subheader("Similar cases")
    top_k = get_runtime().settings.search.top_k
    try:
        result = similar_cases(scan["scan_id"], top_k, index_version())
    except Exception as exc:  # the panel fails closed, the page stays up
        st.error(f"Similar-case search is unavailable: {exc}")
        st.stop()
    if result.notice:
        st.info(result.notice)
    if not result.cases:
        st.warning("No comparable cases found in system memory. Manual review recommended.")
    for case in result.cases:
        with st.container(border=True):
            c1, c2 = st.columns([3, 2])
            c1.markdown(f"**{case.caseId}** · {case.diagnosis}")
            c1.caption(f"Severity: {case.severity or 'n/a'} · Outcome: {case.outcome or 'not recorded'}")
            c2.progress(case.similarity, text=f"Similarity {case.similarity:.0%}")
st.caption(DRAFT_NOTICE)
