"""PDF structure from the page: headings from the outline or from font size and weight.

pypdf's text visitor gives every text run with its font, size and position. Runs are
grouped into lines; then, before any heading is looked for:

* running headers and footers (a line repeated, digits aside, in the top or bottom band
  of at least ``pdf_repeat_share`` of the pages) and bare page numbers are dropped;
* table-of-contents pages (most lines end in a page number, often after dot leaders) and
  any dot-leader line are dropped.

Headings come from the PDF outline when it has one (each bookmark matched to its line,
so text before it on the page stays in the previous section). Without an outline a
line is a heading when its font is clearly larger than the body text, or bold at body
size and heading-shaped; its level is its numbering depth ("5.6" is level 2) or else
the rank of its size. Only in a PDF with a single font size and no bold is a numbered
line ("2 Antibiotic choice") taken as a heading. Footnotes (smaller than the body) are text, never headings.
The title is the metadata title unless that is empty or a file name, else the largest
text on the first page.

Why pypdf: BSD-licensed and already a dependency; pdfplumber (MIT, on pdfminer.six) gives
the same per-character fonts but was 6x slower on the 41-page guideline; PyMuPDF is fastest
but AGPL-3.0, which would bind the whole app (docs/KNOWLEDGE_BASES.md has the numbers).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from core.kb.parse.blocks import Block, DocInfo, Headings
from core.kb.parse.identity import cover_identity, tidy_title
from core.kb.parse.pdftables import PdfTable, row_text

__all__ = ["Line", "pdf_blocks", "read_lines"]

_TOC_LINE = re.compile(r"^(?P<label>\S.{1,200}?)(?:\s*\.{2,}\s*|\s+)(?P<page>\d{1,4})$")
_LEADERS = re.compile(r"\.{4,}\s*\d{1,4}$")
_PAGE_NO = re.compile(r"^(?:page\s*)?[-–]?\s*\d{1,4}\s*[-–]?(?:\s*(?:of|/)\s*\d{1,4})?$", re.IGNORECASE)
_NUMBER = re.compile(r"^(?:(?:chapter|section|annex|appendix)\s+)?(\d{1,2}(?:\.\d{1,2}){0,3}|[A-Z](?:\.\d{1,2}){0,3})\.?\s+\S")
# Only for a PDF with one font size and no bold: a numbered line is the best heading signal left.
_NUMBERED = re.compile(r"^(\d+(?:\.\d+){0,3})\.?\s+([A-Z][^.!?]{2,90})$")
_FILE_TITLE = re.compile(r"(\.(pdf|docx?|pptx?)$)|(^microsoft (word|powerpoint) - )|(^untitled)", re.IGNORECASE)


@dataclass
class Line:
    """One text line of a page: its text, font size, boldness and baseline height (PDF units)."""

    page: int
    y: float
    text: str
    size: float
    bold: bool


def _clean(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def read_lines(reader: Any) -> tuple[list[list[Line]], list[float]]:
    """Lines of every page (in content-stream order) and each page's height."""
    pages: list[list[Line]] = []
    heights: list[float] = []
    for number, page in enumerate(reader.pages):
        runs: list[tuple[float, str, float, bool]] = []

        def visit(
            text: str, cm: list[float], tm: list[float], font: Any, size: float,
            runs: list[tuple[float, str, float, bool]] = runs,
        ) -> None:  # fmt: skip
            if not text.strip():
                return
            scale = abs(tm[3] * cm[3]) or 1.0
            y = tm[5] * cm[3] + cm[5]
            name = str(font.get("/BaseFont", "")) if font else ""
            runs.append((y, text, float(size) * scale, bool(re.search(r"bold|black|heavy|semibold", name, re.I))))

        page.extract_text(visitor_text=visit)
        lines: list[Line] = []
        for y, text, size, bold in runs:
            last = lines[-1] if lines else None
            if last is not None and abs(last.y - y) < 0.5 * max(size, last.size) and "\n" not in text[:-1]:
                if len(text.strip()) > len(last.text) / 2:
                    last.size = max(last.size, size) if len(text.strip()) > 3 else last.size
                last.bold = last.bold and bold if len(text.strip()) > 3 else last.bold
                last.text = f"{last.text} {text.strip()}" if text[:1].isspace() else last.text + text.strip()
            else:
                lines.append(Line(number, y, text.strip(), size, bold))
        pages.append([ln for ln in lines if ln.text])
        box = page.mediabox
        heights.append(float(box.height))
    return pages, heights


def _furniture(pages: list[list[Line]], heights: list[float], share: float) -> set[tuple[int, int]]:
    """(page, line index) of running headers, footers and page numbers."""
    drop: set[tuple[int, int]] = set()
    bands: Counter[str] = Counter()
    keyed: list[list[str | None]] = []
    for number, lines in enumerate(pages):
        height = heights[number] or 842.0
        keys: list[str | None] = []
        for i, line in enumerate(lines):
            if _PAGE_NO.match(line.text):
                drop.add((number, i))
            in_band = line.y > height * 0.88 or line.y < height * 0.1
            keys.append(re.sub(r"\d+", "#", line.text.lower()) if in_band else None)
        keyed.append(keys)
        bands.update({k for k in keys if k})
    if len(pages) >= 3:
        repeated = {k for k, n in bands.items() if n >= max(2, share * len(pages))}
        for number, keys in enumerate(keyed):
            drop |= {(number, i) for i, k in enumerate(keys) if k in repeated}
    return drop


