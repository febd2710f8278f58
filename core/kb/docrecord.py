"""A document's identity (title, issuer, year) and how a stored correction applies to it.

Kept apart from :mod:`core.kb.docidentity` (which validates and stores a doctor's correction and
needs :mod:`core.kb.spaces`) so that :mod:`core.kb.spaces` can apply corrections without an
import cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.kb.types import Document

__all__ = ["Identity", "with_identity"]


@dataclass(frozen=True)
class Identity:
    """What a bullet names a document by: title, issuer (``organisation`` on chunks) and year."""

    title: str
    issuer: str | None = None
    year: int | None = None

    def fields(self) -> dict[str, Any]:
        """The chunk fields this identity sets."""
        return {"title": self.title, "organisation": self.issuer, "year": self.year}


def with_identity(doc: Document, record: dict[str, Any] | None) -> Document:
    """``doc`` with a stored correction (``provenance.json``'s ``identity``) applied to it and its chunks."""
    if not record or not record.get("title"):
        return doc
    ident = Identity(str(record["title"]), record.get("issuer"), record.get("year"))
    chunks = [replace(c, **ident.fields()) for c in doc.chunks]
    return type(doc)(doc.doc_id, doc.source, ident.title, doc.sha256, chunks, doc.names)
