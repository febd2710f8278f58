"""Settings / Status: backends in use, model files and hashes, index statistics and versions, rebuild actions."""

from __future__ import annotations

import json

import streamlit as st

from core.errors import CasebookError
from core.llm.acceptance import rate_rows
from core.llm.budget import budget_rows, speed_line
from pages._shared import get_runtime, require_user, show_error
from pages._text import inert

user = require_user(doctor=True)
rt = get_runtime()
s = rt.settings
st.title("Settings / Status")

st.subheader("Backends in use")
c1, c2, c3, c4 = st.columns(4)
c1.metric("Language model", s.llm.backend)
c2.metric("Embeddings", s.embed.backend)
c3.metric("Store", "SQLite" if rt.db.is_sqlite else rt.db.engine.dialect.name)
c4.metric("Preset", s.preset)
st.caption(f"Imaging encoder: {inert(s.search.encoder_id)} · top_k {s.search.top_k:d}")

st.subheader("Model time budgets")
speed = speed_line(s)  # reads the persisted estimate first, so the table below uses it
st.dataframe(budget_rows(s), hide_index=True, width="stretch")
st.caption(inert(speed))  # our wording, but the figures come from a file on disk
st.caption(
    f"Each call is stopped at its budget (capped by `llm.timeout_s` = {s.llm.timeout_s:g} s), and a Cancel stops "
    "it at once. The typical-call estimate (600-token prompt, 128-token answer) comes from the local model's own "
    "speed measured on this machine (every call counts, also one cut at its budget or cancelled; kept across "
    "restarts); it is empty until the model has run once."
)

st.subheader("Ask AI model answers that pass the grounding check")
a = s.ask
st.dataframe(rate_rows(s), hide_index=True, width="stretch")
st.caption(
    f"`ask.model_answers` = {inert(a.model_answers)}. Under `auto`, Ask AI asks a model after its instant answer only while "
    f"at least {a.min_guard_pass_rate:.0%} of its answers pass the output guard unchanged (from "
    f"{a.min_guard_samples:d} judged answers on; fewer: it is asked). The figure pools our own measurement "
    "(core/llm/models.json) with every answer judged on this machine; a doctor can always ask the model anyway."
)

st.subheader("Model files")
try:
    from core.llm.models import default_model_path, load_spec

    spec = load_spec(s.llm.llamacpp.model_name)
    path = default_model_path(s)
    stamp = path.with_name(path.name + ".verified.json")
    verified = stamp.is_file() and json.loads(stamp.read_text()).get("sha256") == spec.sha256
    st.dataframe(
        [
            {
                "model": spec.name,
                "file": str(path),
                "present": path.is_file(),
                "size (MB)": round(spec.size / 1e6, 1),
                "sha256 (catalogue)": spec.sha256,
                "verified": verified,
                "licence": spec.licence,
            }
        ],
        hide_index=True,
        width="stretch",
    )
    if not path.is_file():
        st.info("The local model is not assembled. Run `python -m core llm assemble` (or `make prepare`).")
except CasebookError as exc:
    show_error("Model catalogue unavailable", exc)

st.subheader("Similar-case index")
try:
    index = rt.case_search.index
    m = index.manifest
    i1, i2, i3 = st.columns(3)
    i1.metric("Cases", f"{m['count']:,}")
    i2.metric("Dimension", m["dim"])
    i3.metric("Filter groups", len(index.groups))
    st.caption(
        f"Version {inert(index.version)} · encoder {inert(m['encoder_id'])} · table checksum {inert(m['table_checksum'][:16])}…"
    )
    hnsw = [k for k, g in index.groups.items() if g["hnsw"]]
    st.caption(f"HNSW groups: {inert(', '.join(hnsw) if hnsw else 'none (every group is searched exactly)')}")
except CasebookError as exc:
    show_error("The similar-case index is unavailable", exc)

st.subheader("Knowledge bases")
root = s.paths.resolve(s.paths.index_dir)
kbs = sorted(root.glob("kb_*"))
if not kbs:
    st.caption("No knowledge base built yet (`python -m core kb build`).")
for kb in kbs:
    try:
        manifest = json.loads((kb / "manifest.json").read_text())
    except (OSError, ValueError):
        st.warning(f"{inert(kb.name)}: manifest missing or unreadable; rebuild it.")
        continue
    summary = {k: v for k, v in manifest.items() if isinstance(v, str | int | float)}
    st.markdown(f"**{inert(kb.name)}**")
    st.json(summary, expanded=False)

st.subheader("Actions")
sure = st.checkbox("I want to rebuild the similar-case index", key="confirm-rebuild")
if st.button("Rebuild similar-case index", key="rebuild-index", type="primary", disabled=not sure):
    try:
        with st.spinner("Rebuilding the similar-case index…"):
            rt.case_search.rebuild()
            new = rt.case_search.refresh()
    except CasebookError as exc:
        show_error("Rebuild failed", exc)
    else:
        st.success(f"Index rebuilt: version {inert(new.version)}. Cached similar cases use the new version.")
st.button("Clear cached lookups", key="clear-cache", on_click=st.cache_data.clear, help="Scan lists and similar cases.")
