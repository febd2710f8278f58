"""Guideline QA widgets: the question form, the answer with its evidence trail, and plain KB search."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import streamlit as st

from core.errors import CasebookError
from pages._shared import feature_limit, runtime_for, runtime_part, show_error
from pages._text import inert, inert_badged

if TYPE_CHECKING:
    from core.guideline.pipeline import GuidelineQA
    from core.guideline.types import Bullet, Disagreement, DoseConflict, QAAnswer, QAResult, Route
    from core.kb.base import KnowledgeBase

ROUTES: dict[str, Route | None] = {
    "Automatic (router decides)": None,
    "Guidelines only": "guideline",
    "Drug labels only": "drug",
    "Guidelines and drug labels": "mixed",
}
ROUTE_BADGE = {
    "guideline": ("Guideline", "blue"),
    "drug": ("Drug label", "violet"),
    "mixed": ("Guideline + drug label", "orange"),
    "out_of_domain": ("Out of scope", "gray"),
}
EXAMPLES = (
    "What is the usual adult dose of isoniazid for tuberculosis?",
    "Which antibiotics are recommended for outpatient community-acquired pneumonia without comorbidities?",
    "What are the contraindications of ceftriaxone?",
)
RESULT_KEY = "guideline:result"
_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")


def kb_for(settings: str) -> KnowledgeBase:
    """The runtime's knowledge bases (the indexes Ask AI and Self-RAG search too)."""
    kb: KnowledgeBase = runtime_part(runtime_for(settings), "kb", "Opening the knowledge bases…")
    return kb


def qa_for(settings: str) -> GuidelineQA:
    """The runtime's Guideline QA: its shared indexes and, when ``guideline.writer`` is ``llm``, its shared model."""
    qa: GuidelineQA = runtime_part(runtime_for(settings), "guideline_qa", "Loading guideline QA…")
    return qa


def highlight(snippet: str, bullet: str) -> str:
    """``snippet`` as Markdown with the words it shares with ``bullet`` highlighted."""
    shared = {w.lower() for w in _WORD.findall(bullet) if len(w) > 3}
    out, last = [], 0
    for m in _WORD.finditer(snippet):
        out.append(inert(snippet[last : m.start()]))
        word = m.group(0)
        out.append(f":orange-background[{inert(word)}]" if word.lower() in shared else inert(word))
        last = m.end()
    out.append(inert(snippet[last:]))
    return "".join(out)


def kb_summary(kb: KnowledgeBase) -> dict[str, Any]:
    try:
        return kb.stats()
    except CasebookError as exc:
        show_error("The knowledge bases cannot be read", exc)
        st.stop()


def _origin(b: Bullet) -> str:
    """Whose document the bullet came from: a curated source, the doctor's own upload or a colleague's."""
    from core.kb.provenance import describe, origin_line, user_names
    from core.kb.spaces import owner_key
    from pages._shared import current_user, get_runtime

    rt, user = get_runtime(), current_user()
    root = rt.settings.paths.resolve(rt.settings.paths.data_dir) / "documents"
    owner = describe(root, b.evidence.kb, b.evidence.chunk_id, owner_key(user.id) if user else None)
    return origin_line(owner, user_names(rt.db) if owner.kind != "curated" else str, b.evidence.source)


def _bullet(i: int, b: Bullet, with_evidence: bool) -> None:
    from core.guideline.present import split_tables, table_rows

    rows = table_rows(b.text)
    if rows:
        st.markdown(f"**{i:d}.** From a table:")
        st.table(rows)
    for n, block in enumerate(split_tables(b.text) if not rows else []):
        if isinstance(block, list):  # a table row, or a lead-in and the table it introduces
            st.table(block)
        else:
            st.markdown((f"**{i:d}.** " if n == 0 else "") + inert(block.replace("\n", " ")))
    ref = f" · {b.evidence.ref.line()}" if b.evidence.ref is not None else ""  # title, issuer, year, section, page
    st.caption(inert_badged(_origin(b) + ref, b.evidence.demo))  # every bullet says whose document it came from (issue 26) and where in it
    if b.other_population:
        st.caption(f"Evidence for {inert(b.population or 'another group')}, not the group asked about.")
    if with_evidence:
        st.markdown("> " + highlight(b.evidence.text, b.text))
        st.caption(f"Source: {inert_badged(b.evidence.source, b.evidence.demo)} · word overlap {b.overlap:.0%}")


