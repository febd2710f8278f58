"""Structure-aware readers for Markdown (with YAML front matter), HTML and PDF.

Each returns ``(blocks, info)``: text blocks tagged with their heading path
(and page for PDF) plus document metadata. Failures raise
:class:`DocumentError` with the file name.
"""

from __future__ import annotations

import io
import re
from typing import Any

from core.config.kb import KBSettings
from core.errors import DocumentError
from core.kb.parse.blocks import Block, DocInfo, Headings
from core.kb.parse.htmlwalk import load_front_matter, walk_html
from core.kb.parse.pdfparse import pdf_blocks

__all__ = ["parse_html", "parse_markdown", "parse_pdf", "year_of"]

_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*(\n|\Z)", re.DOTALL)


def year_of(value: object) -> int | None:
    """The first plausible year (1900-2099) in ``value``."""
    match = re.search(r"(19|20)\d{2}", str(value or ""))
    return int(match.group(0)) if match else None


def _decode(data: bytes, source: str) -> str:
    if b"\x00" in data[:65536]:
        raise DocumentError(f"{source}: binary data, not a text document")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DocumentError(f"{source}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def parse_markdown(data: bytes, source: str, settings: KBSettings) -> tuple[list[Block], DocInfo]:
    """Markdown with optional YAML front matter (title, organisation, year, source)."""
    from markdown_it import MarkdownIt

    text = _decode(data, source)
    meta: dict[str, Any] = {}
    front = _FRONT.match(text)
    if front:
        meta = load_front_matter(front.group(1), source)
        text = text[front.end() :]
    info = DocInfo(
        title=_clean(str(meta.get("title") or "")),
        organisation=str(meta.get("organisation") or meta.get("organization") or "") or None,
        year=year_of(meta.get("year")),
        source=str(meta.get("source") or "") or None,
    )
    heads, blocks, row = Headings(), [], []
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    for i, tok in enumerate(tokens):
        if tok.type == "inline":
            inline = _clean(
                "".join(
                    c.content if c.type in ("text", "code_inline") else " "
                    for c in tok.children or []
                    if c.type in ("text", "code_inline", "softbreak", "hardbreak")
                )
            )
            opener = tokens[i - 1].type if i else ""
            if opener == "heading_open":
                level = int(tokens[i - 1].tag[1])
                if level == 1 and (not info.title or inline.lower() == info.title.lower()):
                    info.title = info.title or inline
                    continue
                heads.push(level, inline)
            elif opener in ("th_open", "td_open"):
                row.append(inline)
            elif inline:
                blocks.append(Block(heads.path, inline))
        elif tok.type == "tr_close" and row:
            blocks.append(Block(heads.path, " | ".join(c for c in row if c), row=True))
            row = []
        elif tok.type in ("fence", "code_block") and tok.content.strip():
            blocks.append(Block(heads.path, tok.content))
    return blocks, info


def parse_html(data: bytes, source: str, settings: KBSettings) -> tuple[list[Block], DocInfo]:
    """HTML: headings h1-h6 give the path; paragraphs, list items, table rows and pre blocks give text.

    Walked in one linear pass (:func:`core.kb.parse.htmlwalk.walk_html`), whatever the nesting depth.
    """
    doc = walk_html(_decode(data, source))

    def meta(*names: str) -> str | None:
        return next((doc.meta[n] for n in names if doc.meta.get(n)), None)

    info = DocInfo(
        title=_clean(doc.title),
        organisation=meta("organisation", "organization", "author", "dc.publisher"),
        year=year_of(meta("year", "dc.date", "date")),
        source=meta("source", "dc.source"),
    )
    heads, blocks = Headings(), []
    for kind, level, text in doc.events:
        if kind == "head":
            if level == 1 and (not info.title or text.lower() == info.title.lower()):
                info.title = info.title or text
                continue
            heads.push(level, text)
        else:
            blocks.append(Block(heads.path, _clean(text), row=kind == "row"))
    return [b for b in blocks if b.text], info


def _outline(reader: Any) -> list[tuple[int, int, str]]:
    """(page index, level, title) of every PDF bookmark, in page order."""
    out: list[tuple[int, int, str]] = []

    def walk(items: list[Any], level: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, level + 1)
                continue
            page = reader.get_destination_page_number(item)
            if page is not None and page >= 0:
                out.append((page, level, _clean(str(item.title))))

    walk(list(reader.outline or []), 1)
    return sorted(out, key=lambda t: t[0])


def parse_pdf(data: bytes, source: str, settings: KBSettings) -> tuple[list[Block], DocInfo]:
    """PDF via pypdf: structure from the outline or fonts (:mod:`core.kb.parse.pdfparse`); every block keeps its page."""
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    from core.kb.parse.pdftables import find_tables

    try:
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            raise DocumentError(f"{source}: encrypted PDF")
        if len(reader.pages) > settings.max_pdf_pages:
            raise DocumentError(f"{source}: {len(reader.pages)} pages is over the {settings.max_pdf_pages}-page limit")
        meta = reader.metadata
        meta_title = _clean(str(meta.title)) if meta and meta.title else ""
        tables = find_tables(data) if settings.pdf_tables == "pdfplumber" else {}
        blocks, info = pdf_blocks(reader, _outline(reader), meta_title, settings.pdf_repeat_share, tables)
    except DocumentError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError, ZeroDivisionError,
            OverflowError) as exc:  # fmt: skip
        # pypdf reports damaged files through many exception types.
        raise DocumentError(f"{source}: unreadable PDF ({type(exc).__name__}: {exc})") from exc
    if not any(b.text.strip() for b in blocks):
        raise DocumentError(f"{source}: no extractable text (empty or image-only PDF; OCR is not supported)")
    # the cover's issuer and year (core.kb.parse.identity) before the metadata's author and creation date
    info.organisation = info.organisation or (str(meta.author) if meta and meta.author else None)
    info.year = info.year or (year_of(meta.get("/CreationDate")) if meta else None)
    return blocks, info
