"""My documents: the title, issuer and year read from a document, shown and corrected by its owner (issue 24, item 5)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from core.errors import CasebookError
from pages._shared import get_runtime, show_error

if TYPE_CHECKING:
    from core.kb.spaces import DocumentSpaces, SpaceDocument

FLASH = "mydocs:flash"


def identity_form(spaces: DocumentSpaces, owner: str, doc: SpaceDocument) -> None:
    """A small form to correct ``doc``'s title, issuer and year; a shared document says why it is not editable."""
    from core.kb.docidentity import MAX_CHARS, correct_identity

    with st.expander("Title, issuer and year (as read from the document)", expanded=False):
        if doc.shared:
            st.caption(
                "A shared document is corrected through its owner's copy: correct the title in your own "
                "documents, then ask to share it again; a second doctor approves the new version."
            )
            return
        with st.form(f"mydocs-identity-{doc.doc_id}"):
            title = st.text_input("Title", value=doc.title, max_chars=MAX_CHARS, key=f"mydocs-title-{doc.doc_id}")
            issuer = st.text_input("Issuer", value=doc.issuer or "", max_chars=MAX_CHARS,
                                   key=f"mydocs-issuer-{doc.doc_id}")  # fmt: skip
            year = st.text_input("Year", value=str(doc.year or ""), key=f"mydocs-year-{doc.doc_id}",
                                 help="Four digits, or empty when the document names none.")  # fmt: skip
            saved = st.form_submit_button("Save correction")
        if not saved:
            return
        try:
            old, new = correct_identity(spaces, get_runtime().db, owner, doc.doc_id, (title, issuer, year))
        except CasebookError as exc:
            show_error("The correction was not saved", exc)
            return
        st.session_state[FLASH] = [("ok", f"Saved: {old.title} -> {new.title}. Answers now cite the corrected title.")]
        st.rerun()
