"""The signing panel: confirm each AI-derived sentence, record a critical result, then sign.

Core decides (:mod:`core.reports.signing`); this panel collects the doctor's confirmations
and the communication record and hands them to ``sign_draft``, which refuses what is missing.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

import streamlit as st

from pages._text import inert

if TYPE_CHECKING:
    from core.reports.signing import CriticalCommunication
    from core.runtime import Runtime


def _diagnosis(rt: Runtime, scan_id: str) -> str:
    from core.store.models import Scan

    with rt.db.read_only() as s:
        scan = s.get(Scan, scan_id)
        return scan.ai_diagnosis if scan else ""


def signing_inputs(rt: Runtime, key: str, scan_id: str, texts: dict[str, str]) -> dict[str, Any]:
    """The confirmations and the critical-result record for ``sign_draft``, as keyword arguments."""
    from core.reports.signing import ai_sentences, needs_communication

    marked = ai_sentences(texts["findings"], texts["impression"], texts["recommendations"])
    confirmed = []
    with st.container(key="attest"):
        if marked:
            st.markdown("**AI-derived statements**: edit each one above, or confirm it here.")
        for i, sentence in enumerate(marked):
            if st.checkbox(f"Confirmed: {inert(sentence)}", key=f"{key}:ai:{i:d}"):
                confirmed.append(sentence)
    critical_findings = rt.settings.reports.critical_findings
    flagged = st.checkbox(
        "Flag as a critical result", key=f"{key}:flag", help="A critical result needs a communication record."
    )
    diagnosis = _diagnosis(rt, scan_id)
    critical = needs_communication(diagnosis, [texts["findings"], texts["impression"]], critical_findings, flagged=flagged)
    communication = communication_record(key, "before signing") if critical else None
    return {
        "confirmed_ai": confirmed,
        "communication": communication,
        "critical_findings": critical_findings,
        "flagged_critical": flagged,
        "ready": len(confirmed) == len(marked) and (not critical or (communication is not None and read_back_ok(communication))),
    }


def communication_record(
    key: str, when_needed: str, *, why: str = "", box: str = "critical-record"
) -> CriticalCommunication | None:
    """The critical-result fields (to whom, how, when, read back) in container ``box``; the record once a
    recipient is named (core checks it again)."""
    from core.reports.signing import METHODS, CriticalCommunication

    with st.container(border=True, key=box):
        st.markdown(f"🚨 **Critical result**{inert(why)}: record the communication {inert(when_needed)}.")
        c1, c2 = st.columns(2)
        recipient = c1.text_input("Told to (name and role)", key=f"{key}:to")
        method = c2.selectbox("How", METHODS, key=f"{key}:how")
        now = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0, tzinfo=None)
        when = st.datetime_input("When (UTC)", value=now, key=f"{key}:when")
        read_back = st.checkbox("The recipient read the result back", key=f"{key}:readback")
    if not recipient.strip():
        return None
    return CriticalCommunication(recipient, str(method), when.replace(tzinfo=dt.UTC), read_back)


def read_back_ok(c: CriticalCommunication) -> bool:
    """The record is complete enough to try signing (core checks it again)."""
    return bool(c.recipient.strip()) and c.read_back
