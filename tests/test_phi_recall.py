"""The de-identifier on the synthetic PHI corpus (tests/data/phi_sentences.json, bench/phi_corpus.py).

Issue 15 asks for 100% recall on planted names, record numbers and dates; the
other types are held to the same bar here because the bench measured it
(docs/PRIVACY.md). Sentences that plant nothing must come back unchanged, so the
clinical look-alikes (case ids, sizes, percentages, vertebral levels) survive.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.privacy.deid import Deidentifier
from core.privacy.text import normalise

CORPUS = json.loads((Path(__file__).parent / "data" / "phi_sentences.json").read_text())
ROWS = CORPUS["sentences"]


def test_the_corpus_is_big_enough() -> None:
    kinds = {s["type"] for r in ROWS for s in r["spans"]}
    assert len(ROWS) == 200 and {"NAME", "RECORD", "DATE", "PHONE", "EMAIL", "NUMBER"} <= kinds
    assert sum(not r["spans"] for r in ROWS) >= 20


@pytest.mark.parametrize("kind", ["NAME", "RECORD", "DATE", "PHONE", "EMAIL", "NUMBER"])
def test_every_planted_identifier_is_removed(kind: str) -> None:
    deid = Deidentifier(CORPUS["users"])
    missed = []
    for row in ROWS:
        scrubbed = normalise(deid.scrub(row["text"]))
        for span in row["spans"]:
            planted = normalise(row["text"][span["start"] : span["end"]])
            if span["type"] == kind and re.search(rf"(?<!\w){re.escape(planted)}(?!\w)", scrubbed):
                missed.append((planted, row["text"]))
    assert missed == []


def test_sentences_without_identifiers_are_unchanged() -> None:
    deid = Deidentifier(CORPUS["users"])
    clean = [r["text"] for r in ROWS if not r["spans"]]
    assert [deid.scrub(t) for t in clean] == clean


_FILLER = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
_DIGITS = st.from_regex(r"[0-9]{6,12}", fullmatch=True)


@settings(max_examples=80, deadline=None)
@given(
    name=st.sampled_from(CORPUS["users"]),
    number=_DIGITS,
    before=_FILLER,
    after=_FILLER,
    hide=st.sampled_from(["", "\u200b", "\u2060", "\u00ad"]),
)
def test_a_planted_name_or_number_never_survives(name: str, number: str, before: str, after: str, hide: str) -> None:
    """Whatever surrounds them, and with a zero-width or soft-hyphen character inside, they are replaced."""
    first, last = name.split(" ", 1)
    hidden = first[:2] + hide + first[2:]
    text = f"{before} {hidden} {last}, record {number[:3]}{hide}{number[3:]} {after}"
    out = normalise(Deidentifier(CORPUS["users"]).scrub(text))
    assert not re.search(rf"(?<!\w){re.escape(normalise(last))}(?!\w)", out)
    assert not re.search(rf"(?<!\w){re.escape(normalise(first))}(?!\w)", out)
    assert number not in out