def _disagreement(d: Disagreement) -> None:
    """Documents that state different values for one slot: one column per document, each named."""
    st.warning(f"**Sources differ on {inert(d.topic)}.** Each document's own values, side by side:", icon="⚖️")
    for column, (doc, values) in zip(st.columns(len(d.values)), d.values.items(), strict=True):
        column.markdown(f"**{inert(doc)}**")
        column.markdown("\n".join(f"- {inert(v)}" for v in values))


def _conflict(k: DoseConflict) -> None:
    """An upload's dose that contradicts the curated label's same slot: both documents side by side, the label first."""
    who = f" for {k.population}" if k.population else ""
    with st.container(border=True):
        st.markdown(f"**Sources differ on the dose of {inert(k.drug + who)}: the label is not overridden.**")
        label, upload = st.columns(2)
        label.markdown(f"**{inert(k.label_source or k.drug + ' label')}** (curated) states "
                       f"{inert(', '.join(k.label) or 'no dose')}")  # fmt: skip
        for line in k.label_lines:
            label.caption(inert(line))
        upload.error(
            f"Conflict, not an answer: {inert(k.source or 'an uploaded document')} says \u201c{inert(k.text)}\u201d "
            f"({inert(', '.join(k.stated))}).",
            icon="⚠️",
        )


def _chunk(text: str) -> None:
    """A chunk's text, its tables shown as tables."""
    from core.guideline.present import split_tables

    for block in split_tables(text[:1500]):
        if isinstance(block, list):
            st.table(block)
        else:
            st.caption(inert(block))


def _confidence_label(result: QAAnswer) -> tuple[str, str]:
    """What the shown number is: the fitted chance of being right (over documents) or the retrieval confidence."""
    step = result.trace.step("answer_confidence")
    if step is not None and step.detail.get("mapped"):
        return "Chance right", ("Estimated chance that this answer is right, fitted on real guideline questions "
                                "over uploaded documents (docs/GUIDELINE_QA.md, calibration).")  # fmt: skip
    return "Retrieval confidence", "Calibrated confidence of the best evidence chunk, fitted on the demo knowledge bases."


def show_result(result: QAResult) -> None:
    """An answer (a direct statement, one line per bullet, evidence behind a toggle), or the abstention card."""

    label, colour = ROUTE_BADGE.get(result.route, (result.route, "gray"))
    st.badge(inert(label), color=colour)  # type: ignore[arg-type]
    if any(e.kb == "user" or e.kb.startswith("user.") for e in getattr(result, "evidence", [])):
        st.badge("Your documents", color="green")
    if result.kind == "abstain":
        with st.container(border=True):
            st.warning(
                f"**No answer (ABSTAIN).** {inert(result.reason[:1].upper() + result.reason[1:])}",
                icon="🛑",
            )
            if result.stage != "policy":  # a refused request gets no advice on rephrasing it
                st.caption(
                    f"Stopped at the {inert(result.stage)} step. Casebook answers only from retrieved guideline and "
                    "drug-label text; rephrase the question, pick another knowledge base, or consult the source."
                )
    else:
        m1, m2, m3 = st.columns(3)
        m1.metric("Bullets", len(result.bullets))
        label, meaning = _confidence_label(result)
        m2.metric(inert(label), f"{result.confidence:.0%}", help=meaning)
        m3.metric("Written by", result.backend)
        for k in result.conflicts:  # an upload that contradicts the label: beside the label, never as the answer
            _conflict(k)
        with st.container(border=True):
            if result.statement:
                st.markdown(f"**{inert(result.statement)}**")
            for d in result.disagreements:  # shown side by side as one difference, never merged
                _disagreement(d)
            for i, b in enumerate(result.bullets, 1):
                _bullet(i, b, st.session_state.get("guideline-evidence", False))
            sources = list(dict.fromkeys((e.source, e.demo) for e in result.evidence))
            st.caption(
                "Source: "
                + (" · ".join(inert_badged(x, demo) for x, demo in sources) if sources else "the label's list of sections")
            )
        st.toggle("Show the evidence behind each bullet", key="guideline-evidence")
        if result.patient_summary:
            with st.expander("Patient-friendly summary"):
                st.markdown(inert(result.patient_summary))  # model text: plain, never live Markdown
        with st.expander(f"Evidence chunks ({len(result.evidence):d})"):
            for c in result.evidence:
                st.markdown(
                    f"**{inert_badged(c.source, c.demo)}** · {inert(c.kb)} · confidence {c.confidence:.0%}"
                )
                _chunk(c.text)
    with st.expander("Trace (every step)"):
        st.json([s.model_dump() for s in result.trace.steps], expanded=False)


