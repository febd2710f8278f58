"""Words that frame a severity question ("spread", "grade of", "distribution", "range", "mix", "level"), reworded.

A class of the second outside set's train misses ("severity spread of the matches" answered "Spread is not
recorded"), written by the team in its own words before the change and never trained on. Each must get the
severities of the similar cases, most severe first; a grade asked of the disease itself ("what grade was the
tumour") is still a measurement no evidence records. Before -> after: 4/6 -> 6/6 framed, 1/1 -> 1/1 measurement.
Real parts: the seeded demo data through the real service. Demo data, not for clinical use.
"""

from __future__ import annotations

import pytest

from core.runtime import Runtime
from tests.test_ask_classes import _ask

FRAMED = [
    ("hannah.schmidt", "spread of severity among the similar cases"),
    ("fatima.zahra", "severity distribution for the matches"),
    ("rahul.mehta", "what grade of severity were the neighbours"),
    ("imran.khan", "range of severity in the similar patients"),
    ("olivia.brown", "severity mix of the look-alikes"),
    ("george.miller", "what level of severity did the matches have"),
]


@pytest.mark.parametrize(("user", "question"), FRAMED)
def test_a_framed_severity_question_gets_the_severities(demo: Runtime, user: str, question: str) -> None:
    shown, cited, _ = _ask(demo, user, question)
    assert "most severe first" in shown and cited and "not recorded" not in shown, shown


def test_a_grade_of_the_disease_is_still_a_measurement(demo: Runtime) -> None:
    shown, _, _ = _ask(demo, "olivia.brown", "what grade was the tumour in the similar cases")
    assert "Grade is not recorded" in shown, shown
