"""Render a guideline written in a small Markdown subset into a guideline-shaped PDF.

Used to make the long demo guideline (``assets/kb/realistic/guidelines/*.md``) and the
PDFs of the PDF-structure tests at build or test time, so that no binary PDF is committed.
The output looks like a real guideline: a title page, a table of contents with page
numbers, running headers and footers with page numbers, numbered chapters that start on a
new page, tables, superscript footnote marks with the notes in small type, and optionally
a PDF outline (bookmarks).

fpdf2 was chosen over reportlab: it is pure Python (no C extension to build), small, LGPL,
has tables, outlines and superscripts built in, and is enough for a text-and-tables document.

The Markdown subset: YAML front matter, ``#`` title, ``##`` chapters, ``###`` sections,
paragraphs, ``- `` bullets, pipe tables, ``[^n]`` footnote marks and ``[^n]: text`` notes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

__all__ = ["GuidelineSource", "Heading", "parse_source", "read_source", "render_pdf", "render_pdf_pages", "write_pdf"]

_NOTE_DEF = re.compile(r"^\[\^(\w+)\]:\s*(.+)$")
_NOTE_REF = re.compile(r"\[\^(\w+)\]")
_FRONT = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.DOTALL)


@dataclass(frozen=True)
class Heading:
    """A chapter (level 1) or section (level 2) heading as printed, e.g. ``5.6 Monitoring during treatment``."""

    level: int
    title: str


@dataclass
class GuidelineSource:
    """A parsed source: metadata, title and the body as a flat list of typed items."""

    meta: dict[str, Any]
    title: str
    items: list[tuple[str, Any]] = field(default_factory=list)  # (kind, payload)

    @property
    def headings(self) -> list[Heading]:
        """Every chapter and section heading in order."""
        return [p for k, p in self.items if k == "heading"]

    def section_texts(self) -> list[tuple[tuple[str, ...], str]]:
        """(heading path, plain text) of every section, for checking what a parser put where."""
        out: list[tuple[tuple[str, ...], str]] = []
        path: tuple[str, ...] = ()
        for kind, payload in self.items:
            if kind == "heading":
                path = (payload.title,) if payload.level == 1 else (*path[:1], payload.title)
                out.append((path, ""))
            elif out:
                if kind == "table":
                    text = " ".join(" ".join(row) for row in payload)
                elif kind == "note":
                    text = f"{payload[0]} {payload[1]}"
                else:
                    text = payload
                out[-1] = (out[-1][0], f"{out[-1][1]} {_NOTE_REF.sub('', text)}".strip())
        return out


def read_source(path: Path) -> GuidelineSource:
    """Parse the Markdown subset in file ``path`` into a :class:`GuidelineSource`."""
    return parse_source(path.read_text(encoding="utf-8"))


def parse_source(text: str) -> GuidelineSource:
    """Parse the Markdown subset into a :class:`GuidelineSource`."""
    meta: dict[str, Any] = {}
    front = _FRONT.match(text)
    if front:
        meta = yaml.safe_load(front.group(1)) or {}
        text = text[front.end() :]
    src = GuidelineSource(meta, str(meta.get("title") or ""))
    table: list[list[str]] = []
    para: list[str] = []

    def flush() -> None:
        nonlocal table
        if para:
            src.items.append(("para", " ".join(para)))
            para.clear()
        if table:
            src.items.append(("table", table))
            table = []

    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            flush()
        elif line.startswith("|"):
            if para:
                flush()
            cells = [c.strip() for c in line.strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                table.append(cells)
        elif line.startswith("#"):
            flush()
            hashes, title = line.split(" ", 1)
            if len(hashes) == 1:
                src.title = src.title or title
            else:
                src.items.append(("heading", Heading(len(hashes) - 1, title.strip())))
        elif _NOTE_DEF.match(line):
            flush()
            mark, note = _NOTE_DEF.match(line).groups()  # type: ignore[union-attr]
            src.items.append(("note", (mark, note)))
        elif line.startswith("- "):
            flush()
            src.items.append(("bullet", line[2:]))
        else:
            para.append(line)
    flush()
    return src


class _Doc:
    """One rendering pass; records the page of every heading for the table of contents."""

    def __init__(
        self, src: GuidelineSource, outline: bool, metadata: bool, toc_pages: dict[str, int], title: str | None = None,
        created: datetime | None = None,
    ) -> None:
        from fpdf import FPDF

        header_text = str(src.meta.get("running_header") or "Consolidated demo guideline: TB and CAP in adults")
        org = str(src.meta.get("organisation") or "")
        year = str(src.meta.get("year") or "")

        class _Pdf(FPDF):
            def header(self) -> None:
                if self.page_no() == 1:
                    return
                self.set_font("Helvetica", "I", 8)
                self.cell(0, 5, header_text, new_x="LMARGIN", new_y="TOP", align="L")
                self.cell(0, 5, "DEMO DATA - NOT FOR CLINICAL USE", new_x="LMARGIN", new_y="NEXT", align="R")
                self.line(self.l_margin, self.get_y() + 1, self.w - self.r_margin, self.get_y() + 1)
                self.ln(6)

            def footer(self) -> None:
                if self.page_no() == 1:
                    return
                self.set_y(-15)
                self.set_font("Helvetica", "", 8)
                self.cell(0, 5, f"{org} | {year}", new_x="LMARGIN", new_y="TOP", align="L")
                self.cell(0, 5, f"Page {self.page_no()}", align="R")

        self.pdf = _Pdf(format="A4")
        self.pdf.set_margins(25, 20, 25)
        self.pdf.set_auto_page_break(True, margin=22)
        if metadata:
            self.pdf.set_title(title or src.title)
            self.pdf.set_author(org)
        # The old module path on purpose: the creator is part of the PDF bytes, and so of its document ids.
        self.pdf.set_creator("Casebook core.kb.pdfwrite (demo)")
        if created is not None:  # a fixed date makes the bytes reproducible
            self.pdf.set_creation_date(created)
        self.src, self.outline, self.toc = src, outline, toc_pages
        self.pages: dict[str, int] = {}

    def _text(self, text: str, size: float, style: str = "", height: float = 6.8) -> None:
        pdf = self.pdf
        pdf.set_font("Helvetica", style, size)
        for part in re.split(r"(\[\^\w+\])", text):
            ref = _NOTE_REF.fullmatch(part)
            if ref:
                pdf.char_vpos = "SUP"
                pdf.write(height, ref.group(1))
                pdf.char_vpos = "LINE"
            elif part:
                pdf.write(height, part)
        pdf.ln(height)

    def _title_page(self) -> None:
        pdf, meta = self.pdf, self.src.meta
        pdf.add_page()
        pdf.ln(50)
        pdf.set_font("Helvetica", "B", 24)
        pdf.multi_cell(0, 11, self.src.title, align="C", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(12)
        pdf.set_font("Helvetica", "", 13)
        lines = [str(meta.get(k)) for k in ("edition", "organisation", "year") if meta.get(k)] if meta.get("edition") else [
            str(meta.get("organisation", "")), str(meta.get("year", ""))]  # fmt: skip
        pdf.multi_cell(0, 7, "\n".join(lines), align="C",
                       new_x="LMARGIN", new_y="NEXT")  # fmt: skip
        pdf.ln(30)
        pdf.set_font("Helvetica", "B", 11)
        pdf.multi_cell(0, 6, "DEMO DATA - NOT FOR CLINICAL USE", align="C", new_x="LMARGIN", new_y="NEXT")

    def _contents(self) -> None:
        pdf = self.pdf
        pdf.add_page()
        pdf.set_font("Helvetica", "B", 15)
        pdf.cell(0, 10, "Contents", new_x="LMARGIN", new_y="NEXT")
        pdf.ln(3)
        width = pdf.w - pdf.l_margin - pdf.r_margin
        for head in self.src.headings:
            indent = 0 if head.level == 1 else 8
            pdf.set_font("Helvetica", "B" if head.level == 1 else "", 10.5)
            number = str(self.toc.get(head.title, 0))
            label = head.title
            room = width - indent - pdf.get_string_width(label) - pdf.get_string_width(number) - 4
            dots = " " + "." * max(3, int(room / pdf.get_string_width("."))) if room > 0 else " ..."
            pdf.set_x(pdf.l_margin + indent)
            pdf.cell(width - indent - 12, 6.2, (label + dots)[: 200], new_x="RIGHT", new_y="TOP")
            pdf.cell(12, 6.2, number, align="R", new_x="LMARGIN", new_y="NEXT")

    def _heading(self, head: Heading) -> None:
        pdf = self.pdf
        if head.level == 1 or pdf.get_y() > pdf.h - 60:  # chapters start a page; a section keeps its first lines
            pdf.add_page()
        else:
            pdf.ln(3)
        self.pages[head.title] = pdf.page_no()
        if self.outline:
            pdf.start_section(head.title, level=head.level - 1)
        pdf.set_font("Helvetica", "B", 16 if head.level == 1 else 12.5)
        pdf.multi_cell(0, 9 if head.level == 1 else 7, head.title, new_x="LMARGIN", new_y="NEXT")
        pdf.ln(2)

    def _table(self, rows: list[list[str]]) -> None:
        pdf = self.pdf
        pdf.ln(1)
        pdf.set_font("Helvetica", "", 9)
        with pdf.table(text_align="LEFT", line_height=4.8, first_row_as_headings=True, padding=1.2) as table:
            for cells in rows:
                row = table.row()
                for cell in cells:
                    row.cell(cell)
        pdf.ln(3)

    def render(self) -> bytes:
        self._title_page()
        self._contents()
        for kind, payload in self.src.items:
            if kind == "heading":
                self._heading(payload)
            elif kind == "para":
                self._text(payload, 11)
                self.pdf.ln(3)
            elif kind == "bullet":
                self.pdf.set_x(self.pdf.l_margin + 4)
                self._text("- " + payload, 11)
            elif kind == "table":
                self._table(payload)
            elif kind == "note":
                self.pdf.line(self.pdf.l_margin, self.pdf.get_y(), self.pdf.l_margin + 40, self.pdf.get_y())
                self.pdf.ln(1)
                self._text(f"{payload[0]} {payload[1]}", 8, height=4)
        return bytes(self.pdf.output())


def render_pdf(src: GuidelineSource, outline: bool = True, metadata: bool = True) -> bytes:
    """The PDF bytes of ``src``; ``outline`` adds bookmarks, ``metadata`` the title and author.

    Rendered twice: the first pass finds the page of every heading for the table of contents.
    """
    return render_pdf_pages(src, outline, metadata)[0]


def render_pdf_pages(
    src: GuidelineSource, outline: bool = True, metadata: bool = True, title: str | None = None,
    created: datetime | None = None,
) -> tuple[bytes, dict[str, int]]:
    """The PDF bytes of ``src`` and the page of every heading.

    ``title`` replaces the metadata title; ``created`` fixes the creation date (else: now).
    """
    first = _Doc(src, outline, metadata, {}, title, created)
    first.render()
    second = _Doc(src, outline, metadata, first.pages, title, created)
    return second.render(), second.pages


def write_pdf(source: Path, target: Path, outline: bool = True, metadata: bool = True) -> Path:
    """Render ``source`` (Markdown subset) to ``target`` unless it is already newer; returns ``target``."""
    if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".tmp")
        tmp.write_bytes(render_pdf(read_source(source), outline, metadata))
        tmp.replace(target)
    return target
