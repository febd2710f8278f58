"""A doctor corrects the title, issuer and year of a document in their own space (issue 24, item 5).

Ingestion reads a document's identity from its metadata and first pages
(:mod:`core.kb.parse.identity`); the My documents page shows it and lets the owner correct it.

* **Who.** Only the owner, and only in their own space: the document is looked up in
  ``space_of(owner)``, so another doctor's document is "not in your documents". A document in
  the shared space is refused (:class:`AccessDeniedError`): it entered every doctor's answers
  through a second doctor's approval (core.kb.sharing), and a correction must not skip that. The
  owner corrects their own copy and asks to share it again; the request records that identity and
  the approval applies it (a later change to the copy waits for its own approval).
* **What.** :func:`validate` refuses an empty title, one over 200 characters, markup or control
  characters, an issuer over 200 characters and a year that is not four digits (1900-2099) or
  empty, with a :class:`InvalidInputError` naming the field; nothing is written then.
* **Where.** Bullets cite the identity stored on each chunk (``title``, ``organisation``,
  ``year``), so the correction writes a new version of the space's index in which every chunk of
  the document carries it, plus the document's title row: one atomic swap
  (:func:`core.kb.index.ingest.apply_update` with ``revise``), vectors kept (the dense vectors
  still embed the old title; BM25 is rebuilt with the new one).
* **Record.** The space's ``provenance.json`` keeps the corrected identity (re-ingestion applies it
  again) and a history of old -> new values with who and when; the audit log gets a
  ``doc.identity`` row (actor, document, changed fields; its values hashed, as every audit row's free text).
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING, Any

from core import audit as audit_events
from core.errors import AccessDeniedError, InvalidInputError, NotFoundError
from core.kb.docrecord import Identity, with_identity
from core.kb.provenance import read_provenance, write_provenance

if TYPE_CHECKING:
    from core.kb.spaces import DocumentSpaces
    from core.store.db import Database

__all__ = ["MAX_CHARS", "Identity", "correct_identity", "validate", "with_identity"]

MAX_CHARS = 200
_MARKUP = re.compile(r"<\s*[/!?a-zA-Z]|[\x00-\x1f\x7f]")  # a tag, a comment or a control character
_YEAR = re.compile(r"(19|20)\d\d")


def _text(label: str, value: str, required: bool) -> str | None:
    text = re.sub(r"[ \t]+", " ", value or "").strip()
    if not text:
        if required:
            raise InvalidInputError(f"The {label} is empty", hint=f"Type the document's {label}.")
        return None
    if len(text) > MAX_CHARS:
        raise InvalidInputError(f"The {label} is {len(text)} characters long; at most {MAX_CHARS} are allowed")
    if _MARKUP.search(text):
        raise InvalidInputError(
            f"The {label} contains markup or control characters", hint="Type plain text, without < > tags."
        )
    return text


def validate(title: str, issuer: str = "", year: str = "") -> Identity:
    """The identity a doctor typed, checked; :class:`InvalidInputError` names the first bad field."""
    clean_year = (year or "").strip()
    if clean_year and not _YEAR.fullmatch(clean_year):
        raise InvalidInputError(
            f"The year {clean_year[:20]!r} is not a four-digit year", hint="e.g. 2024, or leave it empty."
        )
    return Identity(
        _text("title", title, True) or "", _text("issuer", issuer, False), int(clean_year) if clean_year else None
    )


def correct_identity(
    spaces: DocumentSpaces,
    db: Database | None,
    owner: str,
    doc_id: str,
    typed: tuple[str, str, str],
    shared: bool = False,
) -> tuple[Identity, Identity]:
    """Set the typed ``(title, issuer, year)`` as the identity of ``doc_id`` in ``owner``'s own space.

    Returns ``(old, new)``. Bad input is :class:`InvalidInputError` (:func:`validate`), a shared
    document :class:`AccessDeniedError`, an id not in the owner's space :class:`NotFoundError`;
    each before anything is written.
    """
    from core.kb.index.ingest import apply_update
    from core.kb.spaces import space_of

    if not owner:
        raise AccessDeniedError("Sign in to correct your documents")
    if shared:
        _audit(db, owner, doc_id, "refused")
        raise AccessDeniedError(
            "A shared document's title, issuer and year cannot be corrected here",
            hint="Correct your own copy under My documents, then ask to share it again: a second doctor approves it.",
        )
    new = validate(*typed)
    space = space_of(owner)
    docs = {d.doc_id: d for d in spaces.documents(owner, include_shared=False)}
    if doc_id not in docs:
        raise NotFoundError(f"No document {doc_id!r} in your documents", hint="Reload the list and try again.")
    doc = docs[doc_id]
    old = Identity(doc.title, doc.issuer, doc.year)
    if old == new:
        return old, new
    kb = spaces.kb
    apply_update(kb.root, space, kb.embedder, kb.token_counter, spaces.settings.kb, revise={doc_id: new.fields()})
    folder = spaces.files_root / space
    history = list(read_provenance(folder).get(doc_id, {}).get("identity_history", []))
    history.append({"at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "by": owner,
                    "old": vars(old), "new": vars(new)})  # fmt: skip
    write_provenance(folder, doc_id, identity=vars(new), identity_history=history)
    changed = [k for k in ("title", "issuer", "year") if getattr(old, k) != getattr(new, k)]
    _audit(db, owner, doc_id, "ok", fields=changed, **{f"{k}_old": getattr(old, k) for k in changed},
           **{f"{k}_new": getattr(new, k) for k in changed})  # fmt: skip
    return old, new


def _audit(db: Database | None, owner: str, doc_id: str, outcome: str, **ids: Any) -> None:
    if db is not None:
        actor = int(owner[1:]) if re.fullmatch(r"u\d{1,12}", owner) else None  # core.kb.spaces.owner_key
        audit_events.record(db, audit_events.DOC_IDENTITY, actor, doc_id, outcome=outcome, **ids)
