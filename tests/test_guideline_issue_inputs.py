"""Guideline QA on the question classes of issue 16's quoted inputs: the asked disease, a result's meaning, the
chunk holding a rare answer in the evidence, a quoted bullet printed once.

Hand-made chunks written like the demo and realistic guidelines, the real composer
and pipeline (in-memory retriever); each test also shows the failure the rule removes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config.guideline import GuidelineQASettings
from core.guideline.pipeline import GuidelineQA
from core.guideline.slots import asked_condition, other_condition, question_slot
from core.guideline.types import QAAbstention, QAAnswer, Trace
from core.settings import Settings
from tests.conftest import make_settings
from tests.test_guideline_gates import LEXICON, hit
from tests.test_guideline_pipeline import ListRetriever
from tests.test_guideline_question_classes import ranked

CFG = GuidelineQASettings()
NO_CONDITIONS = CFG.model_copy(update={"conditions": {}})
CAP_DURATION = hit(
    "cap#duration",
    "Treat for a minimum of five days. Longer courses are needed for: suspected or proven MRSA infection (7 days), "
    "complications such as meningitis, endocarditis or empyema (at least 14 days).",
    title="Empiric Antibiotic Therapy for Community-Acquired Pneumonia", section_title="Duration of Therapy",
    section_path=("Duration of Therapy",),
)  # fmt: skip
TB_DURATION = hit(
    "tb#extrapulmonary",
    "Most extrapulmonary sites are treated for 6 months. Exceptions: TB meningitis: 12 months in total "
    "(2 months of HRZE followed by 10 months of HR), with adjunctive corticosteroids.",
    title="Treatment of Drug-Susceptible Tuberculosis", section_title="Extrapulmonary disease",
    section_path=("Extrapulmonary disease",),
)  # fmt: skip
# One long guideline on both diseases: its title names both, the chapter heading names pneumonia.
CONSOLIDATED_CAP = hit(
    "both#cap",
    "Longer courses are used for complications such as empyema, lung abscess, meningitis or endocarditis, "
    "which are usually treated for 14 days.",
    title="Consolidated Guideline on Tuberculosis and Community-Acquired Pneumonia",
    section_title="12.7 Duration of treatment",
    section_path=("12. Community-acquired pneumonia: treatment", "12.7 Duration of treatment"),
)  # fmt: skip
IGRA = hit(
    "ltbi#igra",
    "A positive IGRA means that the person has been sensitised to M. tuberculosis and probably carries the "
    "infection. A negative IGRA does not exclude active tuberculosis.",
    title="Consolidated Guideline on Tuberculosis", section_title="3.3 Interferon-gamma release assays",
    section_path=("3. Tests for infection", "3.3 Interferon-gamma release assays"),
)  # fmt: skip
IGRA_REPORTING = hit(
    "ltbi#report",
    "IGRAs are blood tests that measure interferon-gamma released by T cells. "
    "Results are reported as positive, negative, or indeterminate/borderline.",
    title="Testing for Latent Tuberculosis Infection", section_title="Interferon-gamma release assays (IGRA)",
    section_path=("Interferon-gamma release assays (IGRA)",),
)  # fmt: skip
PRINCIPLES = hit(
    "ltbi#principles",
    "All current tests measure the immune memory of M. tuberculosis antigens. A negative result does not exclude "
    "infection, and a positive result does not distinguish latent infection from active disease.",
    title="Testing for Latent Tuberculosis Infection", section_title="Interpreting TST and IGRA results",
    section_path=("Interpreting TST and IGRA results",),
)  # fmt: skip


@pytest.mark.parametrize(
    "question",
    [
        "How long should tuberculous meningitis be treated?",
        "How long should TB meningitis be treated?",
        "How long is tubercular meningitis treated for?",
        "Duration of treatment for tuberculous meningits",  # a typo in the site: the disease still decides
    ],
)
def test_a_named_disease_is_answered_only_by_its_own_sentences(question: str) -> None:
    assert asked_condition(question, CFG) == "tuberculosis"
    sentences = ranked(question, [CAP_DURATION, CONSOLIDATED_CAP, TB_DURATION])
    assert sentences and "12 months" in sentences[0]
    assert not any("endocarditis" in s for s in sentences)  # the pneumonia guideline's meningitis line
    # without the disease constraint the pneumonia line on meningitis is quoted for tuberculous meningitis
    if "meningitis" in question:
        plain = ranked(question, [CAP_DURATION, CONSOLIDATED_CAP, TB_DURATION], NO_CONDITIONS)
        assert any("endocarditis" in s for s in plain)


def test_the_nearest_context_naming_a_disease_decides() -> None:
    sentence = "Longer courses are used for complications such as meningitis."
    assert other_condition(sentence, CAP_DURATION, "tuberculosis", CFG)  # the title names pneumonia only
    assert other_condition(sentence, CONSOLIDATED_CAP, "tuberculosis", CFG)  # the chapter heading does
    assert not other_condition(sentence, CONSOLIDATED_CAP, "pneumonia", CFG)
    assert not other_condition("TB meningitis is treated for 12 months.", CAP_DURATION, "tuberculosis", CFG)
    # another disease named inside the asked one's document is a differential, not another disease's answer
    assert not other_condition("Consider tuberculosis when there is no response.", CAP_DURATION, "pneumonia", CFG)
    assert other_condition("Consider pneumonia.", CONSOLIDATED_CAP, "tuberculosis", CFG)  # title names both
    label = hit("inh#dose", "Adults: 300 mg once daily.", drug_names=("isoniazid",), title="Isoniazid")
    assert not other_condition("Adults: 300 mg once daily.", label, "tuberculosis", CFG)  # names no disease
    assert asked_condition("What is the dose of isoniazid?", CFG) is None
    assert asked_condition("Is TB pneumonia contagious?", CFG) is None  # both named: no constraint


@pytest.mark.parametrize(
    ("question", "result"),
    [
        ("What does a positive IGRA mean?", "positive"),
        ("What does a negative TST mean?", "negative"),
        ("what does a positve IGRA mean", "positive"),  # a typo in the result word
        ("What does it mean if my QuantiFERON is positive?", "positive"),
        ("How is a positive tuberculin skin test interpreted?", "positive"),
        ("Does a positive IGRA mean active TB?", "positive"),
    ],
)
def test_result_meaning_questions(question: str, result: str | None) -> None:
    slot = question_slot(question, CFG, ())
    assert slot.name == "result_meaning" and slot.result == result


def test_a_result_meaning_question_quotes_what_the_result_means() -> None:
    sentences = ranked("What does a positive IGRA mean?", [IGRA_REPORTING, PRINCIPLES])
    assert sentences and "a positive result does not distinguish latent infection" in sentences[0]
    assert not any(s.startswith("Results are reported") for s in sentences)  # names the result, says no meaning
    # without the slot the reporting sentence, which shares "positive" and its heading "IGRA", is quoted first
    plain = ranked("What does a positive IGRA mean?", [IGRA_REPORTING, PRINCIPLES], slotted=False)
    assert plain[0].startswith("Results are reported")
    # where the guideline says it in so many words, that sentence; a sentence on another result is no answer
    assert ranked("What does a positive IGRA mean?", [IGRA])[0].startswith("A positive IGRA means")
    assert not any(s.startswith("A negative IGRA") for s in ranked("What does a positive IGRA mean?", [IGRA]))
    assert ranked("What does a negative IGRA mean?", [IGRA])[0].startswith("A negative IGRA does not exclude")
    # the focus is the test, not the result: another test's positive result is no answer about an IGRA
    viral = hit("cap#viral", "A positive viral test does not exclude bacterial co-infection.",
                title="Diagnostic Testing in Pneumonia", section_title="Respiratory viruses")  # fmt: skip
    assert not any("viral" in s for s in ranked("What does a positive IGRA mean?", [viral, IGRA]))
    # an IGRA question is on tuberculosis: the pneumonia guideline's "Interpreting Results" ("inter", as
    # "interferon") is another disease's
    assert asked_condition("What does a positive IGRA mean?", CFG) == "tuberculosis"
    antigen = hit("cap#antigen", "A positive pneumococcal urinary antigen may persist, so it is interpreted in "
                  "adults only.", title="Diagnostic Testing in Community-Acquired Pneumonia",
                  section_title="Interpreting Results", section_path=("Interpreting Results",))  # fmt: skip
    assert not any("antigen" in s for s in ranked("What does a positive IGRA mean?", [antigen, IGRA]))
    assert any("antigen" in s for s in ranked("What does a positive IGRA mean?", [antigen, IGRA], NO_CONDITIONS))


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


def test_a_result_meaning_question_abstains_when_no_sentence_says_it(settings: Settings) -> None:
    retriever = ListRetriever({"guidelines": [IGRA_REPORTING], "druglabels": []})
    qa = GuidelineQA(settings, retriever=retriever, lexicon=LEXICON, llm=None)  # type: ignore[arg-type]
    result = qa.answer("What does a positive IGRA mean?")
    assert isinstance(result, QAAbstention) and result.stage == "generation"
    assert "result meaning" in result.reason


def test_the_command_line_prints_a_quoted_bullet_once() -> None:
    from core.guideline.cli import _render
    from core.guideline.types import Bullet, Snippet

    quoted = "TB meningitis: 12 months in total."
    snippet = Snippet(text=quoted, score=1.0, source="TB guideline — Extrapulmonary disease", kb="guidelines",
                      chunk_id="tb#x", demo=True)  # fmt: skip
    drafted = Snippet(text="Treat TB meningitis for 12 months in total.", score=0.6, source=snippet.source,
                      kb="guidelines", chunk_id="tb#x")  # fmt: skip
    answer = QAAnswer(question="q", route="guideline", bullets=[Bullet(text=quoted, evidence=snippet, overlap=1.0),
                      Bullet(text="12 months for TB meningitis.", evidence=drafted, overlap=1.0)], evidence=[],
                      backend="extractive", confidence=0.9, trace=Trace())  # fmt: skip
    text = _render(answer)
    assert text.count(quoted) == 1 and "[demo]" in text  # the extractive bullet is its own evidence: shown once
    assert "Treat TB meningitis for 12 months in total." in text  # a drafted bullet still shows its evidence


def test_the_chunk_that_says_what_a_result_means_is_in_the_evidence(settings: Settings) -> None:
    general = [
        hit(f"ltbi#g{i}", f"IGRAs are blood tests used in setting {i}; results are reported as positive or negative.",
            title="Testing for Latent Tuberculosis Infection", section_title=f"IGRA {i}", section_path=(f"IGRA {i}",))
        for i in range(4)
    ]  # fmt: skip
    retriever = ListRetriever({"guidelines": [*general, PRINCIPLES], "druglabels": []})
    qa = GuidelineQA(settings, retriever=retriever, lexicon=LEXICON, llm=None)  # type: ignore[arg-type]
    result = qa.answer("What does a positive IGRA mean?")
    assert isinstance(result, QAAnswer) and "does not distinguish" in result.bullets[0].text
    # ranked fifth, the chunk is outside the four evidence chunks of any other question
    other = qa.answer("Which blood tests are IGRAs?")
    assert "ltbi#principles" not in {e.chunk_id for e in getattr(other, "evidence", [])}


def test_a_sentence_saying_how_it_spreads_answers_in_its_own_words() -> None:
    spreads = hit("both#spread", "Tuberculosis is caused by Mycobacterium tuberculosis and spreads from person to "
                  "person through the air.", title="Consolidated Guideline", section_title="2.1 How it passes",
                  section_path=("2.1 How it passes",))  # fmt: skip
    assert ranked("How is TB transmitted?", [spreads])[0].startswith("Tuberculosis is caused")
    # without the slot it shares no word with the question ("TB", "transmitted") and is never quoted
    assert ranked("How is TB transmitted?", [spreads], slotted=False) == []
