"""PDF structure from the page, measured on the 41-page demo guideline rendered by our own generator.

The generator knows every heading and what text sits under it, so each chunk's section path
can be checked against the truth: with and without a PDF outline, with and without metadata.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.config.kb import KBSettings
from core.kb.demo.pdfwrite import GuidelineSource, read_source, render_pdf
from core.kb.demo.splwrite import spl_from_source
from core.kb.parse.guidelines import parse_guideline
from core.kb.parse.tokens import E5TokenCounter
from core.kb.types import Document

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "kb" / "realistic"
SOURCE = ASSETS / "guidelines" / "tb_cap_consolidated.md"
CFG = KBSettings()


def _grams(text: str) -> set[tuple[str, ...]]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


@pytest.fixture(scope="module")
def source() -> GuidelineSource:
    return read_source(SOURCE)


@pytest.fixture(scope="module")
def parsed(source: GuidelineSource) -> dict[str, Document]:
    counter = E5TokenCounter()
    out = {}
    for name, outline in (("outline", True), ("fonts", False)):
        data = render_pdf(source, outline=outline, metadata=outline)
        out[name] = parse_guideline(data, "guideline.pdf", "user", CFG, counter)
    return out


def test_the_demo_guideline_is_long_and_guideline_shaped(source: GuidelineSource) -> None:
    from pypdf import PdfReader

    data = render_pdf(source)
    reader = PdfReader(__import__("io").BytesIO(data))
    assert len(reader.pages) >= 40
    assert len(source.headings) >= 80 and sum(1 for k, _ in source.items if k == "table") >= 20
    assert sum(1 for k, _ in source.items if k == "note") >= 5
    contents = reader.pages[1].extract_text()
    assert "Contents" in contents and re.search(r"1\.1 Purpose and scope \.+ ?\d+", contents)
    assert "DEMO DATA - NOT FOR CLINICAL USE" in reader.pages[5].extract_text()


@pytest.mark.parametrize("shape", ["outline", "fonts"])
def test_at_least_95_percent_of_chunks_sit_under_their_true_section(
    shape: str, source: GuidelineSource, parsed: dict[str, Document]
) -> None:
    truth = [(path, _grams(text)) for path, text in source.section_texts()]
    chunks = [c for c in parsed[shape].chunks if c.section_path]  # the title page has no section
    right = 0
    for chunk in chunks:
        grams = _grams(chunk.text)
        best = max(truth, key=lambda t: len(grams & t[1]))[0]
        right += tuple(chunk.section_path) == best
    assert len(chunks) >= 90
    assert right / len(chunks) >= 0.95, f"{shape}: {right}/{len(chunks)}"


@pytest.mark.parametrize("shape", ["outline", "fonts"])
def test_contents_headers_footers_and_page_numbers_are_dropped(shape: str, parsed: dict[str, Document]) -> None:
    text = "\n".join(c.text for c in parsed[shape].chunks)
    assert "Consolidated demo guideline: TB and CAP in adults" not in text  # running header
    assert not re.search(r"Page \d+", text)  # footer
    assert "....." not in text and "Contents" not in text  # table of contents
    paths = {p for c in parsed[shape].chunks for p in c.section_path}
    # Every heading is a real one: no contents line ("5.6 Monitoring ... 17"), footnote or header.
    assert paths <= {h.title for h in read_source(SOURCE).headings}, paths - {h.title for h in read_source(SOURCE).headings}


@pytest.mark.parametrize("shape", ["outline", "fonts"])
def test_title_comes_from_metadata_or_the_largest_first_page_text(shape: str, parsed: dict[str, Document]) -> None:
    assert parsed[shape].title == "Consolidated Demo Guideline on Tuberculosis and Community-Acquired Pneumonia in Adults"


@pytest.mark.parametrize("shape", ["outline", "fonts"])
def test_citations_name_the_right_section(shape: str, parsed: dict[str, Document]) -> None:
    def section_of(phrase: str) -> str:
        hits = [c for c in parsed[shape].chunks if phrase in re.sub(r"\s+", " ", c.text)]
        assert hits, phrase
        return hits[0].section_title

    assert section_of("within two weeks of starting tuberculosis treatment") == "6.3 Timing of antiretroviral therapy"
    assert section_of("one double-strength tablet") == "6.4 Co-trimoxazole preventive therapy"
    assert section_of("former eight-month retreatment regimen").startswith("5.8 Interruptions")
    assert section_of("hydrocortisone 200 mg a day") == "12.8 Corticosteroids"


def test_committed_labels_match_their_sources() -> None:
    for src in sorted((ASSETS / "labels_src").glob("*.txt")):
        committed = (ASSETS / "labels" / f"{src.stem}.xml").read_bytes()
        assert spl_from_source(src.read_text(encoding="utf-8")) == committed, src.name


def test_long_labels_have_the_full_layout() -> None:
    from core.kb.parse.spl import parse_spl

    counter = E5TokenCounter()
    docs = {p.stem: parse_spl(p.read_bytes(), p.name, "user", CFG, counter) for p in (ASSETS / "labels").glob("*.xml")}
    assert len(docs) >= 6
    codes = {k: {c.section_code for c in d.chunks} for k, d in docs.items()}
    assert {"34066-1"} <= codes["adalimumab"] and "34066-1" not in codes["rifapentine"]
    assert all({"34067-9", "34068-7", "34070-3", "34084-4", "42231-1"} <= c for c in codes.values())
    contra = [c.text for c in docs["adalimumab"].chunks if c.section_code == "34070-3"]
    assert contra == ["None."]  # Highlights excerpts are not repeated into the section text
    assert "trimethoprim" in docs["cotrimoxazole"].names
