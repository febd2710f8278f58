"""A question that places its patient in a group without naming it is asked about that group (issue 24).

"jaundice on HRZE resolved - how quickly do I reintroduce INH?" names no population, but its patient has a
liver problem, and the passages that answer it are written for liver disease (their headings say so). Before
``guideline.population_cues`` such a question was read as about adults, and its answer's liver passages were
marked "for hepatic, not the asked group". The wordings below are our own, none an outside question. Side
effects and monitoring rules ("can isoniazid cause hepatitis?", "how often is ALT checked?") name no group:
the cues are read in questions only, never in passages.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config.guideline import GuidelineQASettings
from core.guideline.sources import passage_population, question_population
from core.guideline.types import QAAnswer
from core.settings import Settings
from tests.conftest import make_settings
from tests.test_guideline_pipeline import qa_with
from tests.test_guideline_sources import INTL, h

CFG = GuidelineQASettings()
HEPATIC = [
    "jaundice on HRZE resolved - how quickly do I restart isoniazid?",
    "pt became jaundiced in week 3 of treatment, what next",
    "DILI on first-line drugs: which ones can continue?",
    "ALT 6x ULN after a month of TB treatment - stop everything?",
    "LFTs deranged on rifampicin, when to rechallenge",
    "raised transaminases on isoniazid preventive therapy",
    "bilirubin is up on HRZE - stop pyrazinamide?",
    "TB treatment in a patient with cirrhosis",
    "drug-induced hepatitis has settled; order of reintroduction?",
    "icteric patient on anti-TB drugs",
]
NOT_HEPATIC = [
    "can isoniazid cause hepatitis?",
    "how often is ALT checked during TB treatment?",
    "adult isoniazid dose?",
    "alternative regimen if ethambutol is not tolerated",
    "which TB drugs are hepatotoxic?",
    "PZA dose on haemodialysis",
]


@pytest.mark.parametrize("question", HEPATIC)
def test_a_liver_finding_places_the_patient_in_the_hepatic_group(question: str) -> None:
    assert question_population(question, CFG) == "hepatic"


@pytest.mark.parametrize("question", NOT_HEPATIC)
def test_a_side_effect_or_monitoring_question_names_no_liver_group(question: str) -> None:
    assert question_population(question, CFG) != "hepatic"


def test_cues_are_not_read_in_passages() -> None:
    row = h("intl", 9, "Medicine: Isoniazid | Adverse effect: raised ALT and jaundice | What to do: stop isoniazid",
            ("14. Isoniazid (H)", "14.7 Isoniazid: adverse effects"), INTL, 33)  # fmt: skip
    assert passage_population(row, row.text, CFG) is None


LIVER = h("intl", 4, "Stop isoniazid, rifampicin and pyrazinamide when ALT rises above three times the upper limit of "
          "normal with jaundice. When the jaundice has resolved and ALT returns below two times the upper limit of "
          "normal, reintroduce rifampicin first, then isoniazid after three to seven days.",
          ("7. Special situations", "7.3 Drug-induced liver injury"), INTL, 23)  # fmt: skip
ADULT = h("intl", 5, "The recommended dose of isoniazid for adults is 5 mg/kg once daily, to a maximum of 300 mg.",
          ("14. Isoniazid (H)", "14.2 Isoniazid: dose in adults"), INTL, 33, 0.86)  # fmt: skip


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


def test_the_liver_passage_answers_a_jaundice_question_as_the_asked_group(settings: Settings) -> None:
    qa = qa_with(settings, {"guidelines": [], "user": [ADULT, LIVER]}, llm=None)
    result = qa.answer("Jaundice on TB treatment has resolved: when is isoniazid reintroduced?", spaces=("user",))
    assert isinstance(result, QAAnswer), result
    assert result.population == "hepatic"
    liver = [b for b in result.bullets if "three to seven days" in b.text]
    assert liver and not liver[0].other_population, [(b.text, b.population) for b in result.bullets]
    assert result.bullets[0] is liver[0]
