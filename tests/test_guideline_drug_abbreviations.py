"""A TB drug named by its standard abbreviation (INH, RIF, RMP, PZA, EMB) is that drug (issue 24, outside questions).

The outside testers wrote "PZA for a 72 kg adult?", "INH dose for a 13 kg child" and "RIF restarted - how long
before adding back INH?". Before ``guideline.drug_aliases`` listed these abbreviations, such a question named no
drug: it was out of domain, or answered without the drug anchor filter, quoting other drugs' labels (Lipitor and
Humira dose lines in a pyrazinamide weight-band answer). The table below is our own wording, none an outside
question; the Xpert MTB/RIF test name is not the drug.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config.guideline import GuidelineQASettings
from core.guideline.router import route_question, spelled_out
from core.guideline.types import QAAnswer
from core.runtime import Runtime
from tests.conftest import make_settings
from tests.test_guideline_gates import LEXICON

CFG = GuidelineQASettings()
# question -> the drugs it names (generic names of the demo labels)
NAMED = [
    ("INH dose for a 50 kg adult?", {"isoniazid"}),
    ("max daily INH in kids", {"isoniazid"}),
    ("PZA for a 66 kg woman?", {"pyrazinamide"}),
    ("can I give PZA to someone with gout", {"pyrazinamide"}),
    ("EMB and colour vision - how often to check?", {"ethambutol"}),
    ("EMB dosing on dialysis", {"ethambutol"}),
    ("RIF and the oral contraceptive pill - any interaction?", {"rifampin"}),
    ("restarting RMP after drug hepatitis", {"rifampin"}),
    ("INH/RIF/PZA all held for raised ALT - which first?", {"isoniazid", "rifampin", "pyrazinamide"}),
    ("is high-dose INH used when inhA mutations are found?", {"isoniazid"}),
]
NOT_A_DRUG = [
    "What does a positive Xpert MTB/RIF Ultra result mean?",
    "Is MTB/RIF done on every sputum sample?",
    "How is TB spread in households?",
    "How is an embolism treated?",
]


@pytest.mark.parametrize(("question", "drugs"), NAMED)
def test_an_abbreviated_drug_is_named(question: str, drugs: set[str]) -> None:
    decision = route_question(question, LEXICON, CFG)
    assert decision.route != "out_of_domain", decision
    assert set(decision.drugs) == drugs, decision.drugs


@pytest.mark.parametrize("question", NOT_A_DRUG)
def test_a_test_name_or_a_longer_word_names_no_drug(question: str) -> None:
    assert not route_question(question, LEXICON, CFG).drugs


def test_an_abbreviation_is_read_in_the_words_of_the_evidence() -> None:
    assert spelled_out("Who should not take RIF?", ["rifampin"], CFG.drug_aliases) == (
        "Who should not take rifampin rifampicin?"
    )
    assert spelled_out("PZA and INH for a 50 kg adult", ["pyrazinamide", "isoniazid"], CFG.drug_aliases) == (
        "pyrazinamide and isoniazid for a 50 kg adult"
    )
    kept = "Xpert MTB/RIF positive: start RIF?"
    assert spelled_out(kept, ["rifampin"], CFG.drug_aliases) == "Xpert MTB/RIF positive: start rifampin rifampicin?"
    assert spelled_out("inhA mutation and INH", ["isoniazid"], CFG.drug_aliases) == "inhA mutation and isoniazid"


@pytest.fixture(scope="module")
def rt(demo_kb_root: Path) -> Runtime:
    return Runtime(make_settings(demo_kb_root, kb={"progress": False}))


# Answered from the demo knowledge bases (curated), each quoting only the named drug's own label.
ANSWERED = [
    ("INH dose for adults?", "isoniazid"),
    ("PZA adult daily dose?", "pyrazinamide"),
    ("What are the side effects of EMB?", "ethambutol"),
    ("Who should not take RIF?", "rifampin"),
]


@pytest.mark.parametrize(("question", "drug"), ANSWERED)
def test_an_abbreviated_drug_question_quotes_only_that_drugs_label(rt: Runtime, question: str, drug: str) -> None:
    qa = rt.guideline_qa
    result = qa.answer(question)
    assert isinstance(result, QAAnswer), result
    entry = qa.lexicon.lookup(drug)
    assert entry is not None
    labels = [b for b in result.bullets if b.evidence.kb == "druglabels"]
    assert labels, [b.text for b in result.bullets]
    assert all(b.evidence.ref is not None and b.evidence.ref.doc_id in entry.doc_ids for b in labels), [
        (b.evidence.ref.title if b.evidence.ref else None, b.text) for b in labels
    ]
