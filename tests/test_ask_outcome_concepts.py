"""Outcomes counted in paraphrase ("went downhill", "didn't make it"), reworded by the team: a held-out table.

Written before the outcome-concept model was fitted, in the team's words, from the class of the outside
sets' train-split misses and never from their wording, and never trained on
(``test_this_table_is_held_out``). Measured once with the shipped model and ``ask.outcome_read_min``
(0.40, set before the table was run): 23 of 45 outcome wordings read as their concept, none read as
another concept; 8 of 8 findings and conditions read as none, so they stay "not recorded". The misses
are strict xfails: the model says nothing rather than something wrong. Real parts: the seeded demo
data, the shipped model over the project's e5 embedder. Demo data, not for clinical use.
"""

from __future__ import annotations

import json
import re

import pytest

from core.answer.understand import normalise
from core.runtime import Runtime
from tests.test_ask_classes import _ask, _key

_UNREAD = pytest.mark.xfail(strict=True, reason="below ask.outcome_read_min: left unread (never read as another concept)")
# (wording, the outcome concept it asks about)
PARAPHRASES = [
    pytest.param("how many of them passed on", "death", marks=_UNREAD),
    pytest.param("how many didn't pull through", "death", marks=_UNREAD),
    pytest.param("how many never left hospital alive", "death", marks=_UNREAD),
    pytest.param("how many succumbed", "death", marks=_UNREAD),
    ("how many are no longer with us", "death"),
    ("death count in the lookalikes", "death"),
    ("how many took a turn for the worse", "progression"),
    pytest.param("how many headed south", "progression", marks=_UNREAD),
    ("how many got progressively worse", "progression"),
    pytest.param("number who slid backwards", "progression", marks=_UNREAD),
    pytest.param("how many had the disease move on", "progression", marks=_UNREAD),
    ("how many stayed the same", "stable course"),
    pytest.param("how many held their own", "stable course", marks=_UNREAD),
    pytest.param("how many were static on follow up", "stable course", marks=_UNREAD),
    pytest.param("how many didn't budge", "stable course", marks=_UNREAD),
    ("how many had a second attack", "relapse"),
    pytest.param("how many had another bout", "relapse", marks=_UNREAD),
    ("how many had the tumour return", "recurrence"),
    pytest.param("how many saw the cancer reappear", "recurrence", marks=_UNREAD),
    pytest.param("how many had chest attacks again", "exacerbation", marks=_UNREAD),
    ("how many kept having copd flares", "exacerbation"),
    ("how many ended up in hospital", "admission"),
    pytest.param("how many needed a bed on the ward", "admission", marks=_UNREAD),
    pytest.param("how many ended up ventilated", "intensive care", marks=_UNREAD),
    pytest.param("how many needed a breathing machine", "intensive care", marks=_UNREAD),
    ("how many landed in the icu", "intensive care"),
    ("how many had it all clear up", "resolution"),
    ("how many were clear on the repeat film", "resolution"),
    ("how many had it settle completely", "resolution"),
    ("how many made it back to full health", "recovery"),
    pytest.param("how many were back to normal", "recovery", marks=_UNREAD),
    ("how many got well again", "recovery"),
    ("how many ended up with poor sight", "vision loss"),
    ("how many lost their eyesight", "vision loss"),
    pytest.param("how many still had scarring", "residual changes", marks=_UNREAD),
    pytest.param("how many had changes that never fully went", "residual changes", marks=_UNREAD),
    pytest.param("how many had their psa creep up", "biochemical recurrence", marks=_UNREAD),
    ("how many had psa go up again", "biochemical recurrence"),
    pytest.param("how many got secondaries", "distant recurrence", marks=_UNREAD),
    ("how many had spread to distant organs", "distant recurrence"),
    ("how many needed help with daily living afterwards", "disability"),
    ("how many were left dependent", "disability"),
    pytest.param("how many were still sore months later", "persistent pain", marks=_UNREAD),
    ("how many had a weak leg afterwards", "weakness"),
    ("how many had their breathing tests fall", "decline in function"),
]
# Findings, conditions and patient details: no outcome concept, so each stays "not recorded" by name.
NOT_OUTCOMES = [
    ("rahul.mehta", "how many had honeycombing", "honeycombing"),
    ("hannah.schmidt", "how many had a glioma", "glioma"),
    ("rahul.mehta", "how many had asbestos exposure", "asbestos"),
    ("li.wei", "how many had a pacemaker", "pacemaker"),
    ("olivia.brown", "how many were vaccinated", "vaccinated"),
    ("george.miller", "how many had splenomegaly", "splenomegaly"),
    ("imran.khan", "how many had a pulmonary embolism", "pulmonary embolism"),
    ("priya.nair", "how many had night sweats", "night sweats"),
]


@pytest.mark.parametrize(("question", "concept"), PARAPHRASES)
def test_an_outcome_in_other_words_is_read_as_its_concept(demo: Runtime, question: str, concept: str) -> None:
    reading = demo.ask_kit.reader.outcomes.read(normalise(question, demo.ask_kit.conditions)[0])  # type: ignore[union-attr]
    assert reading is not None and reading.concept == concept, reading


@pytest.mark.parametrize(("question", "concept"), [getattr(p, "values", p) for p in PARAPHRASES])
def test_no_wording_is_read_as_another_concept(demo: Runtime, question: str, concept: str) -> None:
    reading = demo.ask_kit.reader.outcomes.read(normalise(question, demo.ask_kit.conditions)[0])  # type: ignore[union-attr]
    assert reading is None or reading.concept == concept, reading


@pytest.mark.parametrize(("user", "question", "name"), NOT_OUTCOMES)
def test_a_finding_stays_not_recorded(demo: Runtime, user: str, question: str, name: str) -> None:
    shown, _, _ = _ask(demo, user, question)
    assert "Read as" not in shown or "Read as:" in shown, shown
    assert re.search(rf"{name}[^.]* not recorded", shown, re.I), shown


@pytest.mark.parametrize(
    ("user", "question", "concept"),
    [("rahul.mehta", "how many took a turn for the worse", "progression"), ("imran.khan", "how many are no longer with us", "death"),
     ("priya.nair", "how many had it all clear up", "resolution")],
)  # fmt: skip
def test_the_answer_names_the_reading_and_counts_it(demo: Runtime, user: str, question: str, concept: str) -> None:
    shown, cited, _ = _ask(demo, user, question)
    said = re.search(rf"Read as {concept}: (?:(\d+) of (\d+) similar cases record {concept}|{concept} is not recorded)", shown, re.I)
    assert said and cited, shown


def test_this_table_is_held_out() -> None:
    """No training example (the team's outcome examples or either outside set) is one of these wordings."""
    from core.askeval.train import OUTCOME_EXAMPLES
    from core.settings import REPO_ROOT

    seen = {_key(t) for texts in json.loads(OUTCOME_EXAMPLES.read_text())["examples"].values() for t in texts}
    for name in ("ask_outside_questions.json", "ask_outside2_questions.json"):
        items = json.loads((REPO_ROOT / "tests" / "data" / name).read_text())["items"]
        seen |= {_key(i["question"]) for i in items} | {_key(p["text"]) for i in items for p in i["parts"]}
    mine = [str(getattr(p, "values", p)[0]) for p in PARAPHRASES] + [q for _, q, _ in NOT_OUTCOMES]
    assert len({_key(q) for q in mine}) == len(mine) and not {_key(q) for q in mine} & seen
