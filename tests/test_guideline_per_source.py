"""Every document that covers the point reaches the evidence (issue 24, disagreements shown as one).

Real parts: the router's diagnosis intent over the shipped vocabularies, and the evidence pick
(:func:`core.guideline.sources.by_document`) over real candidates.
"""

from __future__ import annotations

import pytest

from core.config.guideline import GuidelineQASettings
from core.guideline.constraints import Candidate
from core.guideline.router import route_question
from core.guideline.sources import by_document, disagreements
from core.guideline.types import Bullet, Snippet, SourceRef
from tests.test_guideline_gates import LEXICON, cand, hit

CFG = GuidelineQASettings()


@pytest.mark.parametrize(
    ("question", "diagnosis"),
    [
        # a diagnosis word that describes the patient asks for no diagnosis: the treatment passages answer
        ("In an adult with newly diagnosed pulmonary TB and HIV, when should antiretroviral therapy start?", False),
        ("A child recently diagnosed with TB meningitis: which regimen?", False),
        ("Patient diagnosed with TB in pregnancy: is streptomycin allowed?", False),
        ("How is TB diagnosed in people living with HIV?", True),
        # a diagnosis task keeps the gate
        ("How is pulmonary TB diagnosed in children?", True),
        ("Which test confirms latent TB infection?", True),
        ("How often should health workers on TB wards be screened?", True),
        ("Newly diagnosed TB: which test confirms rifampicin resistance?", True),
    ],
)
def test_a_diagnosis_word_describing_the_patient_is_no_diagnosis_task(question: str, diagnosis: bool) -> None:
    assert route_question(question, LEXICON, CFG).diagnosis is diagnosis


def test_a_screening_passage_is_diagnostic_evidence_for_a_screening_question() -> None:
    assert any("staff on tb wards are screened every six months".find(k) >= 0 for k in CFG.diagnosis_keywords)


INTL_TIMING = hit("intl#c17", "Start antiretroviral therapy within 2 weeks of starting TB treatment.")
INTL_EXAMPLE = hit("intl#c296", "Worked example: a 60 kg adult with TB and HIV.")
INTL_OTHER = hit("intl#c19", "Give cotrimoxazole preventive therapy to people living with HIV.")
NATL_EXAMPLE = hit("natl#c292", "Worked example: a 60 kg adult with TB and HIV gets four tablets.")
NATL_TIMING = hit("natl#c20", "Start ART within eight weeks; within two weeks when the CD4 count is below 50.")
NATL_OFF = hit("natl#c99", "Tablets are stored below 25 degrees.")
RANKED = [cand(h) for h in (INTL_TIMING, NATL_EXAMPLE, INTL_EXAMPLE, INTL_OTHER, NATL_OFF, NATL_TIMING)]


def _ids(cands: list[Candidate]) -> list[str]:
    return [c.hit.chunk_id for c in cands]


def test_each_other_document_keeps_its_answer_passage_beside_a_worked_example_that_ranks_above_it() -> None:
    def covers(c: object) -> bool:
        return "start" in c.hit.text.lower()  # type: ignore[attr-defined]

    before = by_document(RANKED, 4, lambda c: True, 4)
    assert "natl#c20" not in _ids(before)  # one chunk per other document: the national timing never reached
    after = by_document(RANKED, 4, lambda c: True, 4, per_doc=2, covers=covers)
    assert _ids(after) == ["intl#c17", "natl#c292", "intl#c296", "intl#c19", "natl#c20"]


def test_a_further_chunk_must_cover_the_question_pass_its_floor_and_the_best_document_gets_none() -> None:
    after = by_document(RANKED, 2, lambda c: c.hit.chunk_id != "natl#c20", 4, per_doc=2, covers=lambda c: True)
    assert "natl#c20" not in _ids(after)  # below its floor
    assert _ids(after).count("natl#c99") == 1 and "intl#c296" not in _ids(after)  # the best document keeps its top n
    none = by_document(RANKED, 2, lambda c: True, 4, per_doc=2, covers=lambda c: False)
    assert _ids(none) == ["intl#c17", "natl#c292"]


# --- agreement traps: what is no difference ----------------------------------------------------------------------


def said_under(doc: str, text: str, section: str) -> Bullet:
    ref = SourceRef(doc_id=doc, title=doc, kb="user.u7", section=section)
    return Bullet(text=text, evidence=Snippet(text=text, score=1.0, source=doc, kb="user.u7", chunk_id=f"{doc}#1",
                                              ref=ref), overlap=1.0)  # fmt: skip


@pytest.mark.parametrize(
    ("intl", "natl"),
    [
        # a dose of a drug the lexicon does not know compares only under the same heading
        (("Adults 30 kg or more: 900 mg once weekly for 12 weeks.", "10.3 Three months of weekly rifapentine"),
         ("Weight 30 kg or more: 40 mg every other week.", "2.1 Rheumatoid arthritis")),
        (("Give dolutegravir 50 mg twice daily with rifampicin.", "12.2 Recommendations on TB and HIV"),
         ("Give cotrimoxazole 960 mg once daily.", "5.3 Cotrimoxazole")),
        # a row's approximate mg/kg column restates its fixed dose, even when the chunk cut its weight band off
        (("Rifampicin daily dose (children): 300 mg | Tablets: 4 x 75 mg | Approximate mg/kg: 14 mg/kg", "81.3 Doses"),
         ("Rifampicin for children: 15 mg/kg daily (range 10-20 mg/kg).", "81.3 Doses")),
    ],
)  # fmt: skip
def test_no_invented_disagreement(intl: tuple[str, str], natl: tuple[str, str]) -> None:
    from tests.test_guideline_doses import KEYS

    assert disagreements([said_under("intl", *intl), said_under("natl", *natl)], "dose", KEYS, CFG) == []


def test_the_same_drugs_doses_still_differ_and_an_unknown_drug_under_the_same_heading() -> None:
    from tests.test_guideline_doses import KEYS

    [d] = disagreements([said_under("intl", "Isoniazid for children: 7-15 mg/kg daily.", "1"),
                         said_under("natl", "Isoniazid for children: 10-15 mg/kg daily.", "2")], "dose", KEYS, CFG)  # fmt: skip
    assert d.values == {"intl": ["7-15 mg/kg"], "natl": ["10-15 mg/kg"]}
    [d] = disagreements([said_under("intl", "Pyridoxine for adults: 25 mg daily.", "29.2 Pyridoxine: dose in adults"),
                         said_under("natl", "Pyridoxine for adults: 10 mg daily.", "31.2 Pyridoxine: dose in adults")],
                        "dose", KEYS, CFG)  # fmt: skip
    assert d.values == {"intl": ["25 mg"], "natl": ["10 mg"]} and "pyridoxine: dose in adults" in d.topic
