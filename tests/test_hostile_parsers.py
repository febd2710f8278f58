"""Hostile documents: parsers stay bounded in time and memory, and concurrent uploads lose nothing.

Each case reproduces a break found by the hostile review (issue 15, "Parsers"): a YAML alias
bomb in Markdown front matter, deeply nested HTML (72 KB took 11.5 s, 720 KB over 150 s),
a document over the per-upload CPU or memory budget, and three concurrent uploads to one
knowledge base of which only one survived.
"""

from __future__ import annotations

import sys
import threading
import types
from pathlib import Path

import pytest

from core.config.kb import KBSettings
from core.embed import Embedder, make_embedder
from core.errors import DocumentError
from core.kb import KnowledgeBase
from core.kb.index.ingest import parse_files
from core.kb.parse.docparse import parse_html, parse_markdown
from core.kb.parse.guidelines import parse_guideline
from core.kb.parse.tokens import E5TokenCounter
from core.settings import Settings, load_settings

CFG = KBSettings(progress=False)


def _settings(root: Path, **kb: object) -> Settings:
    return load_settings(
        "test", paths={"index_dir": root / "indexes", "data_dir": root / "data"}, kb={"progress": False, **kb}
    )


@pytest.fixture(scope="module")
def counter() -> E5TokenCounter:
    return E5TokenCounter()


def _alias_bomb(levels: int) -> bytes:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    return ("---\n" + "\n".join(lines) + "\n---\n# Title\n\nSome text.\n").encode()


@pytest.mark.parametrize("levels", [2, 5])
def test_yaml_alias_bomb_in_front_matter_is_refused(levels: int) -> None:
    # 5 levels is 59,049 strings from 378 bytes; 9 levels (the reported 4 GB) is the same shape.
    with pytest.raises(DocumentError, match="aliases are not allowed"):
        parse_markdown(_alias_bomb(levels), "bomb.md", CFG)


def test_front_matter_without_aliases_still_loads() -> None:
    blocks, info = parse_markdown(b"---\ntitle: Plain\nyear: 2024\n---\n## A\n\ntext\n", "ok.md", CFG)
    assert info.title == "Plain" and info.year == 2024 and blocks[0].path == ("A",)


def test_oversized_front_matter_is_refused() -> None:
    data = b"---\nnote: " + b"x" * 70_000 + b"\n---\n# T\n\ntext\n"
    with pytest.raises(DocumentError, match="front matter over"):
        parse_markdown(data, "big.md", CFG)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kb", [72, 720])
def test_nested_html_is_linear(kb: int) -> None:
    # Nested blocks each holding text: the tree search per block was quadratic (72 KB: over 120 s here).
    opening, closing = b"<blockquote>x", b"</blockquote>"
    depth = kb * 1024 // (len(opening) + len(closing))
    blocks, _ = parse_html(b"<h2>Deep</h2>" + opening * depth + closing * depth, "nested.html", CFG)
    assert len(blocks) == depth and all(b.path == ("Deep",) and b.text == "x" for b in blocks)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("kb", [72, 720])
def test_nested_containers_are_linear(kb: int) -> None:
    depth = kb * 1024 // 11  # "<div>" + "</div>" per level
    data = b"<h2>Deep</h2>" + b"<div>" * depth + b"<p>deep text</p>" + b"</div>" * depth
    blocks, _ = parse_html(data, "nested.html", CFG)
    assert [(b.path, b.text) for b in blocks] == [(("Deep",), "deep text")]


@pytest.mark.timeout(30)
def test_unclosed_nested_blocks_and_stray_end_tags() -> None:
    data = b"<h2>S</h2>" + b"<li><b>" * 60_000 + b"item" + b"</i>" * 60_000 + b"<p>after</p>"
    blocks, _ = parse_html(data, "unclosed.html", CFG)
    texts = [b.text for b in blocks]
    assert "item" in texts and "after" in texts


def test_html_keeps_headings_tables_and_skips_scripts() -> None:
    data = (
        b"<html><head><title>T</title><meta name='year' content='2021'><script>never()</script></head>"
        b"<body><h2>Doses</h2><table><tr><th>Drug</th><th>Dose</th></tr><tr><td>A</td><td>5 mg</td></tr></table>"
        b"<nav>menu never indexed</nav><p>Body <b>bold</b> text.</p></body></html>"
    )
    blocks, info = parse_html(data, "t.html", CFG)
    assert info.title == "T" and info.year == 2021
    assert [b.text for b in blocks] == ["Drug | Dose", "A | 5 mg", "Body bold text."]
    assert all(b.path == ("Doses",) for b in blocks)


def _big_markdown(mb: float) -> bytes:
    line = b"| cell one | cell two | cell three | cell four | cell five | cell six |\n"
    return b"## Big\n\n| a | b | c | d | e | f |\n|---|---|---|---|---|---|\n" + line * int(mb * 1024 * 1024 / len(line))


@pytest.mark.slow
def test_a_document_over_the_memory_budget_fails_alone(tmp_path: Path, counter: E5TokenCounter) -> None:
    good = tmp_path / "good.md"
    good.write_bytes(b"## Fine\n\nA small document that parses.\n")
    big = tmp_path / "big.md"
    big.write_bytes(_big_markdown(6))
    settings = KBSettings(progress=False, parse_memory_mb=64, parse_cpu_seconds=120)
    docs, errors = parse_files([big, good], "guideline", "user", settings, counter)
    assert [d.source for d in docs] == [str(good)]
    assert len(errors) == 1 and "budget" in errors[0].error and errors[0].source == str(big)


