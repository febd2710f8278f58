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
