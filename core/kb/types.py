"""Typed records shared by the parsers, the index and the retriever.

A :class:`Chunk` is what ingestion produces and the document store keeps; a
:class:`Hit` is a chunk plus the scores one search gave it. The protocol that
returns hits is :class:`core.kb.protocols.Retriever`.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from core.kb.specs import KB_NAMES

__all__ = [
    "KB_NAMES",
    "SPACE_PREFIX",
    "Chunk",
    "Document",
    "FileError",
    "Hit",
    "KBName",
    "SearchMode",
    "is_kb_name",
]

KBName = str  # a name in KB_NAMES (registered in core.kb.specs) or a document space
SearchMode = Literal["hybrid", "dense", "bm25"]
SPACE_PREFIX = "user."  # a doctor's own document space is ``user.<slug>``; ``user`` is the shared space
_SPACE = re.compile(r"user\.[a-z0-9][a-z0-9_-]{0,63}")


def is_kb_name(kb: str) -> bool:
    """A curated KB, the shared document space or a doctor's own space (``user.<slug>``)."""
    return kb in KB_NAMES or bool(_SPACE.fullmatch(kb))


@dataclass(frozen=True, kw_only=True)
class Chunk:
    """One retrievable passage with the metadata of its document and section.

    ``drug_names`` holds proprietary, generic and active-ingredient names in
    lowercase (labels only). ``section_code`` is the LOINC code of a label
    section, ``None`` for guidelines. ``page`` is 1-based (PDF only).
    """

    chunk_id: str
    doc_id: str
    kb: str
    text: str
    source: str = ""
    title: str = ""
    section_path: tuple[str, ...] = ()
    section_code: str | None = None
    section_title: str = ""
    drug_names: tuple[str, ...] = ()
    set_id: str | None = None
    version: str | None = None
    effective_date: str | None = None
    organisation: str | None = None
    year: int | None = None
    page: int | None = None

    def index_text(self, with_header: bool) -> str:
        """The text that is embedded and BM25-indexed (optionally title and section first)."""
        if not with_header:
            return self.text
        head = " > ".join(p for p in (self.title, *self.section_path) if p)
        return f"{head}\n{self.text}" if head else self.text

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict of every field (``asdict`` without its deep copies: every field is immutable)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Chunk:
        """Inverse of :meth:`to_json` (lists become tuples)."""
        known = {f.name for f in dataclasses.fields(cls)}
        kwargs: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k in known}
        return cls(**kwargs)


@dataclass(frozen=True, kw_only=True)
class Hit(Chunk):
    """A chunk returned by a search.

    ``score`` is the ranking score of the mode used: the reciprocal-rank-fusion
    sum for ``hybrid``, the cosine similarity for ``dense``, the BM25 score for
    ``bm25``. ``dense_score`` is the cosine similarity of query and chunk
    (always computed); ``bm25_score`` is ``None`` when the chunk was not among
    the BM25 candidates (no query term matched or it ranked too low).
    """

    score: float = 0.0
    dense_score: float | None = None
    bm25_score: float | None = None

    @classmethod
    def of(cls, chunk: Chunk, score: float, dense_score: float | None, bm25_score: float | None) -> Hit:
        """Build a hit from a stored chunk and its scores."""
        values = {f.name: getattr(chunk, f.name) for f in dataclasses.fields(Chunk)}
        return cls(**values, score=score, dense_score=dense_score, bm25_score=bm25_score)


@dataclass(frozen=True)
class FileError:
    """One input file that was skipped, and why (shown to the user as is)."""

    source: str
    error: str


@dataclass
class Document:
    """A parsed document before embedding: its chunks and its drug lexicon entries."""

    doc_id: str
    source: str
    title: str
    sha256: str
    chunks: list[Chunk]
    names: dict[str, str] = field(default_factory=dict)  # lowercase name -> kind (proprietary, generic, ...)
