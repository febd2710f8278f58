"""My documents: a doctor's own document space (and the shared one) — upload, list by title, delete, re-ingest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import streamlit as st

from core.errors import CasebookError
from pages._mydocs_identity import FLASH, identity_form
from pages._shared import feature_limit, show_error
from pages._text import inert

if TYPE_CHECKING:
    from core.auth import CurrentUser
    from core.kb.spaces import DocumentSpaces

_FLASH = FLASH  # one flash list for the page and its identity form
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
        "rebuilds of the demo content. Only you see your space. To put one in the **shared space** (searched for "
        "every doctor), ask to share it: a second doctor approves the request, and every answer names its uploader."
    )
    for kind, text in st.session_state.pop(_FLASH, []):
        (st.success if kind == "ok" else st.error)(inert(text))  # titles and file names are typed text
    files = st.file_uploader(
        f"Documents (up to {max_mb} MB each)",
        type=list(UPLOAD_TYPES),
        accept_multiple_files=True,
        key=f"mydocs-upload-{st.session_state.get(_ROUND, 0)}",
        help=f"Each file may be up to {max_mb} MB. PDFs are read for their headings; scanned images are not.",
    )
    if files and st.button("Add documents", key="mydocs-add", type="primary"):
        _upload(settings, user.id, owner, files)
    _listing(settings, owner)
    _requests(settings, owner)


def _sharing(settings: str) -> Any:
    from core.kb.sharing import Sharing
    from pages._shared import get_runtime

    return Sharing(spaces_for(settings), get_runtime().db)


def _requests(settings: str, owner: str) -> None:
    """Share requests of other doctors, for this doctor to approve or reject (never their own)."""
    from core.kb.provenance import user_names
    from pages._shared import get_runtime

    waiting = [r for r in _sharing(settings).pending() if r["owner"] != owner]
    if not waiting:
        return
    names = user_names(get_runtime().db)
    st.markdown("**Waiting for a second doctor's approval to share**")
    for r in waiting:
        col_text, col_ok, col_no = st.columns([4, 1, 1], vertical_alignment="center")
        col_text.markdown(f"{inert(r['title'])} · from {inert(names(r['owner']))}")
        approve = col_ok.button("Approve", key=f"mydocs-approve-{r['id']}")
        reject = col_no.button("Reject", key=f"mydocs-reject-{r['id']}")
        if approve or reject:
            try:
                (_sharing(settings).approve if approve else _sharing(settings).reject)(owner, r["id"])
            except CasebookError as exc:
                show_error("The request could not be answered", exc)
                return
            st.session_state[_FLASH] = [("ok", f"{'Shared' if approve else 'Rejected'}: {r['title']}.")]
            st.rerun()


def _upload(settings: str, user_id: int, owner: str, files: list[Any]) -> None:
    from core import audit
    from core.kb.spaces import space_of
    from core.progress import Eta
    from pages._shared import get_runtime

    named = [(str(f.name), bytes(f.getvalue())) for f in files]
    space = space_of(owner)
    bar = st.progress(0.0, text=f"Reading and indexing {len(named)} document(s)…")
    try:
        with feature_limit("upload"):  # the signed-in user's rate limit on uploads
            report = spaces_for(settings).upload(owner, named, progress=Eta(lambda f, text: bar.progress(f, text=text)))
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
        flash.append(
            ("ok", f"Added {len(report.docs)} document(s) to your documents ({report.chunks_added} passages).")
        )
    flash += [("error", f"Skipped {e.error}") for e in report.errors]
    flash += [("error", f"Flagged {f}") for f in report.flagged]
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
    rows = [{"Title": d.title, "Issuer": d.issuer or "", "Year": str(d.year or ""), "File": d.file_name,
             "Space": "Shared" if d.shared else "Mine", "Passages": d.n_chunks,
             "Instruction-like text kept out": d.flagged} for d in docs]  # fmt: skip (a table shows plain text)
    st.dataframe(rows, hide_index=True)
    labels = {f"{d.title} ({'shared' if d.shared else 'mine'})": d for d in docs}
    col_pick, col_delete, col_again, col_share = st.columns([3, 1, 1, 1], vertical_alignment="bottom")
    picked = col_pick.selectbox("Document", list(labels), key="mydocs-pick")
    if col_share.button("Ask to share", key="mydocs-share", help="A second doctor approves before it is shared.") and (
        picked and not labels[picked].shared
    ):
        try:
            _sharing(settings).request(owner, labels[picked].doc_id)
        except CasebookError as exc:
            show_error("The share request could not be made", exc)
            return
        st.session_state[_FLASH] = [("ok", f"Asked to share {labels[picked].title}; a second doctor approves it.")]
        st.rerun()
    if col_delete.button("Delete", key="mydocs-delete") and picked:
        doc = labels[picked]
        try:
            spaces.delete(owner, doc.doc_id, shared=doc.shared)
        except CasebookError as exc:
            show_error("The document could not be deleted", exc)
            return
        st.session_state[_FLASH] = [("ok", f"Deleted {doc.title}.")]
        st.rerun()
    if picked:
        identity_form(spaces, owner, labels[picked])
    if col_again.button("Re-ingest mine", key="mydocs-reingest", help="Read your kept files again (after an update)."):
        from core.progress import Eta

        bar = st.progress(0.0, text="Re-reading your documents…")
        try:
            report = spaces.reingest(owner, progress=Eta(lambda f, text: bar.progress(f, text=text)))
        except CasebookError as exc:
            show_error("Re-ingestion failed", exc)
            return
        st.session_state[_FLASH] = [("ok", f"Re-ingested {len(report.docs)} document(s).")] + [
            ("error", f"Skipped {e.error}") for e in report.errors
        ]
        st.rerun()
