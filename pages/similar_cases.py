"""Similar Cases: explore a scan's neighbours: similarity distribution, outcome breakdown, filters."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from core.errors import CasebookError
from pages._shared import DEMO_NOTICE, pick_scan, require_user, show_error, similar_for
from pages._text import inert
from pages._viewer import image_panel, neighbour_thumbnails

user = require_user(doctor=True)
st.title("Similar Cases")
st.caption(DEMO_NOTICE)
scan = pick_scan(user)
if scan is None:
    st.stop()
st.markdown(f"Neighbours of the **{inert(scan.diagnosis)}** scan ({inert(scan.anatomy)}, {scan.created_at:%Y-%m-%d}).")

top_k = st.sidebar.slider("Neighbours to explore", 5, 50, 25, step=5, key="top-k")
try:
    result = similar_for(scan.scan_id, top_k)
except CasebookError as exc:
    show_error("Similar-case search is unavailable", exc)
    st.stop()
if result.notice:
    st.info(inert(result.notice))
if not result.cases:
    st.warning("No comparable cases found in system memory. Manual review recommended.")
    st.stop()

df = pd.DataFrame([c.model_dump() for c in result.cases])
df["outcome"] = df["outcome"].fillna("not recorded")
df["severity"] = df["severity"].fillna("n/a")

f1, f2, f3 = st.columns(3)
outcomes = f1.multiselect("Outcome", sorted(df["outcome"].unique()), placeholder="All outcomes")
severities = f2.multiselect("Severity", sorted(df["severity"].unique()), placeholder="All severities")
min_sim = f3.slider("Minimum similarity", 0.0, 1.0, 0.0, 0.05, key="min-similarity")
view = df[df["similarity"] >= min_sim]
if outcomes:
    view = view[view["outcome"].isin(outcomes)]
if severities:
    view = view[view["severity"].isin(severities)]

m1, m2, m3 = st.columns(3)
m1.metric("Cases shown", f"{len(view)} of {len(df)}")
m2.metric("Mean similarity", f"{view['similarity'].mean():.0%}" if len(view) else "—")
others = view["diagnosis"].nunique() - int((view["diagnosis"] == scan.diagnosis).any()) if len(view) else 0
m3.metric("Other diagnoses among them", f"{others}" if len(view) else "—")
if view.empty:
    st.warning("No case passes these filters. Widen them to see cases.")
    st.stop()

c1, c2 = st.columns(2)
hist = px.histogram(view, x="similarity", nbins=15, title="Similarity distribution", color="diagnosis")
hist.update_layout(height=320, margin={"t": 40, "b": 0}, legend={"orientation": "h", "y": -0.25})
c1.plotly_chart(hist, width="stretch", key="similarity-hist")
counts = view.groupby(["outcome", "severity"]).size().reset_index(name="cases")
bars = px.bar(counts, x="cases", y="outcome", color="severity", orientation="h", title="Outcome breakdown")
bars.update_layout(height=320, margin={"t": 40, "b": 0})
c2.plotly_chart(bars, width="stretch", key="outcome-bars")

st.subheader("Images of these cases")
st.caption("A thumbnail opens its case beside the current image, in the same window.")
image_panel(scan, show_reading=True)
shown = set(view["caseId"])
neighbour_thumbnails([c for c in result.cases if c.caseId in shown])
st.dataframe(
    view[["caseId", "diagnosis", "outcome", "severity", "similarity", "region", "age", "sex", "date"]],
    hide_index=True,
    width="stretch",
    column_config={"similarity": st.column_config.ProgressColumn("similarity", min_value=0.0, max_value=1.0)},
)
