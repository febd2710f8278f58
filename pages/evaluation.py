"""Self-reflective RAG / Evaluation: one question with its whole reflection trace, and benchmark runs.

The trace shows P(retrieve) against the threshold, the retrieved documents with their
relevance / support / utility scores, and every generated answer with its expected
utility. The benchmark tab runs a sample of a multiple-choice file (MIRAGE JSON or
Self-BioRAG JSONL) in the chosen retrieval modes, with a progress bar and accuracy plots.
"""

from __future__ import annotations

import streamlit as st

from core.selfrag.factory import needs_llm
from pages._selfrag import benchmark_tab, question_tab
from pages._shared import DEMO_NOTICE, get_llm, get_runtime, require_user, settings_json
from pages._text import inert

user = require_user(doctor=True)
st.title("Self-reflective RAG")
st.caption(
    DEMO_NOTICE + " A research view of the biomedical pipeline: adaptive retrieval, critic reranking with "
    "reflection tokens and utility-driven regeneration. Not for patient care."
)
rt = get_runtime()
cfg = rt.settings.selfrag
if not cfg.enabled:
    st.info("Self-reflective RAG is switched off (`selfrag.enabled = false`).")
    st.stop()
if needs_llm(cfg) and get_llm(rt) is None:
    st.info(
        "This page needs a language model: the critic and the generator read token probabilities. "
        f"The configured backend is {inert(rt.settings.llm.backend)}. Set `llm.backend` (the local default is "
        "`llamacpp`) or `selfrag.critic` and `selfrag.generator` to `native` with a reflection-token model.",
        icon="🧠",
    )
    st.stop()
one, bench = st.tabs(["One question", "Benchmark"])
with one:
    question_tab(settings_json())
with bench:
    benchmark_tab(settings_json(), cfg.eval_seed)
