"""Logistics for this patient and what this patient needs: two classes of the second outside set's train misses, reworded.

Written by the team before the change, in its own words and never trained on (``test_these_tables_are_held_out``).
Before -> after: logistics 0/8 -> 2/8, care 5/5 -> 5/5, what this patient needs 3/4 -> 4/4, past needs 2/2 -> 2/2.

* moving, booking or cancelling this patient's appointments, transport, letters: outside what Ask AI answers
  (the off-topic answer), though they name "her" or "his"; deciding this patient's care (a repeat scan, a
  referral, discharge) stays a request for what to do (the pointer);
* "does she need X" and "how many days of X does he need" ask what to do for this patient (the pointer); "did
  they need X" and "how many needed X" ask about the similar cases; "will he need X" is about his future.

Real parts: the seeded demo data through the real service and the shipped intent model over the project's e5
embedder. Demo data, not for clinical use.
"""

from __future__ import annotations

import json

import pytest

from core.answer.compose import is_pointer
from core.answer.guards_text import OFF_TOPIC
from core.answer.parts_answer import PREDICTION_CAVEAT
from core.runtime import Runtime
from tests.test_ask_classes import _ask, _key

# Measured once after the change (2 of 8; 0 of 8 before): the six misses are strict xfails. Teaching the classifier
# logistics examples reached 5 of 8 but moved held-out requests ("would you add a macrolide") off the pointer: not kept.
_MISS = pytest.mark.xfail(strict=True, reason="the intent classifier reads it as a request for what to do (or is unsure)")
LOGISTICS = [
    pytest.param("rahul.mehta", "please rebook his CT for next tuesday", marks=_MISS),
    pytest.param("olivia.brown", "can you arrange an ambulance to take her home", marks=_MISS),
    pytest.param("li.wei", "could you cancel his clinic appointment", marks=_MISS),
    pytest.param("george.miller", "push his scan back a week", marks=_MISS),
    ("priya.nair", "can you print her appointment letter"),
    pytest.param("samuel.okafor", "get him a hospital porter for the trip to the scanner", marks=_MISS),
    ("hannah.schmidt", "can you change her MRI slot to the morning"),
    pytest.param("imran.khan", "phone his daughter to say the appointment has moved", marks=_MISS),
]
CARE = [
    ("olivia.brown", "is it safe to discharge her"),
    ("rahul.mehta", "when should we see him back in clinic"),
    ("hannah.schmidt", "should we repeat her MRI in 6 months"),
    ("maria.gonzalez", "refer her to physio?"),
    ("li.wei", "does he need a follow-up scan"),
]
NEEDS = [
    ("priya.nair", "how many weeks of steroids does she need"),
    ("imran.khan", "does he need a chest drain"),
    ("fatima.zahra", "does she need antibiotics after the operation"),
    ("james.oconnor", "do we need to operate on him"),
]
PAST_NEEDS = [
    ("imran.khan", "how many of the similar cases needed a chest drain"),
    ("fatima.zahra", "did the similar patients need surgery"),
]


@pytest.mark.parametrize(("user", "question"), LOGISTICS)
def test_logistics_for_this_patient_are_off_topic(demo: Runtime, user: str, question: str) -> None:
    shown, cited, _ = _ask(demo, user, question)
    assert OFF_TOPIC in shown and not cited, shown


@pytest.mark.parametrize(("user", "question"), CARE + NEEDS)
def test_what_this_patient_needs_gets_the_pointer(demo: Runtime, user: str, question: str) -> None:
    shown, cited, _ = _ask(demo, user, question)
    assert is_pointer(shown) and not cited, shown


@pytest.mark.parametrize(("user", "question"), PAST_NEEDS)
def test_what_the_similar_cases_needed_is_looked_up(demo: Runtime, user: str, question: str) -> None:
    shown, cited, _ = _ask(demo, user, question)
    assert cited and not is_pointer(shown), shown


def test_will_he_need_is_about_his_future(demo: Runtime) -> None:
    shown, _, _ = _ask(demo, "imran.khan", "will he need another drain")
    assert PREDICTION_CAVEAT in shown, shown


def test_these_tables_are_held_out() -> None:
    """No training example (the team's or either outside set's) is one of these questions."""
    from core.askeval.train import TEAM_EXAMPLES
    from core.settings import REPO_ROOT

    seen = {_key(t) for texts in json.loads(TEAM_EXAMPLES.read_text())["examples"].values() for t in texts}
    for name in ("ask_outside_questions.json", "ask_outside2_questions.json"):
        items = json.loads((REPO_ROOT / "tests" / "data" / name).read_text())["items"]
        seen |= {_key(i["question"]) for i in items} | {_key(p["text"]) for i in items for p in i["parts"]}
    mine = [str(getattr(r, "values", r)[1]) for r in LOGISTICS + CARE + NEEDS + PAST_NEEDS]
    assert len({_key(q) for q in mine}) == len(mine) and not {_key(q) for q in mine} & seen
