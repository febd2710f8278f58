"""PDF tables read as tables (issue 24): each row indexed with its column headers, cited from its section and page.

A small guideline rendered here by the demo PDF writer (fpdf2): the truth of every cell is known.
"""

from __future__ import annotations

import pytest

from core.config.kb import KBSettings
from core.kb.demo.pdfwrite import parse_source, render_pdf
from core.kb.parse.guidelines import parse_guideline
from core.kb.parse.identity import cover_identity, tidy_title
from core.kb.parse.pdftables import find_tables, row_text
from core.kb.parse.tokens import E5TokenCounter

SOURCE = """---
title: Demo Guideline on Tuberculosis Doses
organisation: Ministry of Health of Demoland (fictional)
year: 2024
edition: Third edition
demo: true
---

# Demo Guideline on Tuberculosis Doses

DEMO DATA, NOT FOR CLINICAL USE.

## 1. Pyrazinamide

### 1.1 Pyrazinamide: dose in adults

Give pyrazinamide to adults by weight band.

| Weight band | Pyrazinamide daily dose (adults) | Tablets |
|---|---|---|
| 30-39 kg | 800 mg | 2 x 400 mg |
| 40-54 kg | 1200 mg | 3 x 400 mg |
| 55-70 kg | 1600 mg | 4 x 400 mg |

The dose is given once daily.
"""


@pytest.fixture(scope="module")
def pdf() -> bytes:
    return render_pdf(parse_source(SOURCE), metadata=False)


def test_rows_come_out_cell_by_cell_with_their_headers(pdf: bytes) -> None:
    tables = [t for page in find_tables(pdf).values() for t in page]
    assert len(tables) == 1
    table = tables[0]
    assert table.header == ("Weight band", "Pyrazinamide daily dose (adults)", "Tablets")
    assert table.rows[1] == ("40-54 kg", "1200 mg", "3 x 400 mg")
    assert row_text(table.header, table.rows[1]) == (
        "Weight band: 40-54 kg | Pyrazinamide daily dose (adults): 1200 mg | Tablets: 3 x 400 mg"
    )


@pytest.mark.parametrize("mode", ["pdfplumber", "off"])
def test_a_parsed_guideline_keeps_one_row_per_line_only_with_the_table_reader(pdf: bytes, mode: str) -> None:
    doc = parse_guideline(pdf, "doses.pdf", "user", KBSettings(pdf_tables=mode), E5TokenCounter())
    text = "\n".join(c.text for c in doc.chunks)
    row = "Weight band: 40-54 kg | Pyrazinamide daily dose (adults): 1200 mg | Tablets: 3 x 400 mg"
    assert (row in text.splitlines()) == (mode == "pdfplumber")
    chunk = next(c for c in doc.chunks if "1200 mg" in c.text)
    assert chunk.section_title == "1.1 Pyrazinamide: dose in adults" and chunk.page == 3
    assert "The dose is given once daily." in text  # text after the table is kept, once
    assert text.count("1200 mg") == 1
    # identity from the cover: no metadata in this PDF
    assert doc.title == "Demo Guideline on Tuberculosis Doses"
    assert chunk.organisation == "Ministry of Health of Demoland (fictional)" and chunk.year == 2024


@pytest.mark.parametrize(
    ("raw", "title", "edition"),
    [
        ("Consolidated guidelines on tuberculosisFourth edition", "Consolidated guidelines on tuberculosis",
         "Fourth edition"),
        ("WHO operational handbook, 3rd edition", "WHO operational handbook", "3rd edition"),
        ("National TB Manual", "National TB Manual", None),
    ],
)  # fmt: skip
def test_titles_are_unglued_and_lose_their_edition(raw: str, title: str, edition: str | None) -> None:
    assert tidy_title(raw) == (title, edition)


def test_the_cover_names_issuer_year_and_edition() -> None:
    cover = ["Fourth edition", "Global Demo TB Partnership (fictional)", "2025", "DEMO DATA - NOT FOR CLINICAL USE"]
    assert cover_identity(cover) == ("Global Demo TB Partnership (fictional)", 2025, "Fourth edition")
    assert cover_identity(["Geneva: 2022"]) == (None, 2022, None)
