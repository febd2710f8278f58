"""What every guideline reader emits: text blocks under a heading path, and document metadata.

The readers (:mod:`core.kb.parse.docparse`, :mod:`core.kb.parse.pdfparse`) build
:class:`Block` s while a :class:`Headings` stack tracks the open section path;
:mod:`core.kb.parse.guidelines` windows the blocks into chunks. Keeping these
records here lets readers and chunking depend on them without depending on
each other.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Block", "DocInfo", "Headings"]


@dataclass(frozen=True)
class Block:
    """A run of text under one section path; ``page`` is 1-based for PDFs; ``row``: one table row."""

    path: tuple[str, ...]
    text: str
    page: int | None = None
    row: bool = False


@dataclass
class DocInfo:
    """Document-level metadata from front matter, HTML meta tags or PDF info."""

    title: str = ""
    organisation: str | None = None
    year: int | None = None
    source: str | None = None
    edition: str | None = None


class Headings:
    """The current heading path; a heading of level n replaces levels >= n."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []

    def push(self, level: int, title: str) -> None:
        """Enter a heading of ``level``: headings at that level or deeper are closed."""
        self._stack = [(lv, t) for lv, t in self._stack if lv < level]
        self._stack.append((level, title))

    @property
    def path(self) -> tuple[str, ...]:
        """The open headings, outermost first."""
        return tuple(t for _, t in self._stack)
