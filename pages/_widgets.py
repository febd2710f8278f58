"""Display pieces the pages share: the scan card, case cards, confidence badges, signed reports."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from pages._text import inert

if TYPE_CHECKING:
    from core.auth import ScanRow
    from core.contracts import SimilarCasesResult
    from core.reports import ReportRow

HIGHLIGHT_KEY = "highlight_case"
SCROLL_KEY = "scroll_to_case"
_BADGE = {
    "high": ("green", "High confidence"),
    "medium": ("orange", "Medium confidence"),
    "low": ("red", "Low confidence"),
}


def _open_case(case_id: str) -> None:
    from pages._viewer import open_beside  # lazy: the viewer module loads its component

    open_beside("case", case_id)


def card_key(case_id: str) -> str:
    """The container key of a case card (Streamlit renders it as the CSS class ``st-key-<key>``)."""
    return f"case-{case_id}"


def scan_card(scan: ScanRow, *, show_gauge: bool = True) -> None:
    """The current scan: anatomy, region, AI diagnosis, confidence gauge and date."""
    with st.container(border=True, key="scan-card"):
        st.subheader("Current scan")
        st.markdown(f"**{inert(scan.diagnosis)}** · AI reading")
        region = f" · region: {scan.region.replace('_', ' ')}" if scan.region else ""
        st.markdown(f"Anatomy: {inert(scan.anatomy)}{inert(region)}")
        st.write(f"Acquired: {scan.created_at:%Y-%m-%d}")
        if show_gauge:
            import plotly.graph_objects as go  # lazy: keeps the first paint fast

            gauge = go.Figure(
                go.Indicator(
                    mode="gauge+number",
                    value=round(scan.confidence * 100),
                    number={"suffix": "%"},
                    title={"text": "AI confidence"},
                    gauge={
                        "axis": {"range": [0, 100]},
                        "bar": {"color": "#2b6cb0"},
                        "steps": [
                            {"range": [0, 30], "color": "#fed7d7"},
                            {"range": [30, 70], "color": "#fefcbf"},
                            {"range": [70, 100], "color": "#c6f6d5"},
                        ],
                    },
                )
            )
            gauge.update_layout(height=200, margin={"t": 40, "b": 0, "l": 20, "r": 20})
            st.plotly_chart(gauge, width="stretch", key="gauge")
        else:
            st.progress(scan.confidence, text=f"AI confidence {scan.confidence:.0%}")


def case_cards(result: SimilarCasesResult) -> None:
    """Similar-case cards (age band, sex, date, region, diagnosis, outcome, similarity and why); the cited one is
    highlighted; each opens its image beside the current scan."""
    if result.notice:
        st.info(inert(result.notice))
    if not result.cases:
        st.warning("No comparable cases found in system memory. Manual review recommended.")
        return
    from core.cases.cards import case_card

    highlight = st.session_state.get(HIGHLIGHT_KEY)
    for case in result.cases:
        card = case_card(case)
        with st.container(border=True, key=card_key(case.caseId)):
            c1, c2 = st.columns([3, 2])
            pin = "📌 " if case.caseId == highlight else ""
            c1.markdown(pin + f"**{inert(card.title)}**")
            c1.caption(f"{inert(card.facts)}  \n{inert(card.outcome)}")
            c2.progress(card.similarity, text=f"Similarity {card.similarity:.0%}")
            c2.caption(inert(card.why))
            c2.button(
                "Open beside",
                key=f"open-{case.caseId}",
                icon="🔍",
                on_click=_open_case,
                args=(case.caseId,),
                type="tertiary",
                help="Shows this case's image in the viewer's second pane, scrolling and window linked.",
            )
    if highlight:
        css = f".st-key-{card_key(highlight)} {{outline: 3px solid #d69e2e; background: #fffbeb;}}"
        st.html(f"<style>{css}</style>")
    target = st.session_state.pop(SCROLL_KEY, None)
    if target:
        st.html(
            "<script>(() => { const el = document.querySelector('.st-key-"
            + card_key(target)
            + "'); if (el) el.scrollIntoView({behavior: 'smooth', block: 'center'}); })();</script>",
            unsafe_allow_javascript=True,
        )


def _jump(case_id: str) -> None:
    st.session_state[HIGHLIGHT_KEY] = case_id
    st.session_state[SCROLL_KEY] = case_id


def citation_chips(case_ids: list[str], key: str) -> None:
    """An answer's cited cases as one keyboard group: a "Sources" disclosure naming them (one tab stop);
    opened, one chip per case, and a click highlights and scrolls to its card."""
    if not case_ids:
        return
    sources = st.expander("Sources: " + ", ".join(inert(cid) for cid in case_ids), icon="🔗", key=f"chips-{key}")
    with sources, st.container(horizontal=True):
        for cid in case_ids:
            st.button(inert(cid), key=f"chip-{key}-{cid}", on_click=_jump, args=(cid,), type="tertiary")


def confidence_badge(confidence: str | None) -> None:
    """A coloured badge for ``high`` / ``medium`` / ``low``."""
    if confidence in _BADGE:
        color, label = _BADGE[confidence]
        st.badge(inert(label), color=color)  # type: ignore[arg-type]  # the colours are Streamlit's names


def reports_view(reports: list[ReportRow]) -> None:
    """Signed reports, read-only, newest first, with their version links; COMPARISON shown as its own section."""
    from core.reports import split_findings

    if not reports:
        st.caption("No signed report for this scan yet.")
        return
    for r in reports:
        status = "current" if r.is_current else f"superseded by report #{r.superseded_by}"
        when = f"{r.signed_at:%Y-%m-%d %H:%M}" if r.signed_at else "unsigned"
        with st.container(border=True, key=f"report-{r.id}"):
            st.markdown(
                f"**Report #{r.id:d} · version {r.version:d}** · signed {inert(when)} by {inert(r.author)} · {inert(status)}"
            )
            comparison, findings = split_findings(r.findings)
            st.markdown(
                (f"**COMPARISON:** {inert(comparison)}\n\n" if comparison else "")
                + f"**FINDINGS:** {inert(findings)}\n\n**IMPRESSION:** {inert(r.impression)}\n\n"
                f"**RECOMMENDATIONS:** {inert(r.recommendations or '—')}"
            )
            if r.amend_reason:
                st.caption(f"Reason for this amendment: {inert(r.amend_reason)}")
            if r.amends_colleague:
                st.caption("⚠️ This version amends a report another doctor signed.")
            if not r.sealed:
                st.error("This report's record-key seal does not verify: it was not written by Casebook.", icon="🛑")
            st.caption("Signed reports are read-only." + (" AI-assisted." if r.is_ai_corrected else ""))