def ask_panel(settings: str, kbs: dict[str, Any], spaces: tuple[str, ...] = ()) -> None:
    """The question form and the last answer; ``spaces`` are the doctor's document spaces (searched too)."""
    from core.kb.specs import ROUTED_KBS

    if not any(kbs.get(kb, {}).get("exists") for kb in ROUTED_KBS):
        st.info(
            "No guideline or drug-label knowledge base is built yet. Run `python -m core setup` "
            "(or `make run`) to build the demo knowledge bases, then reload this page.",
            icon="📚",
        )
        return
    choice = st.selectbox(
        "Knowledge base",
        list(ROUTES),
        key="guideline-route",
        help="Automatic: the router picks guidelines, drug labels or both from the question's wording.",
    )
    only_mine = st.toggle(
        "Search my documents only",
        key="guideline-only-mine",
        disabled=not spaces,
        help="Your documents (and the shared space) are searched with the curated bases; this searches only them."
        if spaces
        else "Add documents under My documents first.",
    )
    with st.form("guideline-ask"):
        question = st.text_area(
            "Question",
            key="guideline-question",
            placeholder=EXAMPLES[0],
            help="Tuberculosis and community-acquired pneumonia only. Not for individual treatment decisions.",
        )
        asked = st.form_submit_button("Ask", type="primary")
    st.caption("Examples: " + " · ".join(f"_{inert(e)}_" for e in EXAMPLES))
    if asked:
        if not question.strip():
            st.warning("Type a question first.")
        else:
            try:
                with feature_limit("guideline"), st.spinner("Retrieving and checking evidence…"):
                    st.session_state[RESULT_KEY] = qa_for(settings).answer(
                        question.strip(), route=ROUTES[choice], spaces=spaces, only_spaces=only_mine and bool(spaces)
                    )
            except CasebookError as exc:
                show_error("Guideline QA failed", exc)
                return
    result = st.session_state.get(RESULT_KEY)
    if result is not None:
        show_result(result)


def search_panel(settings: str, kbs: dict[str, Any]) -> None:
    """Plain retrieval over one knowledge base (no answer), for checking what a KB holds."""
    built = [k for k, v in kbs.items() if v.get("exists")]
    if not built:
        st.caption("No knowledge base is built yet.")
        return
    kb_name = st.selectbox("Knowledge base to search", built, key="kb-search-kb")
    query = st.text_input("Search text", key="kb-search-q")
    if not query.strip():
        return
    try:
        hits = kb_for(settings).search(query.strip(), kb_name, 5)
    except CasebookError as exc:
        show_error("Search failed", exc)
        return
    if not hits:
        st.info("Nothing in this knowledge base matches.")
    for h in hits:
        st.markdown(f"**{inert(h.title or h.doc_id)}** · {inert(h.section_title or '—')} · score {h.score:.3f}")
        st.caption(inert(h.text[:400] + ("…" if len(h.text) > 400 else "")))
