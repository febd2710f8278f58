"""Tables of a PDF, read as tables: each row with its column headers (pdfplumber).

pypdf reads a ruled table cell after cell and glues the cells of a row into one line
("Weight bandPyrazinamide daily dose..."), so a dose that lives in a table could not be
quoted. :func:`find_tables` finds the ruled tables of every page with pdfplumber and
returns their rows and vertical extent; :mod:`core.kb.parse.pdfparse` drops the glued
lines inside that extent and puts :func:`row_text` lines in their place:

    Weight band: 40-54 kg | Pyrazinamide daily dose (adults): 1200 mg | Tablets: 3 x 400 mg

so one row, indexed and quoted alone, still says what each value is.

Why pdfplumber (bench/pdf_tables.py, docs/benchmarks/pdf_tables.md): on the two 150-page
demo guidelines it recovered 97% of the true rows cell for cell; camelot (lattice) found
the same rows (it reads text through pdfminer too) about 10x slower and pulls OpenCV;
PyMuPDF's ``find_tables`` glued the words of every cell ("Weightband", "1000mg": 2% of
rows right) and is AGPL-3.0, which would bind the whole app. pdfplumber is MIT, on
pdfminer.six (MIT) and pypdfium2 (Apache-2.0/BSD).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from typing import Any

from core.errors import DocumentError

__all__ = ["PdfTable", "find_tables", "row_text"]


@dataclass(frozen=True)
class PdfTable:
    """One ruled table: its 0-based page, vertical extent in PDF units from the bottom, header and body rows."""

    page: int
    top: float  # PDF y (bottom-up) of the table's top edge
    bottom: float
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    def holds(self, y: float, slack: float = 2.0) -> bool:
        """Whether a text line at PDF height ``y`` lies inside the table."""
        return self.bottom - slack <= y <= self.top + slack


def _cell(text: str | None) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def find_tables(data: bytes, pages: int | None = None) -> dict[int, list[PdfTable]]:
    """The ruled tables of every page (0-based page -> tables, top to bottom); a table needs 2 rows and 2 columns."""
    import pdfplumber
    from pdfplumber.utils.exceptions import PdfminerException

    try:
        return _find_tables(pdfplumber.open(io.BytesIO(data)), pages)
    except PdfminerException as exc:  # a damaged or hostile stream (a decompression bomb): the document fails, typed
        raise DocumentError(f"unreadable PDF tables ({exc})") from exc


def _find_tables(pdf: Any, pages: int | None) -> dict[int, list[PdfTable]]:
    out: dict[int, list[PdfTable]] = {}
    last: PdfTable | None = None  # the previous page's last table, whose header a continued table takes
    with pdf:
        for number, page in enumerate(pdf.pages[:pages]):
            if not page.edges:  # no ruling line: no ruled table (and no table finder run)
                continue
            height = float(page.height)
            found: list[PdfTable] = []
            for table in page.find_tables():
                rows = [tuple(_cell(c) for c in row) for row in table.extract()]
                rows = [r for r in rows if any(r)]
                if len(rows) < 2 or max(len(r) for r in rows) < 2:
                    continue
                _, top, _, bottom = table.bbox
                header, body = rows[0], rows[1:]
                continued = (not found and last is not None and last.page == number - 1 and float(top) < height * 0.2
                             and len(header) == len(last.header) and header != last.header)  # fmt: skip
                if continued and last is not None:  # a table going on from the last page without its header
                    header, body = last.header, rows
                found.append(PdfTable(number, height - float(top), height - float(bottom), header, tuple(body)))
            if found:
                out[number] = sorted(found, key=lambda t: -t.top)
                last = out[number][-1]
    return out


def row_text(header: tuple[str, ...], row: tuple[str, ...]) -> str:
    """One body row with its column headers: ``Header: value | Header: value`` (an empty cell is left out)."""
    cells = []
    for i, value in enumerate(row):
        if not value:
            continue
        name = header[i] if i < len(header) else ""
        cells.append(f"{name}: {value}" if name and name != value else value)
    return " | ".join(cells)
