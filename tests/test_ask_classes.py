"""Issue 23's handled classes, by class rather than by example: tables of rewordings the team wrote.

None of these questions is in the outside set or among the classifier's training examples
(``core/askeval/data/intent_examples.json``): they check that a class of phrasing is
handled, not one quoted question. Each runs through the real service on the seeded demo
data (real SQLite, FAISS, the shipped intent model over the project's e5 embedder).

* treatment named with no verb ("enzalutamide?", "brachy or external beam"), tests and
  follow-up for this patient ("follow up mri interval", "biopsy him?") and a go-ahead
  ("when is it safe for him to fly") get the pointer, saying whether Guideline QA covers it;
* a lone finding ("DVT?") is looked up in the evidence, never sent to the pointer;
* a patient detail in everyday words ("any of them pregnant") is stated as not recorded;
* requests that are not about a scan get the off-topic answer and cite nothing;
* questions about past cases that name a procedure, or a summary, are still answered.
"""

from __future__ import annotations

import json
import re

import pytest

from core.answer.compose import is_pointer
from core.answer.guards_text import OFF_TOPIC
from core.answer.understand import normalise
from core.askeval.train import TEAM_EXAMPLES, WORD_KINDS
from core.contracts import INSUFFICIENT_DATA
from core.runtime import Runtime
from core.settings import REPO_ROOT
from tests.conftest import scan_of

NOT_COVERED = "no source in Casebook covers"

# (patient whose newest scan is asked about, question): Guideline QA does not cover these conditions.
TREATMENT = [
    ("rahul.mehta", "nebuliser or spacer?"),
    ("rahul.mehta", "tiotropium or umeclidinium"),
    ("rahul.mehta", "stop his ICS?"),
    ("hannah.schmidt", "should she come off fingolimod"),
    ("samuel.okafor", "brachy or external beam"),
    ("samuel.okafor", "bicalutamide 50 or 150"),
    ("li.wei", "aflibercept every 8 weeks?"),
    ("li.wei", "tighten his sugars first?"),
    ("george.miller", "list him for transplant?"),
    ("james.oconnor", "naproxen ok with his kidneys?"),
    ("james.oconnor", "when can he go back to lifting at work"),
    ("ananya.iyer", "herceptin if HER2 positive?"),
    ("ananya.iyer", "does she need an axillary clearance"),
    ("imran.khan", "aspirate first?"),
    ("imran.khan", "oxygen for him while waiting?"),
    ("imran.khan", "when is it safe for him to fly"),
    ("maria.gonzalez", "aspirin and clopidogrel together?"),
    ("fatima.zahra", "laparoscopic or open?"),
    ("fatima.zahra", "is it safe to discharge her tonight"),
    # tests and follow-up planned for this patient are what to do for this patient too
    ("hannah.schmidt", "follow up mri interval"),
    ("hannah.schmidt", "repeat MRI in 6 months?"),
    ("samuel.okafor", "biopsy him?"),
    ("george.miller", "f/u CT in 3 months?"),
    ("george.miller", "needs a liver biopsy?"),
    ("ananya.iyer", "core biopsy or FNA?"),
    ("rahul.mehta", "spirometry before next visit?"),
    ("imran.khan", "follow-up x-ray when"),
]
# The scan's AI reading is community-acquired pneumonia, which Guideline QA covers: the question is carried there.
TREATMENT_IN_SCOPE = [
    ("priya.nair", "co-amoxiclav plus clarithromycin?"),
    ("priya.nair", "can we treat her at home"),
    ("priya.nair", "she's penicillin allergic, what instead"),
]
OFF_TOPIC_ASKS = [
    ("rahul.mehta", "remind me to ring the lab at 3pm"),
    ("rahul.mehta", "translate good morning into Spanish"),
    ("olivia.brown", "help me write my CV"),
    ("olivia.brown", "is the canteen still open"),
    ("olivia.brown", "play some jazz"),
    ("maria.gonzalez", "what's the capital of Peru"),
    ("maria.gonzalez", "can you fix the printer on level 2"),
    ("fatima.zahra", "what's the exchange rate for euros"),
    ("fatima.zahra", "who won the tennis"),
    ("fatima.zahra", "tell me a story"),
]
# A lone finding asks whether the evidence records it; it is never sent to the treatment pointer.
LONE_FINDINGS = [
    ("fatima.zahra", "DVT?", "Dvt"),
    ("fatima.zahra", "pneumoperitoneum?", "Pneumoperitoneum"),
    ("james.oconnor", "spondylolisthesis?", "Spondylolisthesis"),
    ("fatima.zahra", "any volvulus", "Volvulus"),
]
# "in them" is the similar cases, not this patient: a finding asked about them is looked up, never the pointer.
FINDINGS_IN_THEM = [
    ("rahul.mehta", "hyperinflation in them?", "Hyperinflation"),
    ("olivia.brown", "any satellite lesions in them", "Satellite"),
    ("fatima.zahra", "free fluid in them?", "Free fluid"),
]
# A patient detail named in everyday English: the word-kind model tells it from everyday words.
PATIENT_DETAILS = [
    ("fatima.zahra", "any of them pregnant", "Pregnant"),
    ("maria.gonzalez", "any of the matches on a special diet", "Special diet"),
    ("rahul.mehta", "did any of them smoke", "Smoke"),
    ("rahul.mehta", "how many did regular exercise", "Regular exercise"),
]
# Everyday words in a count are not findings: no "Fine is not recorded".
EVERYDAY_COUNTS = [("fatima.zahra", "how many did fine"), ("fatima.zahra", "how many ended up ok"),
                   ("imran.khan", "how many are still alive")]  # fmt: skip
