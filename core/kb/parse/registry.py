"""Guideline file suffix -> the reader that turns such a file into blocks.

A reader takes ``(data, source, settings)`` and returns ``(blocks, info)``
(:mod:`core.kb.parse.blocks`). A new guideline format is one reader plus one
line in :data:`READERS`; :data:`GUIDELINE_SUFFIXES` (what ingestion collects
from folders and zips) follows from it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePath

from core.config.kb import KBSettings
from core.errors import DocumentError
from core.kb.parse.blocks import Block, DocInfo
from core.kb.parse.docparse import parse_html, parse_markdown, parse_pdf

__all__ = ["GUIDELINE_SUFFIXES", "READERS", "Reader", "reader_for"]

Reader = Callable[[bytes, str, KBSettings], tuple[list[Block], DocInfo]]

READERS: dict[str, Reader] = {
    ".md": parse_markdown,
    ".markdown": parse_markdown,
    ".html": parse_html,
    ".htm": parse_html,
    ".pdf": parse_pdf,
}

GUIDELINE_SUFFIXES: tuple[str, ...] = tuple(READERS)


def reader_for(source: str) -> Reader:
    """The reader for ``source``'s suffix; :class:`DocumentError` for an unsupported type."""
    suffix = PurePath(source).suffix.lower()
    reader = READERS.get(suffix)
    if reader is None:
        raise DocumentError(f"{source}: unsupported guideline file type {suffix or '(none)'!r}; use .md, .html or .pdf")
    return reader
