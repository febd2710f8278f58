"""My documents: a doctor's own document space (and the shared one) — upload, list by title, delete, re-ingest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from core.errors import CasebookError
from pages._shared import show_error

if TYPE_CHECKING:
    from core.auth import CurrentUser
    from core.kb.spaces import DocumentSpaces

_FLASH = "mydocs:flash"
_ROUND = "mydocs:round"


def spaces_for(settings: str) -> DocumentSpaces:
    """The document spaces over the runtime's knowledge bases."""
    from core.kb.spaces import DocumentSpaces
    from pages._guideline import kb_for

    return DocumentSpaces(kb_for(settings))


def my_spaces(settings: str, user: CurrentUser) -> tuple[str, ...]:
    """The signed-in doctor's spaces that hold documents (own, then shared), for Guideline QA to search too."""
    from core.kb.spaces import doctor_spaces, owner_key

    return tuple(doctor_spaces(spaces_for(settings).settings, owner_key(user.id)))


def mydocs_panel(settings: str, user: CurrentUser, max_mb: int) -> None:
    """Upload, list, delete and re-ingest the doctor's documents."""
    from core.kb.spaces import UPLOAD_TYPES, owner_key

    owner = owner_key(user.id)
    st.markdown(
        "Add your own guidelines (Markdown, HTML, PDF) or drug labels (SPL XML, DailyMed zip). They are kept in "
        "**your document space**, searched with the curated knowledge bases when you ask a question, and survive "
        "rebuilds of the demo content. Only you see your space; the **shared space** is visible to every doctor."
    )
    for kind, text in st.session_state.pop(_FLASH, []):
        (st.success if kind == "ok" else st.error)(text)
    shared = st.toggle("Add to the shared space", key="mydocs-shared", help="Every doctor can search the shared space.")
    files = st.file_uploader(
        f"Documents (up to {max_mb} MB each)",
        type=list(UPLOAD_TYPES),
        accept_multiple_files=True,
        key=f"mydocs-upload-{st.session_state.get(_ROUND, 0)}",
        help=f"Each file may be up to {max_mb} MB. PDFs are read for their headings; scanned images are not.",
    )
    if files and st.button("Add documents", key="mydocs-add", type="primary"):
        _upload(settings, user.id, owner, files, shared)
    _listing(settings, owner)


def _upload(settings: str, user_id: int, owner: str, files: list[Any], shared: bool) -> None:
    from core import audit
    from core.kb.spaces import SHARED_SPACE, space_of
    from pages._shared import get_runtime

    named = [(str(f.name), bytes(f.getvalue())) for f in files]
    space = SHARED_SPACE if shared else space_of(owner)
    try:
        with st.spinner(f"Reading and indexing {len(named)} document(s)… large PDFs take a minute or two."):
            report = spaces_for(settings).upload(owner, named, shared=shared)
    except CasebookError as exc:
        audit.record(get_runtime().db, audit.UPLOAD, user_id, space, outcome="error", files=len(named))
        show_error("The documents could not be added", exc)
        return
    # who added how much to which space; never file names or contents
    audit.record(get_runtime().db, audit.UPLOAD, user_id, space, outcome="ok" if report.docs else "error",
                 files=len(named), docs=len(report.docs), chunks=report.chunks_added,
                 errors=len(report.errors))  # fmt: skip
    flash = []
    if report.docs:
        where = "the shared space" if shared else "your documents"
        flash.append(("ok", f"Added {len(report.docs)} document(s) to {where} ({report.chunks_added} passages)."))
    flash += [("error", f"Skipped {e.error}") for e in report.errors]
    st.session_state[_FLASH] = flash
    st.session_state[_ROUND] = st.session_state.get(_ROUND, 0) + 1  # a fresh, empty uploader
    st.rerun()  # the list below shows the new documents


def _listing(settings: str, owner: str) -> None:
    spaces = spaces_for(settings)
    try:
        docs = spaces.documents(owner)
    except CasebookError as exc:
        show_error("Your documents cannot be read", exc)
        return
    if not docs:
        st.info("You have no documents yet. Add one above; it will be searched with the curated guidelines.")
        return
    rows = [{"Title": d.title, "File": d.file_name, "Space": "Shared" if d.shared else "Mine",
             "Passages": d.n_chunks} for d in docs]  # fmt: skip
    st.dataframe(rows, hide_index=True)
    labels = {f"{d.title} ({'shared' if d.shared else 'mine'})": d for d in docs}
    col_pick, col_delete, col_again = st.columns([3, 1, 1], vertical_alignment="bottom")
    picked = col_pick.selectbox("Document", list(labels), key="mydocs-pick")
    if col_delete.button("Delete", key="mydocs-delete") and picked:
        doc = labels[picked]
        try:
            spaces.delete(owner, doc.doc_id, shared=doc.shared)
        except CasebookError as exc:
            show_error("The document could not be deleted", exc)
            return
        st.session_state[_FLASH] = [("ok", f"Deleted {doc.title}.")]
        st.rerun()
    if col_again.button("Re-ingest mine", key="mydocs-reingest", help="Read your kept files again (after an update)."):
        try:
            with st.spinner("Re-reading your documents…"):
                report = spaces.reingest(owner)
        except CasebookError as exc:
            show_error("Re-ingestion failed", exc)
            return
        st.session_state[_FLASH] = [("ok", f"Re-ingested {len(report.docs)} document(s).")] + [
            ("error", f"Skipped {e.error}") for e in report.errors
        ]
        st.rerun()