# Questions about past cases that name a procedure, and a summary: answered from the evidence, never refused.
ANSWERED = [
    ("fatima.zahra", "did any of them need surgery"),
    ("fatima.zahra", "how many had an operation"),
    ("imran.khan", "did any need a chest drain"),
    ("james.oconnor", "did they get better without surgery"),
    ("rahul.mehta", "how many needed admission"),
    ("priya.nair", "how many were admitted to hospital"),
    ("george.miller", "Summarise the similar cases."),
    ("maria.gonzalez", "how many were left disabled"),
]


def _ask(rt: Runtime, user: str, question: str) -> tuple[str, list[str], str | None]:
    from core.answer.service import answer_readonly

    _, res = answer_readonly(rt, scan_of(rt, user), question)
    shown = res.answer.answer + (f" {res.reason}" if res.path == "fixed" and res.reason else "")
    return shown, res.answer.citedCaseIds, res.guideline_question


@pytest.mark.parametrize(("user", "question"), TREATMENT)
def test_what_to_do_for_this_patient_gets_the_pointer(demo: Runtime, user: str, question: str) -> None:
    shown, cited, carried = _ask(demo, user, question)
    assert is_pointer(shown) and NOT_COVERED in shown and carried is None and not cited, shown


@pytest.mark.parametrize(("user", "question"), TREATMENT_IN_SCOPE)
def test_a_covered_treatment_question_is_carried_to_guideline_qa(demo: Runtime, user: str, question: str) -> None:
    shown, _, carried = _ask(demo, user, question)
    assert is_pointer(shown) and carried == question, shown


@pytest.mark.parametrize(("user", "question"), OFF_TOPIC_ASKS)
def test_requests_outside_the_scan_get_the_off_topic_answer(demo: Runtime, user: str, question: str) -> None:
    shown, cited, _ = _ask(demo, user, question)
    assert OFF_TOPIC in shown and not cited, shown


@pytest.mark.parametrize(("user", "question"), ANSWERED)
def test_questions_about_past_cases_are_still_answered(demo: Runtime, user: str, question: str) -> None:
    shown, cited, _ = _ask(demo, user, question)
    assert cited and not is_pointer(shown) and OFF_TOPIC not in shown and not shown.startswith(INSUFFICIENT_DATA), shown


@pytest.mark.parametrize(("user", "question", "name"), LONE_FINDINGS)
def test_a_lone_finding_is_looked_up_in_the_evidence(demo: Runtime, user: str, question: str, name: str) -> None:
    shown, _, _ = _ask(demo, user, question)
    assert not is_pointer(shown) and f"{name} is not recorded in the evidence" in shown, shown


@pytest.mark.parametrize(("user", "question", "name"), FINDINGS_IN_THEM)
def test_a_finding_asked_of_the_similar_cases_is_looked_up(demo: Runtime, user: str, question: str, name: str) -> None:
    shown, _, _ = _ask(demo, user, question)
    assert not is_pointer(shown) and f"{name} is not recorded in the evidence" in shown, shown


@pytest.mark.parametrize(("user", "question", "name"), PATIENT_DETAILS)
def test_a_patient_detail_in_everyday_words_is_not_recorded(demo: Runtime, user: str, question: str, name: str) -> None:
    shown, _, _ = _ask(demo, user, question)
    assert f"{name} is not recorded in the evidence" in shown, shown


@pytest.mark.parametrize(("user", "question"), EVERYDAY_COUNTS)
def test_everyday_words_in_a_count_are_not_findings(demo: Runtime, user: str, question: str) -> None:
    shown, cited, _ = _ask(demo, user, question)
    assert cited and "not recorded" not in shown and not shown.startswith(INSUFFICIENT_DATA), shown


def _key(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", normalise(text)[0]).strip()


def test_the_teams_examples_are_its_own() -> None:
    """No team example is a question of either set, nor one of the held-out rewordings above."""
    team = {_key(t) for texts in json.loads(TEAM_EXAMPLES.read_text())["examples"].values() for t in texts}
    data = REPO_ROOT / "tests" / "data"
    outside = {_key(p["text"]) for i in json.loads((data / "ask_outside_questions.json").read_text())["items"] for p in i["parts"]}
    outside |= {_key(i["question"]) for i in json.loads((data / "ask_outside_questions.json").read_text())["items"]}
    doctor = {_key(i["question"]) for i in json.loads((data / "doctor_questions.json").read_text())["items"]}
    held_out = {_key(q) for _, q in TREATMENT + TREATMENT_IN_SCOPE + OFF_TOPIC_ASKS + ANSWERED}
    held_out |= {_key(q) for _, q, _ in LONE_FINDINGS + PATIENT_DETAILS + FINDINGS_IN_THEM} | {_key(q) for _, q in EVERYDAY_COUNTS}
    kinds = json.loads(WORD_KINDS.read_text())
    words = {_key(w) for w in kinds["clinical"] + kinds["everyday"]}
    assert not words & {w for _, _, name in PATIENT_DETAILS for w in _key(name).split()}
    assert not team & outside and not team & doctor and not team & held_out
