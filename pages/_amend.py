"""The amend form: a signed new version of the current report, attested and, when it is critical, recorded.

Core decides (:func:`core.reports.critical.amendment_needs_record`, :func:`core.reports.amend_report`);
this form collects the new text, the reason, the confirmations of AI-derived sentences and, when the
amendment newly names a critical finding or the doctor flags one, the communication record.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from core.errors import CasebookError
from pages._signing import communication_record, read_back_ok
from pages._text import inert

if TYPE_CHECKING:
    from core.auth import CurrentUser
    from core.reports import ReportRow
    from core.runtime import Runtime

FLASH = "amend_flash"


def _marked(k: str) -> list[str]:
    """The amendment's AI-derived sentences (text pasted from an AI draft keeps its mark)."""
    from core.reports.signing import ai_sentences

    return ai_sentences(
        *(str(st.session_state.get(f"{k}:{part}", "")) for part in ("findings", "impression", "recommendations"))
    )


def _amend(rt: Runtime, user: CurrentUser, report: ReportRow, critical: dict[str, Any]) -> None:
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
            **critical,
        )
    except CasebookError as exc:
        st.session_state[FLASH] = ("error", f"Could not amend: {exc}. {exc.hint}")
    else:
        st.session_state[FLASH] = ("success", f"Signed amended report #{new_id}.")


def _critical_inputs(rt: Runtime, k: str, report_id: int) -> tuple[dict[str, Any], bool]:
    """The flag and, when core says the amendment needs one, the communication record; and whether it is complete."""
    from core.reports.critical import amendment_needs_record

    findings = rt.settings.reports.critical_findings
    flagged = st.checkbox(
        "Flag as a critical result", key=f"{k}:flag", help="A critical result needs a communication record."
    )
    needed, named = amendment_needs_record(
        rt.db, report_id, str(st.session_state.get(f"{k}:findings", "")),
        str(st.session_state.get(f"{k}:impression", "")), findings, flagged=flagged,
    )  # fmt: skip
    record = None
    if needed:
        why = f" (newly named: {', '.join(named)})" if named else ""
        record = communication_record(k, "before signing the amendment", why=why, box="amend-critical-record")
    inputs = {"communication": record, "critical_findings": findings, "flagged_critical": flagged}
    return inputs, not needed or (record is not None and read_back_ok(record))


def amend_form(rt: Runtime, user: CurrentUser, current: ReportRow) -> None:
    """The expander that amends ``current`` into version ``current.version + 1``."""
    from core.reports.signing import without_attestation

    with st.expander(f"Amend report #{current.id:d} (creates version {current.version + 1:d})"):
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
        try:
            critical, recorded = _critical_inputs(rt, k, current.id)
        except CasebookError as exc:
            st.error(inert(f"Could not check for critical findings: {exc}. {exc.hint}"))
            return
        sure = st.checkbox("I sign this amendment", key=f"{k}:confirm")
        st.caption("The new version ends with your attestation; the AI-marked text stays in the history.")
        st.button("Sign amendment", key=f"{k}:sign", disabled=not (sure and recorded and ticked == len(marked)),
                  on_click=_amend, args=(rt, user, current, critical))  # fmt: skip
