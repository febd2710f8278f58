"""A lone term ("cipro?", "syrinx"): looked up in the evidence, and pointed when it may name a treatment.

A doctor who types one term may ask whether the similar cases record it (a finding) or whether to
give or do it for this patient (a treatment). Neither the intent classifier nor a term-kind model
tells the two apart reliably, so a lone term gets both answers, each correct for its reading:
"X is not recorded in the evidence of these N cases" (or the count of the cases that record it)
and the honest pointer. A lone term shaped like a disease or finding ("-itis", "-oma", "-osis"),
a condition the lexicon knows or an outcome event is only looked up.

These tables were written before the change and never trained on (``test_these_tables_are_held_out``).
Each runs through the real service on the seeded demo data (real SQLite, FAISS, the shipped intent
model over the project's e5 embedder). Demo data, not for clinical use.
"""

from __future__ import annotations

import json
import re

import pytest

from core.answer.compose import is_pointer
from core.askeval.outside_set import is_pointer_in
from core.runtime import Runtime
from tests.test_ask_classes import NOT_COVERED, _ask, _key

# (patient whose newest scan is asked about, a treatment typed alone): Guideline QA does not cover these scans.
LONE_TREATMENT = [
    ("rahul.mehta", "roflumilast?"),
    ("rahul.mehta", "LTOT?"),
    ("maria.gonzalez", "clopidogrel?"),
    ("maria.gonzalez", "endarterectomy?"),
    ("hannah.schmidt", "natalizumab?"),
    ("hannah.schmidt", "IVIG?"),
    ("james.oconnor", "epidural?"),
    ("james.oconnor", "gabapentin"),
    ("li.wei", "ranibizumab"),
    ("li.wei", "PRP?"),
    ("ananya.iyer", "tamoxifen?"),
    ("ananya.iyer", "lumpectomy?"),
    ("george.miller", "RFA?"),
    ("george.miller", "lenvatinib"),
    ("olivia.brown", "pembrolizumab?"),
    ("olivia.brown", "SLNB?"),
    ("samuel.okafor", "abiraterone"),
    ("samuel.okafor", "HIFU?"),
    ("imran.khan", "VATS?"),
    ("imran.khan", "pleurodesis?"),
    ("fatima.zahra", "metronidazole"),
    ("fatima.zahra", "interval appendicectomy?"),
]
# The scan's AI reading is community-acquired pneumonia, which Guideline QA covers: the question is carried there.
LONE_TREATMENT_IN_SCOPE = [("priya.nair", "amoxicillin?"), ("priya.nair", "doxy?")]
# (patient, a finding typed alone, a stem the answer must name): looked up; the answer never starts with the pointer.
LONE_FINDING = [
    ("rahul.mehta", "pneumatocele?", "pneumatocel"),
    ("rahul.mehta", "mosaic attenuation", "mosaic"),
    ("maria.gonzalez", "lacunes?", "lacun"),
    ("maria.gonzalez", "midline shift", "midline"),
    ("hannah.schmidt", "dawson fingers?", "dawson"),
    ("hannah.schmidt", "leptomeningeal enhancement", "leptomening"),
    ("james.oconnor", "modic changes?", "modic"),  # no longer respelt "medic": a short word is corrected only by a swap
    ("li.wei", "lisch nodules?", "lisch"),  # nor "tisch" (added with the fix, the same class)
    ("li.wei", "cotton wool spots", "cotton"),
    ("ananya.iyer", "architectural distortion?", "architectural"),
    ("george.miller", "portal vein thrombus?", "portal"),
    ("olivia.brown", "ulceration?", "ulcer"),
    ("samuel.okafor", "seminal vesicle invasion", "seminal"),
    ("imran.khan", "mediastinal shift?", "mediastinal"),
    ("fatima.zahra", "fat stranding?", "stranding"),
    ("priya.nair", "air bronchograms?", "bronchogram"),
    ("george.miller", "cholangitis?", "cholangitis"),
    ("olivia.brown", "lymphangiosis?", "lymphangiosis"),
]


def _sentences(text: str) -> list[str]:
    return re.split(r"(?<=[.!?])\s+", text)


def _looked_up(shown: str, stem: str) -> bool:
    """A sentence names the term and says whether the evidence records it ("not recorded" or "N of M ... record")."""
    return any(re.search(stem, s.lower()) and ("not recorded" in s or re.search(r"\d+ of \d+", s)) for s in _sentences(shown))


@pytest.mark.parametrize(("user", "question"), LONE_TREATMENT)
def test_a_lone_treatment_gets_the_pointer_beside_the_lookup(demo: Runtime, user: str, question: str) -> None:
    shown, _, carried = _ask(demo, user, question)
    assert is_pointer_in(shown) and NOT_COVERED in shown and carried is None, shown


@pytest.mark.parametrize(("user", "question"), LONE_TREATMENT_IN_SCOPE)
def test_a_covered_lone_treatment_is_carried(demo: Runtime, user: str, question: str) -> None:
    shown, _, carried = _ask(demo, user, question)
    assert is_pointer_in(shown) and carried == question, shown


@pytest.mark.parametrize(("user", "question", "stem"), LONE_FINDING)
def test_a_lone_finding_is_looked_up_first(demo: Runtime, user: str, question: str, stem: str) -> None:
    shown, _, _ = _ask(demo, user, question)
    assert not is_pointer(shown) and _looked_up(shown, stem), shown


def test_these_tables_are_held_out() -> None:
    """No team training example is one of these questions, and none is in another table."""
    from core.askeval.train import TEAM_EXAMPLES
    from tests import test_ask_classes as classes
    from tests import test_ask_wordings as wordings

    team = {_key(t) for texts in json.loads(TEAM_EXAMPLES.read_text())["examples"].values() for t in texts}
    mine = [str(q) for _, q in LONE_TREATMENT + LONE_TREATMENT_IN_SCOPE] + [str(getattr(r, "values", r)[1]) for r in LONE_FINDING]
    tables: list[list[object]] = [t for m in (classes, wordings) for name in dir(m)
                                  if name.isupper() and isinstance(t := getattr(m, name), list)]  # fmt: skip
    others = [getattr(r, "values", r)[1] for t in tables for r in t]  # type: ignore[index]
    keys = {_key(q) for q in mine}
    assert len(keys) == len(mine) and not keys & team and not keys & {_key(str(q)) for q in others}
