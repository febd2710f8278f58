"""Guideline QA: a question naming a patient group quotes that group's line first (hand-made label chunk)."""

from __future__ import annotations

import pytest

from core.config.guideline import GuidelineQASettings
from core.guideline.compose import asked_populations, rank_sentences
from core.guideline.constraints import Candidate
from core.guideline.slots import question_slot
from tests.test_guideline_gates import hit

CFG = GuidelineQASettings()
INH = ("isoniazid",)
DOSING = (
    "Adults: 5 mg/kg, up to 300 mg once daily; intermittent: 15 mg/kg, up to 900 mg per dose.\n"
    "Pediatric patients: 10 to 15 mg/kg, up to 300 mg once daily.\n"
    "Renal impairment: no adjustment is needed; on hemodialysis give the dose after dialysis.\n"
    "Small amounts pass into breast milk; breastfeeding is not contraindicated."
)


def top_sentence(question: str, cfg: GuidelineQASettings = CFG) -> str:
    chunk = hit("inh#dose", DOSING, drug_names=INH, title="Isoniazid", section_code="34068-7",
                section_title="2 DOSAGE AND ADMINISTRATION")  # fmt: skip
    slot = question_slot(question, cfg, INH)
    named = Candidate(chunk, 0.8, 0.9, boost=0.3)  # the Dosage section the question names, as the section boost finds it
    return rank_sentences(question, [named], cfg, slot, INH)[0].text


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What is the dose of isoniazid for children?", "Pediatric patients"),
        ("What is the isoniazid dose in kids?", "Pediatric patients"),
        ("What is the isoniazid dose for adults?", "Adults"),
        ("Is an isoniazid adjustment needed for the kidneys?", "Renal impairment"),
    ],
)
def test_the_asked_groups_line_ranks_first(question: str, expected: str) -> None:
    assert top_sentence(question).startswith(expected)


def test_without_the_population_weight_the_adult_line_wins_for_children() -> None:
    # The cause the weight fixes: "per dose" matches the question's "dose", "Pediatric" never matches "children".
    cfg = GuidelineQASettings(population_weight=0.0)
    assert not top_sentence("What is the dose of isoniazid for children?", cfg).startswith("Pediatric")


def test_groups_are_read_from_the_question_and_kept_apart() -> None:
    assert len(asked_populations("Can a pregnant woman take it?", CFG)) == 1
    assert not any(p.search("Pregnant women need liver monitoring.") for p in
                   asked_populations("Is it safe while breastfeeding?", CFG))  # fmt: skip
    assert asked_populations("What is the dose of isoniazid?", CFG) == []
