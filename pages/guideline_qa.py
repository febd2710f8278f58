"""Guideline QA: tuberculosis and community-acquired pneumonia questions answered from the knowledge bases.

Every bullet shows the evidence sentence it was checked against (the words they share
highlighted) and its source; a question the evidence cannot answer gets an abstention
card with the reason. Doctors keep their own documents in a private space (and a shared one),
searched with the curated knowledge bases (pages/_mydocs.py).
"""

from __future__ import annotations

import streamlit as st

from pages._guideline import ask_panel, kb_for, kb_summary, search_panel
from pages._mydocs import my_spaces, mydocs_panel
from pages._shared import DEMO_NOTICE, get_runtime, require_user, settings_json

user = require_user(doctor=True)
st.title("Guideline QA")
st.caption(
    DEMO_NOTICE + " Answers quote tuberculosis and community-acquired pneumonia guideline summaries and drug labels; "
    "they are reference material, not treatment advice."
)
rt = get_runtime()
if not rt.settings.guideline.enabled:
    st.info("Guideline QA is switched off (`guideline.enabled = false`).")
    st.stop()
key = settings_json()
summary = kb_summary(kb_for(key))
ask_tab, docs_tab, search_tab = st.tabs(["Ask", "My documents", "Search a knowledge base"])
with ask_tab:
    ask_panel(key, summary, my_spaces(key, user))
with docs_tab:
    mydocs_panel(key, user, rt.settings.ui.max_upload_mb)
with search_tab:
    search_panel(key, summary)