def _toc_pages(pages: list[list[Line]], drop: set[tuple[int, int]]) -> set[int]:
    """Pages that are mostly table-of-contents lines (a label then a page number)."""
    out: set[int] = set()
    for number, lines in enumerate(pages):
        body = [ln for i, ln in enumerate(lines) if (number, i) not in drop]
        hits = sum(1 for ln in body if _TOC_LINE.match(ln.text))
        if len(body) >= 4 and hits >= 0.6 * len(body):
            out.add(number)
    return out


def _level_of(text: str, size: float, sizes: list[float]) -> int:
    match = _NUMBER.match(text)
    if match and "." in match.group(1):
        return match.group(1).count(".") + 1
    if match and match.group(1).isdigit():
        return 1
    return min(sizes.index(size) + 1, 3) if size in sizes else 1


def _heading_shaped(text: str) -> bool:
    words = text.split()
    return 0 < len(words) <= 16 and not text.endswith((".", ",", ";", ":")) and text[:1].isupper() | text[:1].isdigit()


def pdf_blocks(
    reader: Any, outline: list[tuple[int, int, str]], meta_title: str, share: float,
    tables: dict[int, list[PdfTable]] | None = None,
) -> tuple[list[Block], DocInfo]:  # fmt: skip
    """Blocks under their heading paths, and the title (see the module docstring).

    ``tables`` (:func:`core.kb.parse.pdftables.find_tables`): the glued text lines inside a table
    are dropped and the table's rows, each with its column headers, take their place as row blocks.
    """
    tables = tables or {}
    pages, heights = read_lines(reader)
    drop = _furniture(pages, heights, share)
    toc = _toc_pages(pages, drop)
    kept = [
        [ln for i, ln in enumerate(lines) if (n, i) not in drop and not _LEADERS.search(ln.text)] if n not in toc else []
        for n, lines in enumerate(pages)
    ]
    weights: Counter[float] = Counter()
    for lines in kept:
        for ln in lines:
            weights[round(ln.size, 1)] += len(ln.text)
    body = weights.most_common(1)[0][0] if weights else 10.0
    first = [ln for ln in (kept[0] if kept else []) if ln.text]
    top = max((ln.size for ln in first), default=0.0)
    title = meta_title if meta_title and not _FILE_TITLE.search(meta_title) else ""
    if not title and top > body * 1.15:
        title = _clean(" ".join(ln.text for ln in first if abs(ln.size - top) < 0.5))
    title, edition = tidy_title(title)
    # the cover's lines as printed (a year standing alone is no page number there)
    cover = [ln.text for ln in (pages[0] if pages else []) if ln.text and abs(ln.size - top) >= 0.5][:12]
    issuer, year, printed = cover_identity(cover)
    heading_sizes = sorted({round(ln.size, 1) for ls in kept for ln in ls if ln.size > body * 1.15 and ln.size < top},
                           reverse=True)  # fmt: skip
    plain = not heading_sizes and not any(ln.bold for ls in kept for ln in ls)
    heads, blocks = Headings(), []
    pending = list(outline)
    for number, lines in enumerate(kept):
        while pending and pending[0][0] < number:  # bookmarks whose title was not found in the text
            _, depth, name = pending.pop(0)
            heads.push(depth, name)
        para: list[str] = []
        merged = _merge_heading_lines(lines, body, top if number == 0 else 0.0)
        waiting = list(tables.get(number, ()))
        for line, is_big in merged:
            level: int | None = None
            inside = next((t for t in tables.get(number, ()) if t.holds(line.y)), None)
            if inside is not None:
                if inside in waiting:  # the table's first line: its rows go here
                    waiting.remove(inside)
                    if para:
                        blocks.append(Block(heads.path, " ".join(para), number + 1))
                        para = []
                    blocks += [Block(heads.path, row_text(inside.header, r), number + 1, row=True) for r in inside.rows]
                continue
            if number == 0 and top > body * 1.15 and abs(line.size - top) < 0.5:
                continue  # the title
            if outline:
                here = [p for p in pending if p[0] == number and _same(p[2], line.text)]
                if here:
                    pending.remove(here[0])
                    level = here[0][1]
            elif is_big or (line.bold and line.size >= body - 0.2 and _heading_shaped(line.text)):
                level = _level_of(line.text, round(line.size, 1), heading_sizes)
            elif plain and (numbered := _NUMBERED.match(line.text)):
                level = numbered.group(1).count(".") + 1
            if level is None:
                para.append(line.text)
                continue
            if para:
                blocks.append(Block(heads.path, " ".join(para), number + 1))
                para = []
            heads.push(level, _clean(line.text))
        if para:
            blocks.append(Block(heads.path, " ".join(para), number + 1))
        for table in waiting:  # a table none of whose lines pypdf read
            blocks += [Block(heads.path, row_text(table.header, r), number + 1, row=True) for r in table.rows]
    return blocks, DocInfo(title=title, organisation=issuer, year=year, edition=edition or printed)


def _same(a: str, b: str) -> bool:
    return re.sub(r"\W+", "", a).lower() == re.sub(r"\W+", "", b).lower()


def _merge_heading_lines(lines: list[Line], body: float, top: float) -> list[tuple[Line, bool]]:
    """Join a heading wrapped over consecutive lines of the same large font; flag large lines."""
    out: list[tuple[Line, bool]] = []
    for line in lines:
        big = line.size > body * 1.15
        prev = out[-1] if out else None
        if (big and prev is not None and prev[1] and abs(prev[0].size - line.size) < 0.3 and line.size != top
                and 0 < prev[0].y - line.y < 2.2 * line.size):  # fmt: skip
            prev[0].text = f"{prev[0].text} {line.text}"
            prev[0].y = line.y
            continue
        out.append((Line(line.page, line.y, line.text, line.size, line.bold), big))
    return out
