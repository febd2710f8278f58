"""Guideline QA end to end on an in-memory retriever: routing, filters, abstention, the LLM path over loopback."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from core.guideline.pipeline import GuidelineQA
from core.guideline.types import QAAbstention, QAAnswer
from core.kb.types import Hit
from core.llm.factory import make_llm
from core.settings import Settings
from tests.conftest import make_settings
from tests.llm_server import FakeLLMServer
from tests.test_guideline_gates import LEXICON, hit

BDQ = ("demoquiline", "bedaquiline fumarate", "bedaquiline")
LABELS = [
    hit("p#dose", "Pretomanid 200 mg once daily with bedaquiline 400 mg and linezolid for 26 weeks.",
        drug_names=("pretomanid",), title="Pretomanid", set_id="pa-1", section_code="34068-7",
        section_title="2 DOSAGE AND ADMINISTRATION"),
    hit("b#dose", "Bedaquiline is given at 400 mg once daily for 2 weeks, then 200 mg three times per week.",
        drug_names=BDQ, title="Demoquiline", set_id="bdq-1", section_code="34068-7",
        section_title="2 DOSAGE AND ADMINISTRATION"),
    hit("b#desc", "Demoquiline tablets contain bedaquiline fumarate equivalent to 100 mg of bedaquiline.",
        drug_names=BDQ, title="Demoquiline", set_id="bdq-1", section_code="34089-3", section_title="11 DESCRIPTION"),
]  # fmt: skip
GUIDES = [
    hit("g#dx", "Send sputum for culture and an Xpert MTB/RIF Ultra test in every person with presumed TB.",
        section_path=("Diagnosis",)),
    hit("g#rx", "Treat drug-susceptible TB with 2 months of HRZE followed by 4 months of HR.",
        section_path=("Treatment",)),
]  # fmt: skip


class ListRetriever:
    """A :class:`~core.kb.Retriever` over fixed hits; records the searches it served."""

    def __init__(self, hits: dict[str, list[Hit]]) -> None:
        self.hits = hits
        self.calls: list[tuple[str, str]] = []

    def search(self, query: str, kb: str, top_k: int, mode: str = "hybrid") -> list[Hit]:
        self.calls.append((query, kb))
        return self.hits.get(kb, [])[:top_k]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


def qa_with(settings: Settings, hits: dict[str, list[Hit]] | None = None, **kw: object) -> GuidelineQA:
    retriever = ListRetriever(hits if hits is not None else {"druglabels": LABELS, "guidelines": GUIDES})
    kw.setdefault("llm", make_llm(settings))  # None for the test preset's extractive backend
    return GuidelineQA(settings, retriever=retriever, lexicon=LEXICON, **kw)  # type: ignore[arg-type]


def test_drug_answer_keeps_only_the_target_label_and_traces_every_step(settings: Settings) -> None:
    qa = qa_with(settings, llm=None)
    result = qa.answer("What is the dose of bedaquiline?")
    assert isinstance(result, QAAnswer) and result.route == "drug" and result.backend == "extractive"
    assert {e.chunk_id for e in result.evidence} == {"b#dose"}  # the dosage section only: the description is off-slot
    assert result.bullets[0].text.startswith("Bedaquiline is given at 400 mg")
    assert result.bullets[0].evidence.source == "Demoquiline (bedaquiline) label — Dosage and Administration"
    assert result.bullets[0].evidence.score == 1.0 and result.patient_summary
    names = [s.name for s in result.trace.steps]
    assert names[:6] == ["route", "slot", "retrieve", "section_boost", "drug_anchor", "confidence"]
    assert "section_only" in names
    anchor = result.trace.step("drug_anchor")
    assert anchor is not None and anchor.detail["rejected"] == ["p#dose"] and "p#dose" in anchor.before
    # one search, of the labels KB only, for the question plus the concept its word "dose" names
    calls = qa.retriever.calls  # type: ignore[attr-defined]
    assert calls == [("What is the dose of bedaquiline? (dosage and administration)", "druglabels")]


def test_out_of_domain_abstains_when_no_loaded_document_answers(settings: Settings) -> None:
    """Scope by coverage (issue 24): the guidelines are searched once; nothing in them answers, so out of domain."""
    qa = qa_with(settings, llm=None)
    result = qa.answer("Management of type 2 diabetes")
    assert isinstance(result, QAAbstention) and result.answer == "ABSTAIN" and result.stage == "router"
    assert "out of domain" in result.reason
    assert qa.retriever.calls == [("Management of type 2 diabetes", "guidelines")]  # type: ignore[attr-defined]
    coverage = result.trace.step("coverage")  # close in cosine, but no chunk mentions diabetes: not covered
    assert coverage is not None and coverage.detail["covered"] is False and coverage.detail["focus_mentioned"] < 1


def test_low_retrieval_confidence_abstains_with_the_threshold_in_the_reason(settings: Settings) -> None:
    weak = [hit("g#weak", "Treat TB for six months with four drugs.", dense_score=0.84)]
    result = qa_with(settings, {"guidelines": weak}, llm=None).answer("Which regimen treats TB?")
    assert isinstance(result, QAAbstention) and result.stage == "confidence"
    assert f"below threshold {settings.guideline.threshold('guidelines'):.2f}" in result.reason
    step = result.trace.step("confidence")
    assert step is not None and step.after == [] and step.detail["passed"] is False


def test_diagnosis_gate_feeds_only_diagnostic_evidence_and_abstains_without_it(settings: Settings) -> None:
    result = qa_with(settings, llm=None).answer("How is pulmonary TB diagnosed?")
    assert isinstance(result, QAAnswer) and [e.chunk_id for e in result.evidence] == ["g#dx"]
    none = qa_with(settings, {"guidelines": [GUIDES[1]]}, llm=None).answer("How is pulmonary TB diagnosed?")
    assert isinstance(none, QAAbstention) and none.stage == "retrieval" and "diagnostic evidence" in none.reason


def _llm_settings(tmp_path: Path, server: FakeLLMServer) -> Settings:
    return make_settings(tmp_path, llm=server.llm_overrides("openai"), guideline={"writer": "llm"})


def test_llm_bullets_pass_the_gates_and_a_hallucinated_one_is_removed(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    llm_server.reply = (
        "- Bedaquiline is given at 400 mg once daily for 2 weeks [1].\n"
        "- Patients with HIV also need carbapenem cover [2]."
    )
    result = qa_with(_llm_settings(tmp_path, llm_server)).answer("What is the dose of bedaquiline?")
    assert isinstance(result, QAAnswer) and result.backend == "openai"
    assert [b.text for b in result.bullets] == ["Bedaquiline is given at 400 mg once daily for 2 weeks."]
    assert result.bullets[0].evidence.chunk_id == "b#dose"
    gate = result.trace.step("entailment_gate")
    assert gate is not None and len(gate.detail["rejected"]) == 1
    assert "high-risk term absent from evidence: carbapenem, hiv" in gate.detail["rejected"][0]["reason"]
    prompt = llm_server.requests[0].text()
    assert "[1] Bedaquiline is given at 400 mg" in prompt and "Pretomanid 200 mg" not in prompt
    # The patient summary came from the same scripted reply: its HIV sentence was dropped by the entity guard.
    guard = result.trace.step("entity_guard")
    assert guard is not None and guard.detail["source"] == "openai" and guard.detail["dropped"]
    assert result.patient_summary and "HIV" not in result.patient_summary


def test_llm_answer_with_only_unsupported_bullets_abstains(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    llm_server.reply = "- Start meropenem and vancomycin for every patient [1].\n- Surgery cures it [5]."
    result = qa_with(_llm_settings(tmp_path, llm_server)).answer("What is the dose of bedaquiline?")
    assert isinstance(result, QAAbstention) and result.stage == "verification"
    generate = result.trace.step("generate")
    assert generate is not None and generate.detail["unresolved_citations"] == [5]


def test_llm_failure_falls_back_to_the_extractive_composer(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    llm_server.fail_status(503, times=10)
    # a ceiling far above three refused requests, so a loaded machine cannot turn the 503 into a timeout
    settings = make_settings(tmp_path, llm=llm_server.llm_overrides("openai", timeout_s=60.0), guideline={"writer": "llm"})
    result = qa_with(settings).answer("What is the dose of bedaquiline?")
    assert isinstance(result, QAAnswer) and result.bullets
    generate = result.trace.step("generate")
    assert generate is not None and generate.detail["backend"] == "extractive"
    assert generate.detail["fallback_from"] == "openai" and "503" in generate.detail["error"]
    # the answer names who wrote it, and a model that failed the bullets is not asked for the patient summary
    assert result.backend == "extractive"
    guard = result.trace.step("entity_guard")
    assert guard is not None and guard.detail["source"] == "glossary" and result.patient_summary
    assert llm_server.requests and not any("Rewrite the clinician notes" in r.text() for r in llm_server.requests)


def test_the_bullets_and_the_patient_summary_share_one_budget(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    """The feature's budget holds for the whole answer: a summary after slow bullets gets only what is left."""
    budget = 6.0
    llm_server.reply = "- Bedaquiline is given at 400 mg once daily for 2 weeks [1]."
    llm_server.fail_slow(3.5, times=1)  # the bullets: slow, within the budget
    llm_server.fail_slow(60.0, times=1)  # the summary: would take far longer than the budget
    settings = make_settings(tmp_path, llm=llm_server.llm_overrides("openai", timeout_s=budget), guideline={"writer": "llm"})
    started = time.monotonic()
    result = qa_with(settings).answer("What is the dose of bedaquiline?")
    took = time.monotonic() - started
    assert isinstance(result, QAAnswer) and result.backend == "openai" and result.bullets
    guard = result.trace.step("entity_guard")
    assert guard is not None and guard.detail["source"] == "glossary"
    assert any("Rewrite the clinician notes" in r.text() for r in llm_server.requests)  # the summary was asked
    # a fresh budget for the summary would end at 3.5 + 6 s; the shared one ends at about 6 s
    assert took < 1.5 * budget, took


def test_an_empty_llm_draft_falls_back_to_quoting_the_evidence_unless_disabled(
    tmp_path: Path, llm_server: FakeLLMServer
) -> None:
    llm_server.reply = "INSUFFICIENT EVIDENCE"
    settings = _llm_settings(tmp_path, llm_server)
    result = qa_with(settings).answer("What is the dose of bedaquiline?")
    assert isinstance(result, QAAnswer) and result.bullets[0].text.startswith("Bedaquiline is given")
    generate = result.trace.step("generate")
    assert generate is not None and generate.detail["fallback_from"] == "openai"
    strict = settings.model_copy(
        update={"guideline": settings.guideline.model_copy(update={"llm_empty_fallback": False})}
    )
    refused = qa_with(strict).answer("What is the dose of bedaquiline?")
    assert isinstance(refused, QAAbstention) and refused.stage == "generation"
