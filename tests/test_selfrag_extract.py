"""Option-letter extraction: a wide table of answers; nothing matching is ``None``, never a default letter."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.selfrag.extract import extract_letter

OPTIONS = {"A": "Ampicillin", "B": "Ceftriaxone", "C": "Doxycycline", "D": "Nitrofurantoin"}
NESTED = {"A": "Aspirin", "B": "Aspirin and heparin", "C": "Heparin", "D": "Warfarin"}

CASES = [
    ("D. Nitrofurantoin", "D"),
    ("D. Nitrofurantoin is safe in the second trimester.", "D"),
    ("Answer: A", "A"),
    ("answer: C", "C"),
    ("Answer - B", "B"),
    ("**Answer:** D", "D"),
    ("The answer is (B)", "B"),
    ("The answer is B.", "B"),
    ("The correct answer is D. Nitrofurantoin", "D"),
    ("The answer is option C", "C"),
    ("The correct option is C.", "C"),
    ("The best choice is (A).", "A"),
    ('{"answer_choice": "C"}', "C"),
    ('Here is my reply: {"step_by_step_thinking": "...", "answer_choice": "B"}', "B"),
    ('{"answer": "d"}', "D"),
    ("(B) Ceftriaxone", "B"),
    ("B) Ceftriaxone", "B"),
    ("C", "C"),
    (" (D) ", "D"),
    ("Nitrofurantoin is the preferred drug in pregnancy.", "D"),
    ("I would give doxycycline.", "C"),
    ("A 23-year-old woman needs an antibiotic.", None),  # the article "A" is not an answer
    ("The answer is Amoxicillin.", None),  # "A" inside a word
    ("I am not sure.", None),
    ("", None),
    ("   ", None),
    ("Either ampicillin or ceftriaxone would work.", None),  # two options: ambiguous
    ("Answer: E", None),  # not an option here
    ('{"answer_choice": "Z"}', None),
]


@pytest.mark.parametrize(("text", "letter"), CASES)
def test_extract_letter(text: str, letter: str | None) -> None:
    assert extract_letter(text, OPTIONS) == letter


def test_longest_option_text_wins_over_a_contained_one() -> None:
    assert extract_letter("Give aspirin and heparin now.", NESTED) == "B"
    assert extract_letter("Warfarin.", NESTED) == "D"


def test_without_options_any_letter_a_to_j_is_valid() -> None:
    assert extract_letter("Answer: E") == "E"
    assert extract_letter("Nitrofurantoin") is None


TABLE = Path(__file__).parent / "data" / "mcq_outputs.json"


def _rows(split: str) -> list[dict[str, Any]]:
    rows = json.loads(TABLE.read_text(encoding="utf-8"))["rows"]
    return [r for r in rows if split == "all" or r["split"] == split]


def test_table_covers_every_pattern_with_a_frozen_split() -> None:
    rows = _rows("all")
    assert len(rows) >= 300
    test = [r for r in rows if r["split"] == "test"]
    frozen = [r for r in rows if r["split"] in {"dev", "test"}]
    assert 0.25 <= len(test) / len(frozen) <= 0.35  # the seeded 30% held out while the extractor was tuned
    patterns = {r["pattern"] for r in rows}
    for needed in ("json_letter_text", "json_paren_text", "final_over_hypothetical", "text_word_boundary",
                   "text_duplicate", "no_answer", "two_letters", "article_a"):  # fmt: skip
        assert needed in patterns
    assert sum(r["expected"] is None for r in rows) >= 30  # "no letter stated" is well represented


def test_agreement_on_the_held_out_split_is_at_least_99_percent() -> None:
    rows = _rows("test")
    wrong = [(r["id"], r["expected"]) for r in rows if extract_letter(r["text"], r["options"]) != r["expected"]]
    assert 1 - len(wrong) / len(rows) >= 0.99, wrong


def test_agreement_on_phrasings_written_after_the_freeze() -> None:
    rows = _rows("fresh")
    agree = sum(extract_letter(r["text"], r["options"]) == r["expected"] for r in rows)
    assert len(rows) >= 30 and agree / len(rows) >= 0.9  # 27/32 when first measured, 31/32 now (docs/SELFRAG.md)


def test_json_answers_with_option_text_and_final_statements() -> None:
    tube = {"A": "Ovary", "B": "Fallopian tube", "C": "Cervix"}
    assert extract_letter('{"step_by_step_thinking": "...", "answer_choice": "B. Fallopian tube"}', tube) == "B"
    assert extract_letter('{"answer_choice": "(C) Cervix"}', tube) == "C"
    assert extract_letter("If it were a teenager the answer would be A. Final answer: C", tube) == "C"
    assert extract_letter("The answer is A. No, wait: the answer is B.", tube) == "B"


def test_a_letter_followed_by_another_options_text_is_no_answer() -> None:
    cap = {"A": "Vancomycin", "B": "Amoxicillin", "C": "Meropenem"}
    assert extract_letter("A. Amoxicillin\nExplanation: first choice.", cap) is None  # seen from the default model
    assert extract_letter("The answer is (C) Amoxicillin.", cap) is None
    assert extract_letter("B. Amoxicillin\nExplanation: first choice.", cap) == "B"
    assert extract_letter("A. Vancomycin is not needed; Final answer: B", cap) == "B"


def test_numbers_and_duplicates_match_whole_tokens() -> None:
    cutoffs = {"A": ">5 mm", "B": ">10 mm", "C": ">15 mm"}
    assert extract_letter("The cut-off is >15 mm here.", cutoffs) == "C"
    assert extract_letter("Anything >5 mm is positive.", cutoffs) == "A"
    twins = {"A": "Metformin", "B": "Insulin", "C": "Metformin"}
    assert extract_letter("Metformin.", twins) is None
    assert extract_letter("Answer: C", twins) == "C"
