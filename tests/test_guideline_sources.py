"""One answer per source (issue 24): every bullet names its document, disagreements are shown as one, the
question's population comes first and other groups' evidence is marked, the doctor's choice of sources holds.

The real pipeline over hand-made chunks shaped like the two long demo guidelines (an in-memory retriever).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config.guideline import GuidelineQASettings
from core.errors import CasebookError, InvalidInputError
from core.guideline.preferences import SourceChoice, SourceChoices
from core.guideline.sources import disagreements, owner_of, question_population, values_of
from core.guideline.types import QAAbstention, QAAnswer
from core.kb.types import Hit
from core.settings import Settings
from tests.conftest import make_settings
from tests.test_guideline_pipeline import qa_with

CFG = GuidelineQASettings()
INTL = dict(title="Consolidated Demo Guidelines on Tuberculosis Treatment and Care", organisation="Global Demo TB "
            "Partnership", year=2025, kb="user")  # fmt: skip
NATL = dict(title="National Tuberculosis Programme Manual for Health Workers", organisation="Ministry of Health of "
            "Demoland", year=2024, kb="user.u7")  # fmt: skip


def h(doc: str, n: int, text: str, path: tuple[str, ...], meta: dict[str, object], page: int, cos: float = 0.9) -> Hit:
    return Hit(chunk_id=f"{doc}#c{n}", doc_id=doc, text=text, score=0.03, dense_score=cos, section_path=path,
               section_title=path[-1], page=page, **meta)  # type: ignore[arg-type]  # fmt: skip


ART = [
    h("intl", 1, "Antiretroviral therapy should be started as soon as possible, within 2 weeks of starting TB "
      "treatment, regardless of the CD4 count.", ("4. TB and HIV", "4.2 Timing of antiretroviral therapy"), INTL, 17),
    h("natl", 1, "A person with a CD4 count of 50 cells/mm3 or more starts antiretroviral therapy within 8 weeks of "
      "starting TB treatment.", ("5. TB and HIV", "5.2 When to start ART"), NATL, 18),
]  # fmt: skip
PZA = [
    h("intl", 2, "Weight band: 4-7 kg | Pyrazinamide daily dose (children): 150 mg | Tablets: 1 x 150 mg",
      ("16. Pyrazinamide (Z)", "16.3 Pyrazinamide: dose in children"), INTL, 38, 0.93),
    h("intl", 3, "The recommended dose of pyrazinamide for adults is 25 mg/kg once daily (range 20-30 mg/kg), to a "
      "maximum of 2000 mg daily.", ("16. Pyrazinamide (Z)", "16.2 Pyrazinamide: dose in adults"), INTL, 37, 0.9),
]  # fmt: skip


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


def test_two_guidelines_that_disagree_are_answered_apart_and_the_difference_is_shown(settings: Settings) -> None:
    qa = qa_with(settings, {"guidelines": [], "user": [ART[0]], "user.u7": [ART[1]]}, llm=None)
    result = qa.answer("When should antiretroviral therapy be started in TB and HIV?", spaces=("user.u7", "user"))
    assert isinstance(result, QAAnswer), result
    docs = {b.evidence.ref.doc_id for b in result.bullets if b.evidence.ref}
    assert docs == {"intl", "natl"} and all(b.evidence.ref for b in result.bullets)
    lines = {b.evidence.ref.doc_id: b.evidence.ref.line() for b in result.bullets if b.evidence.ref}
    assert lines["natl"] == ("National Tuberculosis Programme Manual for Health Workers (Ministry of Health of Demoland, "
                             "2024), 5.2 When to start ART, p. 18 [u7]")  # fmt: skip
    assert lines["intl"].endswith("4.2 Timing of antiretroviral therapy, p. 17 [shared]")
    assert len(result.disagreements) == 1
    said = result.disagreements[0].values
    assert "2 weeks" in said[INTL["title"]] and "8 weeks" in said[NATL["title"]]  # side by side, never merged
    assert result.disagreements[0].line().startswith("Sources differ on")


def test_an_adult_dose_question_is_not_answered_from_the_childrens_table_first(settings: Settings) -> None:
    qa = qa_with(settings, {"guidelines": [], "user": PZA}, llm=None)
    result = qa.answer("What is the dose of pyrazinamide for adults with TB?", spaces=("user",), only_spaces=True)
    assert isinstance(result, QAAnswer), result
    assert result.population == "adults"
    assert "25 mg/kg" in result.bullets[0].text and not result.bullets[0].other_population
    child = [b for b in result.bullets if b.population == "children"]
    assert all(b.other_population for b in child)  # shown only as evidence for another group


def test_the_doctors_choice_of_sources_filters_and_orders(settings: Settings) -> None:
    qa = qa_with(settings, {"guidelines": [], "user": [ART[0]], "user.u7": [ART[1]]}, llm=None)
    question = "When should antiretroviral therapy be started in TB and HIV?"
    only = qa.answer(question, spaces=("user.u7", "user"), choice=SourceChoice(doc_ids=("natl",), only=True))
    assert isinstance(only, QAAnswer) and {b.evidence.ref.doc_id for b in only.bullets if b.evidence.ref} == {"natl"}
    assert not only.disagreements
    first = qa.answer(question, spaces=("user.u7", "user"), choice=SourceChoice(doc_ids=("natl",)))
    assert isinstance(first, QAAnswer) and first.bullets[0].evidence.ref and first.bullets[0].evidence.ref.doc_id == "natl"
    none = qa.answer(question, spaces=("user.u7", "user"), choice=SourceChoice(doc_ids=("other",), only=True))
    assert isinstance(none, QAAbstention) and "chosen sources" in none.reason


def test_choices_persist_per_doctor_and_bad_input_is_typed(tmp_path: Path) -> None:
    store = SourceChoices(tmp_path / "choices")
    assert store.get("u1") == SourceChoice()
    store.put("u1", SourceChoice(doc_ids=("natl", "intl"), only=True))
    assert SourceChoices(tmp_path / "choices").get("u1").doc_ids == ("natl", "intl")
    assert store.get("u2") == SourceChoice()
    with pytest.raises(InvalidInputError):
        store.get("../u1")
    (tmp_path / "choices" / "u3.json").write_text("{not json")
    with pytest.raises(CasebookError):
        store.get("u3")


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("within 2 weeks of starting TB treatment", ["2 weeks"]),
        ("within eight weeks, or 4 to 8 weeks in meningitis", ["8 weeks", "4-8 weeks"]),
        ("within two weeks", ["2 weeks"]),
        ("25 mg/kg once daily, to a maximum of 2000 mg daily", ["25 mg/kg", "2000 mg"]),
        ("at least 12 air changes per hour", ["12 air changes per hour"]),
        ("no value here", []),
    ],
)
def test_values_are_read_with_their_units(text: str, values: list[str]) -> None:
    assert values_of(text) == values


@pytest.mark.parametrize(
    ("question", "group"),
    [("Pyrazinamide dose for a child?", "children"), ("Is isoniazid safe in pregnancy?", "pregnancy"),
     ("Ethambutol dose on haemodialysis?", "renal"), ("What is the dose of pyrazinamide?", "adults"),
     ("When to start ART in HIV?", "hiv"), ("Rifampicin in liver disease?", "hepatic"),
     # a specific group before "adults", as for a passage
     ("In an adult living with HIV, when does ART start?", "hiv"), ("Adults with renal failure: ethambutol dose?", "renal"),
     ("Adult pyrazinamide dose?", "adults")],
)  # fmt: skip
def test_the_questions_population(question: str, group: str) -> None:
    assert question_population(question, CFG) == group


def test_owners_and_no_disagreement_without_two_documents() -> None:
    assert [owner_of(k) for k in ("guidelines", "user", "user.u7")] == ["curated", "shared", "u7"]
    assert disagreements([], "dose") == []


DEFAULT = h("natl", 3, "A patient has defaulted when treatment was not started or was interrupted for one month "
            "(30 consecutive days) or more.", ("3. Definitions used for recording and reporting", "3.3 Treatment default"),
            NATL, 16, 0.97)  # fmt: skip


def test_a_question_without_a_disease_word_is_in_scope_when_a_loaded_document_covers_it(settings: Settings) -> None:
    question = "How is treatment default defined?"
    covered = qa_with(settings, {"guidelines": [DEFAULT]}, llm=None).answer(question)
    assert isinstance(covered, QAAnswer), covered
    assert "30 consecutive days" in covered.bullets[0].text and covered.route == "guideline"
    assert covered.trace.step("coverage") is not None  # the router alone called it out of domain
    far = DEFAULT.__class__(**{**DEFAULT.__dict__, "dense_score": 0.5})  # the same text, far from the question
    outside = qa_with(settings, {"guidelines": [far]}, llm=None).answer(question)
    assert isinstance(outside, QAAbstention) and outside.stage == "router"
