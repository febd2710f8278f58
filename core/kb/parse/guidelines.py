"""Guideline documents (Markdown, HTML, PDF) -> section-aware chunks.

Each parser turns a file into :class:`Block` s (section path, text, page) and
:func:`chunk_blocks` windows each section separately into chunks of
``settings.kb.chunk_tokens`` with ``chunk_overlap`` tokens of overlap, so a
chunk never spans two sections and never cuts a word. A table row (``row``
blocks, ``a | b | c``) stays on a line of its own in the chunk text, so one
row can be quoted alone and the page can show the rows as a table.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import PurePath

from core.config.kb import KBSettings
from core.errors import DocumentError
from core.kb.parse.blocks import Block, DocInfo
from core.kb.parse.chunking import window_words
from core.kb.parse.registry import reader_for
from core.kb.parse.tokens import TokenCounter
from core.kb.types import Chunk, Document

__all__ = ["chunk_blocks", "doc_id_for", "parse_guideline"]

def doc_id_for(source: str, data: bytes) -> str:
    """A stable, readable document id: the file stem plus a short content hash."""
    stem = re.sub(r"[^a-z0-9]+", "-", PurePath(source).stem.lower()).strip("-")[:48] or "doc"
    return f"{stem}-{hashlib.sha256(data).hexdigest()[:8]}"


def chunk_blocks(
    blocks: list[Block], info: DocInfo, doc_id: str, source: str, kb: str, settings: KBSettings, counter: TokenCounter
) -> list[Chunk]:
    """Window every section's words into overlapping chunks and attach the metadata."""
    # (word, page, starts a line): a table row, and the text after one, start a new line
    sections: list[tuple[tuple[str, ...], list[tuple[str, int | None, bool]]]] = []
    after_row = False
    for block in blocks:
        words = [(w, block.page, i == 0 and (block.row or after_row)) for i, w in enumerate(block.text.split())]
        if not words:
            continue
        after_row = block.row
        if sections and sections[-1][0] == block.path:
            sections[-1][1].extend(words)
        else:
            sections.append((block.path, words))
    chunks: list[Chunk] = []
    for path, words in sections:
        plain = [w for w, _, _ in words]
        for win in window_words(plain, settings.chunk_tokens, settings.chunk_overlap, counter):
            chunks.append(
                Chunk(
                    chunk_id=f"{doc_id}#c{len(chunks)}",
                    doc_id=doc_id,
                    kb=kb,
                    text=_join(words[win.start : win.end]),
                    source=info.source or source,
                    title=info.title,
                    section_path=path,
                    section_title=path[-1] if path else "",
                    organisation=info.organisation,
                    year=info.year,
                    page=words[win.start][1],
                )
            )
    return chunks


def _join(words: list[tuple[str, int | None, bool]]) -> str:
    """The words of a window as text, with a line break before every word that starts a line."""
    out: list[str] = []
    for i, (word, _, line) in enumerate(words):
        if i:
            out.append("\n" if line else " ")
        out.append(word)
    return "".join(out)


def parse_guideline(data: bytes, source: str, kb: str, settings: KBSettings, counter: TokenCounter) -> Document:
    """Parse one guideline file into a :class:`Document`; raises :class:`DocumentError` when unusable."""
    parser = reader_for(source)
    limit = int(settings.max_file_mb * 1024 * 1024)
    if len(data) > limit:
        raise DocumentError(f"{source}: {len(data)} bytes is over the {limit}-byte limit")
    blocks, info = parser(data, source, settings)
    info.title = info.title or PurePath(source).stem
    doc_id = doc_id_for(source, data)
    chunks = chunk_blocks(blocks, info, doc_id, source, kb, settings, counter)
    if not chunks:
        raise DocumentError(f"{source}: no text found")
    return Document(doc_id, source, info.title, hashlib.sha256(data).hexdigest(), chunks)
