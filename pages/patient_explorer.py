"""Patient Explorer: the patient's scans over time (thumbnails, signed reports) and an anatomy x region heatmap of similar-case evidence. No chat."""

from __future__ import annotations

import pandas as pd
import plotly.express as px
import streamlit as st

from core.errors import CasebookError
from core.store.models import ANATOMIES
from pages._shared import DEMO_NOTICE, list_scans, pick_scan, require_user, settings_json, show_error, similar_for
from pages._text import inert
from pages._viewer import patient_timeline

EVIDENCE_K = 20  # neighbours per scan that count as evidence

user = require_user(doctor=True)
st.title("Patient Explorer")
st.caption(DEMO_NOTICE)
picked = pick_scan(user)
if picked is None:
    st.stop()
scans = [s for s in list_scans(user.id, user.role, settings_json()) if s.patient_id == picked.patient_id]
st.markdown(
    f"**{inert(picked.patient)}** · {len(scans):d} scan(s). Intensity = summed similarity of the similar cases per region."
)

st.subheader("Timeline")
patient_timeline(scans)

rows, failed = [], []
for s in scans:
    try:
        result = similar_for(s.scan_id, EVIDENCE_K)
    except CasebookError as exc:
        failed.append((s, exc))
        continue
    for c in result.cases:
        rows.append(
            {
                "scan": f"{s.created_at:%Y-%m-%d} {s.diagnosis}",
                "anatomy": s.anatomy,
                "region": (c.region or "unspecified").replace("_", " "),
                "similarity": c.similarity,
                "same_diagnosis": c.diagnosis == s.diagnosis,
                "diagnosis": c.diagnosis,
            }
        )
for s, error in failed:
    show_error(f"Evidence for the {s.created_at:%Y-%m-%d} scan is unavailable", error)
if not rows:
    st.warning("No similar-case evidence for this patient's scans (no embeddings or no comparable cases).")
    st.stop()

df = pd.DataFrame(rows)
grid = (
    df.groupby(["anatomy", "region"])
    .agg(evidence=("similarity", "sum"), cases=("similarity", "size"), agreement=("same_diagnosis", "mean"))
    .reset_index()
)
# every anatomy is a row, so the grid reads as a body map: where this patient's evidence lies
matrix = grid.pivot(index="anatomy", columns="region", values="evidence").reindex(list(ANATOMIES)).fillna(0.0)
fig = px.imshow(
    matrix,
    color_continuous_scale="OrRd",
    aspect="auto",
    labels={"color": "evidence", "x": "region", "y": "anatomy"},
    title="Similar-case evidence by anatomy and region",
    text_auto=".1f",
)
fig.update_layout(height=120 + 36 * len(matrix.index), margin={"t": 50, "b": 0})
st.plotly_chart(fig, width="stretch", key="evidence-heatmap")

st.subheader("Evidence per region")
st.dataframe(
    grid.sort_values("evidence", ascending=False),
    hide_index=True,
    width="stretch",
    column_config={"agreement": st.column_config.ProgressColumn("same diagnosis", min_value=0.0, max_value=1.0)},
)
st.subheader("Diagnoses among the neighbours")
top = df.groupby(["scan", "diagnosis"]).size().reset_index(name="cases").sort_values("cases", ascending=False)
st.dataframe(top, hide_index=True, width="stretch")
