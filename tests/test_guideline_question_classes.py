"""Guideline QA question classes: transmission, how-is-it-tested, verb forms, the asked group's section.

Hand-made guideline chunks and the real composer and pipeline (in-memory retriever);
each test also shows the failure the rule removes.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from core.config.guideline import GuidelineQASettings
from core.guideline.compose import rank_sentences
from core.guideline.constraints import Candidate, section_markers
from core.guideline.pipeline import GuidelineQA
from core.guideline.router import expand_query
from core.guideline.slots import question_slot, word_prefix
from core.guideline.types import QAAnswer
from core.kb.types import Hit
from core.settings import Settings
from tests.conftest import make_settings
from tests.test_guideline_gates import LEXICON, hit
from tests.test_guideline_pipeline import ListRetriever

CFG = GuidelineQASettings()
OVERVIEW = hit(
    "tb#overview",
    "Tuberculosis infection describes a person who carries an immune response to TB antigens. "
    "Such a person has no symptoms and cannot transmit the organism to others. "
    "Resistant strains arise from inadequate treatment or are transmitted directly from person to person.",
    title="TB overview", section_title="Overview", section_path=("Overview",),
)  # fmt: skip
TESTS = hit(
    "tb#tests",
    "No test can directly show living bacilli in a latently infected person. "
    "Two kinds of test are used: the tuberculin skin test (TST) and interferon-gamma release assays (IGRA).",
    title="Latent TB", section_title="Tests for TB Infection", section_path=("Tests for TB Infection",),
)  # fmt: skip


def ranked(question: str, chunks: list[Hit], cfg: GuidelineQASettings = CFG, slotted: bool = True) -> list[str]:
    slot = question_slot(question, cfg, ()) if slotted else None
    return [s.text for s in rank_sentences(question, [Candidate(h, 0.8, 0.9) for h in chunks], cfg, slot)]


@pytest.mark.parametrize(
    ("question", "slot"),
    [
        ("How is TB transmitted?", "transmission"),
        ("How does tuberculosis spread?", "transmission"),
        ("Can people with latent TB infection spread it?", "transmission"),
        ("Is pulmonary TB contagious?", "transmission"),
        ("How do you catch tuberculosis?", "transmission"),
        ("How is latent TB infection tested?", "test"),
        ("How is TB diagnosed in people living with HIV?", "test"),
        ("Which tests confirm pneumonia?", "test"),
        ("How long should tuberculous meningitis be treated?", "duration"),  # the earlier slots keep their place
        ("What is the dose of isoniazid?", "dose"),
    ],
)
def test_question_slots(question: str, slot: str) -> None:
    assert question_slot(question, CFG, ()).name == slot


def test_verb_forms_share_a_prefix() -> None:
    assert word_prefix("tested", 5) == word_prefix("testing", 5) == word_prefix("test", 5) == "test"
    assert word_prefix("diagnosed", 5) == word_prefix("diagnosis", 5) == "diagn"
    assert word_prefix("used", 5) == "used" and word_prefix("bring", 5) == "bring"  # too short to cut


def test_a_transmission_question_quotes_how_it_passes_and_drops_the_rest() -> None:
    sentences = ranked("How is TB transmitted?", [OVERVIEW])
    assert sentences and all("transmit" in s for s in sentences)
    assert not any(s.startswith("Tuberculosis infection describes") for s in sentences)
    # without the slot the definition, which shares the most words with "TB", is quoted too
    assert any(s.startswith("Tuberculosis infection describes") for s in ranked("How is TB transmitted?", [OVERVIEW],
                                                                                  slotted=False))  # fmt: skip


def test_a_how_is_it_tested_question_quotes_the_named_tests_first() -> None:
    assert "IGRA" in ranked("How is latent TB infection tested?", [TESTS])[0]
    assert "IGRA" in ranked("How do you test for latent TB?", [TESTS])[0]
    # "tested" is compared as "test" (a plain prefix made it "teste"), and the document title may name the
    # focus: the IGRA sentence says "latent" nowhere, its heading is "Tests for TB Infection", its title "Latent TB"
    slot = question_slot("How is latent TB infection tested?", CFG, ())
    assert slot.focus == frozenset({"laten", "test"})
    untitled = dataclasses.replace(TESTS, title="TB guideline")
    assert not any("IGRA" in s for s in ranked("How do you test for latent TB?", [untitled]))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


def test_the_section_written_for_the_asked_group_is_in_the_evidence(settings: Settings) -> None:
    general = [
        hit(f"dx#g{i}", f"Sputum smear microscopy and Xpert are used to diagnose TB in setting {i}; people living "
            f"with HIV are screened first.", title="TB diagnosis", section_title=f"Diagnosis {i}",
            section_path=(f"Diagnosis {i}",), dense_score=0.95)
        for i in range(4)
    ]  # fmt: skip
    lam = hit("dx#lam", "The urine LF-LAM assay helps diagnose TB when the CD4 count is low.", title="TB diagnosis",
              section_title="Urine LF-LAM in People Living with HIV", section_path=("Urine LF-LAM in People Living "
              "with HIV",), dense_score=0.95)  # fmt: skip
    retriever = ListRetriever({"guidelines": [*general, lam]})
    qa = GuidelineQA(settings, retriever=retriever, lexicon=LEXICON, llm=None)  # type: ignore[arg-type]
    result = qa.answer("How is TB diagnosed in people living with HIV?")
    assert isinstance(result, QAAnswer)
    assert "dx#lam" in {e.chunk_id for e in result.evidence}
    off = settings.model_copy(update={"guideline": settings.guideline.model_copy(
        update={"population_evidence_weight": 0.0})})  # fmt: skip
    plain = GuidelineQA(off, retriever=retriever, lexicon=LEXICON, llm=None).answer(  # type: ignore[arg-type]
        "How is TB diagnosed in people living with HIV?")
    assert isinstance(plain, QAAnswer) and "dx#lam" not in {e.chunk_id for e in plain.evidence}


@pytest.mark.parametrize(
    ("question", "slot"),
    [
        ("What is latent tuberculosis?", "definition"),
        ("What is LTBI?", "definition"),
        ("How is severe CAP defined?", "definition"),
        ("What are the side effects of ethambutol?", None),  # a term "of" something is no definition
        ("What is the dose of pretomanid?", "dose"),
        ("What is the BPaLM regimen?", "regimen"),
    ],
)
def test_definition_questions(question: str, slot: str | None) -> None:
    assert question_slot(question, CFG, ()).name == slot


def test_a_definition_carries_the_sentence_that_goes_on_from_it() -> None:
    first = ranked("What is tuberculosis infection?", [OVERVIEW])[0]
    assert first.startswith("Tuberculosis infection describes") and first.endswith("cannot transmit the organism to others.")
    # without the slot the definition stands alone and "Such a person ..." is a separate, lower sentence
    plain = ranked("What is tuberculosis infection?", [OVERVIEW], slotted=False)
    assert "no symptoms" not in plain[0]


def test_regimen_codes_and_eligibility_words_are_searched_by_their_names() -> None:
    query = expand_query("Who cannot receive BPaLM?", CFG)
    assert "bedaquiline, pretomanid, linezolid and moxifloxacin" in query and "eligibility and exclusions" in query
    assert {"eligib", "exclusion"} <= set(section_markers(query, CFG))  # "Exclusions from BPaLM/BPaL" is boosted
    assert expand_query("Who is not eligible for the 4-month HPMZ regimen?", CFG).count("rifapentine") == 1
