"""The structured report form: a template per finding, AI-prefilled where its reading supports it, marked.

"Write into the draft" puts the template's FINDINGS and IMPRESSION (and its comparison) into the
draft editor as unsaved text; the doctor then edits, saves and signs there as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from pages._text import inert

if TYPE_CHECKING:
    from core.auth import ScanRow
    from core.runtime import Runtime

NOT_SET = "—"


def _write(scan_id: str, template_key: str, ai_keys: set[str], prior_comparison: str) -> None:
    from core.reports.templates import TEMPLATES, render
    from pages._draft import _load, state_key

    template = TEMPLATES[template_key]
    key = f"tpl:{scan_id}"
    values = {
        f.key: str(st.session_state.get(f"{key}:{f.key}") or "").replace(NOT_SET, "")
        for f in template.fields
    }
    # a value the doctor changed is theirs: only values still equal to the prefill stay marked
    prefilled = st.session_state.get(f"{key}:prefill", {})
    still_ai = {k for k in ai_keys if values.get(k) == prefilled.get(k)}
    comparison = values.pop("comparison", "")
    findings, impression = render(template, values, still_ai)
    texts = {
        "comparison": " ".join(p for p in (f"{comparison[:1].upper()}{comparison[1:]}." if comparison else "", prior_comparison) if p),
        "findings": findings,
        "impression": impression,
        "recommendations": str(st.session_state.get(f"{state_key(scan_id)}:recommendations", "")),
    }
    current = st.session_state.get(state_key(scan_id))
    _load(
        scan_id,
        texts,
        draft_id=current["draft_id"] if current else None,
        saved=False,
        version=current["version"] if current else 0,
        author=f"Structured report: {template.title}. Sentences marked 'AI reading, not verified' came from the AI reading.",
    )


def structured_form(rt: Runtime, scan: ScanRow) -> None:
    """The template chosen from the AI reading, its fields (AI-prefilled ones badged), and the write button."""
    from core.imaging.query import prior_scan
    from core.reports.templates import TEMPLATES, prefill, template_for

    key = f"tpl:{scan.scan_id}"
    default = template_for(scan.diagnosis)
    names = list(TEMPLATES)
    with st.expander("Structured report", expanded=True, key="structured"):
        choice = st.selectbox(
            "Template", names, index=names.index(default.key), format_func=lambda k: TEMPLATES[k].title,
            key=f"{key}:template",
        )  # fmt: skip
        template = TEMPLATES[choice]
        has_prior = prior_scan(rt.db, scan.scan_id) is not None
        filled = prefill(template, scan.diagnosis, scan.region, has_prior)
        st.session_state[f"{key}:prefill"] = {k: p.value for k, p in filled.items()}
        ai_keys = {k for k, p in filled.items() if p.source == "ai"}
        cols = st.columns(2)
        for i, f in enumerate(template.fields):
            pre = filled.get(f.key)
            label = f.label + (" · AI" if pre and pre.source == "ai" else " · from the record" if pre else "")
            with cols[i % 2]:
                if f.options:
                    options = [NOT_SET, *f.options]
                    index = options.index(pre.value) if pre and pre.value in options else 0
                    st.selectbox(label, options, index=index, key=f"{key}:{f.key}")
                else:
                    st.text_input(label, value=pre.value if pre else "", key=f"{key}:{f.key}")
        if ai_keys:
            st.caption(
                "Fields marked AI are prefilled from the AI reading only where it names them; "
                f"the rest is yours to fill. AI reading: {inert(scan.diagnosis)}."
            )
        st.button(
            "Write into the draft",
            key=f"{key}:write",
            icon="🧾",
            on_click=_write,
            args=(scan.scan_id, choice, ai_keys, ""),
        )