@pytest.mark.slow
def test_a_document_over_the_cpu_budget_fails_alone(tmp_path: Path, counter: E5TokenCounter) -> None:
    good = tmp_path / "good.md"
    good.write_bytes(b"## Fine\n\nA small document that parses.\n")
    big = tmp_path / "slow.md"
    big.write_bytes(_big_markdown(4))
    settings = KBSettings(progress=False, parse_memory_mb=0, parse_cpu_seconds=1)
    docs, errors = parse_files([big, good], "guideline", "user", settings, counter)
    assert [d.source for d in docs] == [str(good)]
    assert len(errors) == 1 and "CPU-time" in errors[0].error


def test_parsing_in_process_is_still_available(tmp_path: Path, counter: E5TokenCounter) -> None:
    good = tmp_path / "good.md"
    good.write_bytes(b"## Fine\n\nA small document that parses.\n")
    bad = tmp_path / "bomb.md"
    bad.write_bytes(_alias_bomb(3))
    docs, errors = parse_files([good, bad], "guideline", "user", KBSettings(parse_isolation=False), counter)
    assert len(docs) == 1 and "aliases" in errors[0].error


def test_a_worker_parse_gives_the_same_document(tmp_path: Path, counter: E5TokenCounter) -> None:
    src = Path(__file__).parent / "data" / "kb" / "guideline_small.md"
    here = parse_guideline(src.read_bytes(), str(src), "user", CFG, counter)
    docs, errors = parse_files([src], "guideline", "user", CFG, counter)
    assert not errors and docs[0].chunks == here.chunks


def test_a_worker_started_from_a_page_does_not_run_the_page(
    tmp_path: Path, counter: E5TokenCounter, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streamlit makes the page ``__main__``; a spawned worker must not run it again (it would die there)."""
    page = tmp_path / "page.py"
    page.write_text("raise SystemExit('the page ran in the worker')\n")
    main = types.ModuleType("__main__")
    main.__file__ = str(page)
    monkeypatch.setitem(sys.modules, "__main__", main)
    src = Path(__file__).parent / "data" / "kb" / "guideline_small.md"
    docs, errors = parse_files([src], "guideline", "user", CFG, counter)
    assert not errors and len(docs) == 1 and docs[0].chunks
    assert sys.modules["__main__"] is main  # put back after the worker started


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return make_embedder(load_settings("test").embed)


@pytest.mark.slow
def test_three_concurrent_uploads_to_one_kb_keep_all_three(
    tmp_path: Path, embedder: Embedder, counter: E5TokenCounter
) -> None:
    files = []
    for i in range(3):
        path = tmp_path / f"doc{i}.md"
        path.write_text(f"## Section {i}\n\nDocument number {i} about topic {i} with its own words.\n")
        files.append(path)
    settings = _settings(tmp_path, parse_isolation=False)
    errors: list[BaseException] = []

    def upload(path: Path) -> None:
        try:
            KnowledgeBase(settings, embedder, counter).ingest([path], "guideline", "user")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=upload, args=(p,)) for p in files]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    docs = KnowledgeBase(settings, embedder, counter).stats()["user"]["documents"]
    assert sorted(d["source"] for d in docs) == sorted(str(p) for p in files)


def _flate_bomb_pdf(mb: int) -> bytes:
    """A one-page PDF whose content stream inflates from a few hundred KB to ``mb`` MB of text operators."""
    import zlib

    ops = b"BT /F1 10 Tf 50 700 Td (bomb) Tj ET\n" * (mb * 1024 * 1024 // 36)
    stream = zlib.compress(ops, 9)
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >> "
        b"/Contents 4 0 R >>",
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)


@pytest.mark.slow
def test_a_pdf_decompression_bomb_fails_alone(tmp_path: Path, counter: E5TokenCounter) -> None:
    bomb = tmp_path / "bomb.pdf"
    bomb.write_bytes(_flate_bomb_pdf(150))
    good = tmp_path / "good.md"
    good.write_bytes(b"## Fine\n\nA small document that parses.\n")
    assert bomb.stat().st_size < 2 * 1024 * 1024
    settings = KBSettings(progress=False, parse_memory_mb=256, parse_cpu_seconds=20)
    docs, errors = parse_files([bomb, good], "guideline", "user", settings, counter)
    assert [d.source for d in docs] == [str(good)]
    assert len(errors) == 1 and errors[0].source == str(bomb)


@pytest.mark.timeout(60)
def test_deeply_nested_markdown_is_bounded(counter: E5TokenCounter) -> None:
    data = b"## Nest\n\n" + b"> " * 50_000 + b"quoted\n\n" + b"- " * 50_000 + b"item\n"
    try:  # markdown-it caps nesting: the deep text may be dropped, but the parse ends at once, typed
        doc = parse_guideline(data, "nest.md", "user", CFG, counter)
    except DocumentError as exc:
        assert "no text" in str(exc)
    else:
        assert all(c.section_path == ("Nest",) for c in doc.chunks)
