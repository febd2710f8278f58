"""SPL, Markdown, HTML and PDF parsing with the real tokenizer, including hostile input."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.config.kb import KBSettings
from core.errors import DocumentError
from core.kb.parse.guidelines import parse_guideline
from core.kb.parse.spl import parse_spl
from core.kb.parse.tokens import E5TokenCounter

DATA = Path(__file__).parent / "data" / "kb"
CFG = KBSettings()


@pytest.fixture(scope="module")
def counter() -> E5TokenCounter:
    return E5TokenCounter()


def _pdf(pages: list[list[str]], title: str = "") -> bytes:
    """A minimal text PDF written by hand (Helvetica, one text line per entry)."""
    objs: list[bytes] = []
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objs.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objs.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objs.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, lines in enumerate(pages):
        esc = [ln.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for ln in lines]
        ops = (
            "BT /F1 10 Tf 14 TL 50 780 Td " + " ".join(f"({ln}) Tj T*" for ln in esc) + " ET"
            if lines
            else "0 0 90 90 re f"
        )
        stream = ops.encode("latin-1")
        objs.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
            f"/Contents {5 + 2 * i} 0 R >>".encode()
        )
        objs.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    info = len(objs) + 1
    objs.append(f"<< /Title ({title}) /Author (Test Org) /CreationDate (D:20210301000000) >>".encode())
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for n, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += f"{n} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objs) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objs) + 1} /Root 1 0 R /Info {info} 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


# --- SPL ---------------------------------------------------------------------------------------------


def test_spl_sections_identity_and_subsections(counter: E5TokenCounter) -> None:
    doc = parse_spl((DATA / "spl_metformin.xml").read_bytes(), "spl_metformin.xml", "druglabels", CFG, counter)
    codes = [c.section_code for c in doc.chunks]
    # Product data and the package panel are skipped; "7 DRUG INTERACTIONS" has the unclassified code -> title.
    assert codes == ["34066-1", "34067-9", "34070-3", "43685-7", "34073-7"]
    first = doc.chunks[0]
    assert first.title == "Glumetza Test"
    assert first.set_id == "11111111-2222-4333-8444-555555555555"
    assert first.version == "7" and first.effective_date == "2024-01-15"
    assert set(first.drug_names) == {"glumetza test", "metformin hydrochloride", "metformin"}
    assert "magnesium stearate" not in first.drug_names  # inactive ingredient
    wp = doc.chunks[3]
    assert "5.1 Lactic Acidosis" in wp.text and "vitamin B12" in wp.text  # subsections stay with the parent
    indications = doc.chunks[1].text
    assert "HIGHLIGHT DUPLICATE" not in indications and "type 2 diabetes" in indications
    assert "Carbonic anhydrase inhibitors \u2014 Effect: Increased risk" in doc.chunks[4].text
    assert doc.names["glumetza test"] == "proprietary"


def test_usan_inn_synonyms_join_the_names(counter: E5TokenCounter) -> None:
    raw = (
        (DATA / "spl_metformin.xml")
        .read_bytes()
        .replace(b"<name>METFORMIN HYDROCHLORIDE</name>", b"<name>RIFAMPIN</name>")
    )
    doc = parse_spl(raw, "rif.xml", "druglabels", CFG, counter)
    assert doc.names["rifampin"] == "ingredient" and doc.names["rifampicin"] == "synonym"
    assert "rifampicin" in doc.chunks[0].drug_names


def test_spl_table_rows_keep_their_column_headers(counter: E5TokenCounter) -> None:
    """A dose quoted out of a table still says which regimen it belongs to; spanned rows stay whole."""
    table = (
        "<table><caption>Dosing by regimen</caption>"
        "<thead><tr><th>Population</th><th>Daily</th><th>Three times weekly</th></tr></thead>"
        "<tbody><tr><td>Adults</td><td>5 mg/kg</td><td>15 mg/kg</td></tr>"
        "<tr><td>Children</td><td>10 mg/kg</td><td></td></tr>"
        '<tr><td colspan="3">Give with pyridoxine.</td></tr></tbody></table>'
    )
    raw = (DATA / "spl_metformin.xml").read_text()
    marker = "<paragraph>Glumetza Test is contraindicated in patients with:</paragraph>"
    assert marker in raw
    doc = parse_spl(raw.replace(marker, marker + table).encode(), "t.xml", "druglabels", CFG, counter)
    lines = next(c for c in doc.chunks if c.section_code == "34070-3").text.split("\n")
    assert "Dosing by regimen" in lines
    assert "Adults \u2014 Daily: 5 mg/kg; Three times weekly: 15 mg/kg" in lines
    assert "Children \u2014 Daily: 10 mg/kg" in lines  # an empty cell adds no dangling header
    assert "Give with pyridoxine." in lines
    assert not any(line.startswith("Population") for line in lines)  # the header row is folded into the rows


def test_long_spl_section_splits_at_paragraphs_inside_section(counter: E5TokenCounter) -> None:
    raw = (DATA / "spl_metformin.xml").read_text()
    para = (
        "<paragraph>"
        + "Adverse reaction sentence number {n} about nausea and diarrhea in trials. " * 6
        + "</paragraph>"
    )
    many = "".join(para.replace("{n}", str(i)) for i in range(30))
    raw = raw.replace("<paragraph>Glumetza Test is contraindicated in patients with:</paragraph>", many)
    cfg = KBSettings(spl_section_tokens=120)
    doc = parse_spl(raw.encode(), "long.xml", "druglabels", cfg, counter)
    contra = [c for c in doc.chunks if c.section_code == "34070-3"]
    assert len(contra) > 3
    for chunk in contra:
        assert counter.count(chunk.text) <= 120
        for line in chunk.text.split("\n"):  # every line is a whole paragraph or list item
            assert line.endswith((".", "trials.")) or line.startswith("•")
    assert {c.section_code for c in doc.chunks if "nausea" in c.text} == {"34070-3"}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("xxe.xml", "DOCTYPE/ENTITY"),
        ("billion_laughs.xml", "DOCTYPE/ENTITY"),
        ("not_spl.xml", "not an SPL document"),
        ("truncated.xml", "malformed XML"),
        ("garbage.xml", "malformed XML"),
    ],
)
def test_bad_xml_is_a_document_error(name: str, message: str, counter: E5TokenCounter) -> None:
    start = time.perf_counter()
    with pytest.raises(DocumentError, match=message):
        parse_spl((DATA / name).read_bytes(), name, "druglabels", CFG, counter)
    assert time.perf_counter() - start < 60  # only bounds a hang (an expanded entity bomb never ends)


def test_xxe_without_doctype_keyword_is_not_expanded(counter: E5TokenCounter) -> None:
    # An undeclared entity reference is an XML error, never a file read.
    data = (DATA / "spl_metformin.xml").read_bytes().replace(b"Hypersensitivity to metformin.", b"&xxe;")
    with pytest.raises(DocumentError):
        parse_spl(data, "undeclared.xml", "druglabels", CFG, counter)


def test_oversize_xml_is_refused(counter: E5TokenCounter) -> None:
    with pytest.raises(DocumentError, match="limit"):
        parse_spl(b"<a/>" + b" " * 2_000_000, "big.xml", "druglabels", KBSettings(max_file_mb=1), counter)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=2000))
def test_spl_parser_only_raises_document_error(counter: E5TokenCounter, blob: bytes) -> None:
    with contextlib.suppress(DocumentError):
        parse_spl(blob, "fuzz.xml", "druglabels", CFG, counter)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=0, max_value=6000))
def test_any_truncation_of_a_label_is_handled(counter: E5TokenCounter, cut: int) -> None:
    data = (DATA / "spl_metformin.xml").read_bytes()[:cut]
    try:
        doc = parse_spl(data, "cut.xml", "druglabels", CFG, counter)
    except DocumentError:
        return
    assert cut >= len((DATA / "spl_metformin.xml").read_bytes().rstrip())
    assert doc.chunks


# --- guidelines -----------------------------------------------------------------------------------


def test_markdown_front_matter_and_section_paths(counter: E5TokenCounter) -> None:
    doc = parse_guideline((DATA / "guideline_small.md").read_bytes(), "guideline_small.md", "guidelines", CFG, counter)
    by_path = {c.section_path: c for c in doc.chunks}
    assert set(by_path) == {("Diagnosis",), ("Diagnosis", "Thresholds"), ("Treatment",)}
    c = by_path[("Diagnosis", "Thresholds")]
    assert c.title == "Test Hypertension Guideline" and c.organisation == "Test Society" and c.year == 2023
    assert c.source == "https://example.org/test-htn" and c.section_title == "Thresholds"
    treat = by_path[("Treatment",)].text
    assert "ACE inhibitor | yes" in treat and "every year" in treat and "**" not in treat


def test_table_rows_stay_lines_of_their_own_in_chunks(counter: E5TokenCounter) -> None:
    from core.guideline.present import split_tables
    from core.guideline.text import split_sentences

    md = (DATA / "guideline_small.md").read_bytes()
    html = (
        b"<h1>T</h1><h2>Treatment</h2><p>Choose by class.</p><table><tr><th>Drug class</th><th>First line</th></tr>"
        b"<tr><td>ACE inhibitor</td><td>yes</td></tr><tr><td>Thiazide-like diuretic</td><td>yes</td></tr></table>"
        b"<p>Offer lifestyle advice to every patient.</p>"
    )
    for name, data in (("g.md", md), ("g.html", html)):
        doc = parse_guideline(data, name, "guidelines", CFG, counter)
        treat = next(c.text for c in doc.chunks if c.section_path == ("Treatment",))
        lines = treat.splitlines()
        assert "ACE inhibitor | yes" in lines and "Thiazide-like diuretic | yes" in lines, (name, treat)
        assert "Drug class | First line" in lines  # the header row too
        assert any(ln.startswith("Offer lifestyle advice") for ln in lines)  # the text after a table starts a line
        assert "ACE inhibitor | yes" in split_sentences(treat)  # one row can be quoted alone
        table = next(b for b in split_tables(treat) if isinstance(b, list))
        assert table == [["Drug class", "First line"], ["ACE inhibitor", "yes"], ["Thiazide-like diuretic", "yes"]]


def test_html_headings_lists_and_meta(counter: E5TokenCounter) -> None:
    doc = parse_guideline((DATA / "guideline_small.html").read_bytes(), "g.html", "guidelines", CFG, counter)
    text = {c.section_path: c.text for c in doc.chunks}
    assert set(text) == {("Assessment",), ("Assessment", "Children"), ("Treatment",)}
    assert "Nested advice item." in text[("Assessment", "Children")]
    assert "nitric oxide" in text[("Assessment", "Children")]
    assert "formoterol" in text[("Treatment",)]
    assert all("never indexed" not in t for t in text.values())
    assert doc.chunks[0].organisation == "Test Thoracic Society" and doc.chunks[0].year == 2022


def test_pdf_numbered_headings_and_pages(counter: E5TokenCounter) -> None:
    pages = [
        ["1 Introduction", "Pneumonia guideline introduction text on page one."],
        ["1.1 Scope", "Adults treated in hospital.", "2 Antibiotic Choice", "Amoxicillin for low severity."],
    ]
    doc = parse_guideline(_pdf(pages, "Test CAP Guideline"), "cap.pdf", "guidelines", CFG, counter)
    got = {(c.section_path, c.page): c.text for c in doc.chunks}
    assert got[(("1 Introduction",), 1)].startswith("Pneumonia guideline")
    assert got[(("1 Introduction", "1.1 Scope"), 2)] == "Adults treated in hospital."
    assert got[(("2 Antibiotic Choice",), 2)] == "Amoxicillin for low severity."
    assert doc.title == "Test CAP Guideline" and doc.chunks[0].organisation == "Test Org"
    assert doc.chunks[0].year == 2021


def test_pdf_without_text_is_refused(counter: E5TokenCounter) -> None:
    with pytest.raises(DocumentError, match="image-only"):
        parse_guideline(_pdf([[]]), "scan.pdf", "guidelines", CFG, counter)


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        ("broken.pdf", b"%PDF-1.4\n1 0 obj << /Type /Catalog >> garbage", "PDF"),
        ("noise.pdf", bytes(range(256)) * 4, "PDF"),
        ("binary.md", b"\x00\x01\x02 binary", "binary"),
        ("latin1.html", "caf\xe9".encode("latin-1"), "UTF-8"),
        ("empty.md", b"", "no text"),
        ("frontmatter.md", b"---\ntitle: [unclosed\n---\n# T\n\ntext", "front matter"),
        ("notes.docx", b"PK\x03\x04", "unsupported"),
    ],
)
def test_bad_guideline_files(name: str, data: bytes, message: str, counter: E5TokenCounter) -> None:
    with pytest.raises(DocumentError, match=message):
        parse_guideline(data, name, "guidelines", CFG, counter)
