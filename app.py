"""Casebook: clinical review workbench. Start with `make run`."""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="Casebook", page_icon="🩺", layout="wide")

PAGES = {
    "Review": [
        st.Page("pages/scan_review.py", title="Scan Review", icon="🩻", default=True),
        st.Page("pages/similar_cases.py", title="Similar Cases", icon="🧭"),
        st.Page("pages/patient_explorer.py", title="Patient Explorer", icon="🗺️"),
        st.Page("pages/ask_ai.py", title="Ask AI", icon="💬"),
        st.Page("pages/report_draft.py", title="Report Draft", icon="📝"),
    ],
    "Knowledge": [
        st.Page("pages/guideline_qa.py", title="Guideline QA", icon="📚"),
        st.Page("pages/evaluation.py", title="Self-reflective RAG", icon="🔬"),
    ],
    "System": [st.Page("pages/settings_status.py", title="Settings / Status", icon="⚙️")],
}

st.sidebar.caption("Casebook · demo data, not for clinical use")
st.navigation(PAGES).run()
