"""Option-letter extraction: a wide table of answers; nothing matching is ``None``, never a default letter."""

from __future__ import annotations

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
