"""PACS: search the hospital PACS, import chosen studies de-identified, and send signed reports back.

The same core as ``python -m core pacs`` (core/pacs/): the study list comes from
QIDO-RS and is kept in this session only (it holds the PACS's names and ids: never
stored or logged); import goes through the file importer's de-identifying,
all-or-nothing path with a progress bar; each signed report of a PACS study is sent
back with a button as a DICOM SR (STOW-RS) and a FHIR DiagnosticReport. Doctors only.
"""

from __future__ import annotations

import datetime as dt

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from core.errors import CasebookError
from core.store.models import ANATOMIES
from pages._shared import DEMO_NOTICE, get_runtime, require_user, show_error
from pages._text import inert

FROM_HEADERS = "From the DICOM headers"
HITS = "pacs_hits"  # session state: this session's study list
SENT = "pacs_sent"  # session state: the last Send's message, shown after the rerun that refreshes the states

user = require_user(doctor=True)
st.title("PACS")
st.caption(DEMO_NOTICE)
rt = get_runtime()
cfg = rt.settings.pacs
if not (cfg.url if cfg.protocol == "dicomweb" else cfg.dimse_host):
    st.info("No PACS is configured. Set pacs.url and pacs.username (docs/INTEGRATION.md).", icon="🏥")
    st.stop()

from core.pacs.client import StudyQuery, endpoint_label, make_client  # noqa: E402  (after the configuration check)
from core.pacs.imports import import_studies, linked  # noqa: E402

where = endpoint_label(cfg.url) if cfg.protocol == "dicomweb" else f"{cfg.dimse_host}:{cfg.dimse_port:d}"
st.caption(
    f"Studies from {inert(where)} over {'DIMSE' if cfg.protocol == 'dimse' else 'DICOMweb'}; "
    "identifying data is removed on the way in."
)
studies_tab, reports_tab = st.tabs(["Studies", "Reports to the PACS"])


def _show(bar: DeltaGenerator, fraction: float, message: str) -> None:
    bar.progress(min(fraction, 1.0), text=inert(message))


def _day(d: dt.date | None) -> str:
    return d.strftime("%Y%m%d") if d else ""


with studies_tab:
    with st.form("pacs-search", border=True):
        c1, c2, c3 = st.columns(3)
        name = c1.text_input("Patient name", placeholder="Surname or a prefix")
        pid = c2.text_input("Patient ID")
        accession = c3.text_input("Accession number")
        d1, d2, d3 = st.columns(3)
        since = d1.date_input("Studies from", value=None)
        until = d2.date_input("Studies until", value=None)
        modality = d3.text_input("Modality", placeholder="CT, MR, CR…")
        searched = st.form_submit_button("Search the PACS", type="primary", icon="🔎")
    if searched:
        bar = st.progress(0.0, text="Searching…")
        query = StudyQuery(name, pid, _day(since), _day(until), modality, accession)
        try:
            st.session_state[HITS] = make_client(cfg).search_studies(query, progress=lambda f, m: _show(bar, f, m))
        except CasebookError as exc:
            st.session_state.pop(HITS, None)
            show_error("The PACS search failed", exc)
        bar.empty()
    hits = st.session_state.get(HITS)
    if hits is not None:
        done = linked(rt.settings, rt.db, make_client(cfg), [h.study_uid for h in hits]) if hits else {}
        st.subheader(f"Studies found: {len(hits):d}")
        chosen = []
        for i, h in enumerate(hits):
            picked = st.checkbox(
                f"{inert(h.date)} · {inert(h.modalities)} · {inert(h.patient_name)} · ID {inert(h.patient_id)}"
                f" · accession {inert(h.accession or '-')} · {h.series:d} series, {h.instances:d} images"
                + (" · imported" if h.study_uid in done else ""),
                key=f"pacs-pick-{i}",
                disabled=h.study_uid in done,
            )
            if picked:
                chosen.append(h.study_uid)
        a1, a2 = st.columns(2)
        anatomy = a1.selectbox("Anatomy", [FROM_HEADERS, *ANATOMIES], help="Needed when Body Part Examined is empty.")
        confirmed = a2.checkbox("No identifying text is burned into these images (I have looked)")
        if st.button("Import selected studies", type="primary", icon="📥", disabled=not chosen):
            bar = st.progress(0.0, text="Starting…")
            try:
                outcomes = import_studies(
                    rt.settings, rt.db, make_client(cfg), chosen, actor_id=user.id,
                    anatomy=None if anatomy == FROM_HEADERS else anatomy, confirm_burned_in=confirmed,
                    progress=lambda f, m: _show(bar, f, m),
                )  # fmt: skip
            except CasebookError as exc:
                show_error("The import stopped", exc)
                st.stop()
            st.cache_data.clear()  # the scan lists must see the new scans
            for o in outcomes:
                if o.status == "refused":
                    st.error(f"Study {o.position:d} was refused: {inert(o.error)}  \n{inert(o.hint)}", icon="⚠️")
                elif o.scan_id:
                    st.page_link(
                        "pages/scan_review.py", query_params={"scan": o.scan_id}, icon="🩻",
                        label=f"Study {o.position:d} imported ({o.images:d} images): open it"
                        if o.status == "imported" else f"Study {o.position:d} was imported before: open it",
                    )  # fmt: skip
            st.success(f"{sum(o.status == 'imported' for o in outcomes):d} imported.", icon="✅")

with reports_tab:
    from core.pacs.export import export_report, resend_queued
    from core.pacs.status import pacs_reports

    rows = pacs_reports(rt.db)
    if SENT in st.session_state:
        st.success(f"Report {st.session_state.pop(SENT):d} sent as DICOM SR and FHIR.", icon="✅")
    if not rows:
        st.info("No signed report of a study imported from the PACS yet.")
    queued = sum(r.pending for r in rows if r.sr != "not sent" or r.fhir != "not sent")
    if queued and st.button(f"Re-send the {queued:d} queued report(s)", icon="🔁"):
        for e in resend_queued(rt.settings, rt.db, actor_id=user.id):
            (st.success if e.status == "sent" else st.warning)(
                f"Report {e.report_id:d} {inert(e.target)}: {inert(e.status)}"
            )
    for r in rows:
        c1, c2 = st.columns([4, 1])
        when = f"{r.signed_at:%Y-%m-%d %H:%M}" if r.signed_at else "-"
        c1.markdown(
            f"**Report {r.report_id:d}** v{r.version:d} · signed {inert(when)} · SR: {inert(r.sr)} · FHIR: {inert(r.fhir)}"
        )
        if r.pending and c2.button("Send", key=f"send-{r.report_id}", icon="📤"):
            try:
                export_report(rt.settings, rt.db, r.report_id, actor_id=user.id)
                st.session_state[SENT] = r.report_id
                st.rerun()  # show the new states
            except CasebookError as exc:
                show_error(f"Report {r.report_id:d} is queued", exc)
