"""Report Draft: saved drafts of a scan, the editor (save, sign), and signed report versions with amendments."""

from __future__ import annotations

import streamlit as st

from core.errors import CasebookError
from core.reports import ReportRow, list_drafts, report_versions
from pages._draft import draft_editor, open_saved, state_key
from pages._draft_live import draft_generation
from pages._shared import DEMO_NOTICE, DRAFT_NOTICE, get_runtime, pick_scan, require_user, show_error
from pages._text import inert
from pages._widgets import reports_view

user = require_user(doctor=True)
st.title("Report Draft")
st.caption(DEMO_NOTICE)
scan = pick_scan(user)
if scan is None:
    st.stop()
rt = get_runtime()
st.info(DRAFT_NOTICE, icon="📝")
st.markdown(f"Scan: **{inert(scan.diagnosis)}** · {inert(scan.anatomy)} · {scan.created_at:%Y-%m-%d}")

try:
    drafts = list_drafts(rt.db, scan.scan_id)
    reports = report_versions(rt.db, scan.scan_id)
except CasebookError as exc:
    show_error("Reports are unavailable", exc)
    st.stop()

left, right = st.columns([2, 3], gap="large")
with left:
    st.subheader("Saved drafts")
    if not drafts:
        st.caption("No saved drafts for this scan.")
    for d in drafts:
        with st.container(border=True, key=f"draft-row-{d.id}"):
            state = "open" if d.is_open else f"signed as report #{d.report_id}"
            st.markdown(f"**Draft #{d.id:d}** · {inert(state)} · {d.updated_at:%Y-%m-%d %H:%M} · {inert(d.author)}")
            st.caption(inert(d.impression[:160]))
            if d.is_open:
                st.button("Open in editor", key=f"open-{d.id}", on_click=open_saved, args=(d,))
    draft_generation(rt, scan.scan_id, st.button("Generate new draft", key="generate-draft", icon="🪄"))

with right:
    st.subheader("Editor")
    draft_editor(rt, user, scan.scan_id)
    if st.session_state.get(state_key(scan.scan_id)) is None and drafts and any(d.is_open for d in drafts):
        st.caption("Open a saved draft to edit or sign it.")


def _marked(k: str) -> list[str]:
    """The amendment's AI-derived sentences (text pasted from an AI draft keeps its mark)."""
    from core.reports.signing import ai_sentences

    return ai_sentences(
        *(str(st.session_state.get(f"{k}:{part}", "")) for part in ("findings", "impression", "recommendations"))
    )


def amend(report: ReportRow) -> None:
    """Sign an amended version of ``report`` (the original stays unchanged), with the doctor's attestation."""
    from core.reports import amend_report

    k = f"amend-{report.id}"
    confirmed = [s for i, s in enumerate(_marked(k)) if st.session_state.get(f"{k}:ai:{i:d}")]
    try:
        new_id = amend_report(
            rt.db,
            report.id,
            user.id,
            st.session_state[f"{k}:findings"],
            st.session_state[f"{k}:impression"],
            st.session_state[f"{k}:recommendations"],
            reason=st.session_state.get(f"{k}:reason", ""),
            allow_colleague=rt.settings.ui.amend_colleague_reports,
            confirmed_ai=confirmed,
        )
    except CasebookError as exc:
        st.session_state["amend_flash"] = ("error", f"Could not amend: {exc}. {exc.hint}")
    else:
        st.session_state["amend_flash"] = ("success", f"Signed amended report #{new_id}.")


st.subheader("Version history")
slot = st.empty()
if flash := st.session_state.pop("amend_flash", None):
    (slot.success if flash[0] == "success" else slot.error)(inert(flash[1]))
reports_view(reports)
current = next((r for r in reports if r.is_current), None)
if current is not None:
    with st.expander(f"Amend report #{current.id:d} (creates version {current.version + 1:d})"):
        from core.reports.signing import without_attestation

        k = f"amend-{current.id}"
        st.text_area("FINDINGS", current.findings, key=f"{k}:findings")
        st.text_area("IMPRESSION", current.impression, key=f"{k}:impression")
        st.text_area("RECOMMENDATIONS", without_attestation(current.recommendations), key=f"{k}:recommendations",
                     help="The signed version's ATTESTATION stays with it; the new version ends with yours.")  # fmt: skip
        st.text_input(
            "Reason for the amendment",
            key=f"{k}:reason",
            help="Required. Stored with the new version; the text must also change.",
        )
        marked = _marked(k)
        ticked = 0
        with st.container(key="amend-attest"):
            if marked:
                st.markdown("**AI-derived statements in this amendment**: edit each one above, or confirm it here.")
            for i, sentence in enumerate(marked):
                ticked += st.checkbox(f"Confirmed: {inert(sentence)}", key=f"{k}:ai:{i:d}")
        sure = st.checkbox("I sign this amendment", key=f"{k}:confirm")
        st.caption("The new version ends with your attestation; the AI-marked text stays in the history.")
        st.button("Sign amendment", key=f"{k}:sign", disabled=not (sure and ticked == len(marked)), on_click=amend,
                  args=(current,))  # fmt: skip
