"""Self-RAG's stage budgets hold in wall time, whatever one backend call does (issue 27 item 7).

Every critic and generator call goes through :mod:`core.llm.call` under what its stage has left.
The backend is the loopback OpenAI-compatible server; exactly one request of a question misbehaves
(``after=n``): ``silent`` says nothing for 30 s (a long prompt read on a loaded machine), ``drip``
writes its whole reply a few bytes at a time over 30 s, so every read arrives well within the HTTP
timeout and only a wall-time deadline ends the call (before issue 27's fix a reply dripping over 8 s
held a 1.5 s reflection stage for 8.0 s). For each case: (a) the question ends within the sum of the
stage budgets + 2 s, (b) each stage within its budget + 2 s (the trace's timings), (c) an answer that
exists when a later stage runs out is kept. The key case runs again under a 2-process CPU burner.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.llm.base import LLM
from core.llm.factory import make_llm
from core.selfrag.factory import build_pipeline
from core.selfrag.mcq import MCQItem, load_benchmark
from core.selfrag.retrieval import KBRetriever, StaticRetriever
from core.selfrag.types import SelfRagTrace
from core.settings import Settings
from tests.conftest import make_settings
from tests.conftest_llm import cpu_burner
from tests.llm_server import FakeLLMServer
from tests.test_selfrag_degrade import DOCS, OPTIONS, QUESTION  # the same three passages and question

BUDGET = 1.5  # each of the three stage budgets
BOUND = 2.0  # the margin: a call ends within its budget + 2 s
HANG = 30.0  # the misbehaving request: far past every budget and the HTTP timeout below
# Requests in order (adaptive, combined judge, 3 documents, utility 2 < utility_stop regenerates once):
AT = {"decision": 0, "document 2": 2, "generation 1": 4, "utility 1": 5, "generation 2": 6, "utility 2": 7}
CASES = [
    # (request that misbehaves, how, the note it leaves, the question keeps an answer)
    ("decision", "silent", "decision timed out", True),
    ("decision", "drip", "decision timed out", True),
    ("document 2", "silent", "after 1 of 3 documents; 2 dropped unjudged", True),
    ("document 2", "drip", "after 1 of 3 documents; 2 dropped unjudged", True),
    ("generation 1", "silent", None, False),  # nothing to keep: the only honest loss
    ("generation 1", "drip", None, False),
    ("utility 1", "silent", "utility reflection of answer 1 timed out", True),
    ("utility 1", "drip", "utility reflection of answer 1 timed out", True),
    ("generation 2", "silent", "regeneration 2 timed out", True),
    ("generation 2", "drip", "regeneration 2 timed out", True),
    ("utility 2", "drip", "utility reflection of answer 2 timed out", True),
]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeLLMServer]:
    """One loopback server for the module (a request abandoned at its deadline may still be dripping)."""
    with FakeLLMServer() as fake:
        yield fake


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory, server: FakeLLMServer) -> Settings:
    """Three stage budgets of 1.5 s; the HTTP timeout (60 s) and ``llm.budget_selfrag_s`` cannot end a call first."""
    budgets = {"budget_decision_s": BUDGET, "budget_rerank_s": BUDGET, "budget_reflection_s": BUDGET}
    return make_settings(
        tmp_path_factory.mktemp("walltime"),
        llm=server.llm_overrides("openai", timeout_s=60.0, max_retries=0, budget_selfrag_s=60.0),
        selfrag=budgets | {"top_k": 3, "max_iterations": 2, "retrieval_threshold": 0.01},
    )


@pytest.fixture(scope="module")
def llm(server: FakeLLMServer, settings: Settings) -> LLM:
    """The openai backend, warmed by one request (its SDK and the egress filter load lazily: seconds here)."""
    model = make_llm(settings)
    assert model is not None
    model.chat([{"role": "user", "content": f"### Instruction: {QUESTION} A. Vancomycin"}], max_tokens=1)
    return model


def _ask(
    server: FakeLLMServer, settings: Settings, llm: LLM, at: str, how: str, item: MCQItem | None = None
) -> tuple[SelfRagTrace, float]:
    """One question (``item``, else the pneumonia one) with request ``AT[at]`` silent or dripping; trace and wall time."""
    answer = item.options[item.answer] if item else "Amoxicillin"
    server.reply = f"Yes 2 {answer}"  # judge: relevant, support 2; answer: the right option by its text
    # "Yes" 0.9: relevance 0.95 (kept); "can you answer without looking up" yes, P(retrieve) 0.05 > 0.01;
    # the answer's utility reads the digit 2 (< utility_stop 4: one regeneration)
    server.token_probs = {"Yes": {"Yes": 0.9, "No": 0.05, "2": 0.05}, " 2": {" 2": 1.0}}
    server.requests.clear()
    server._faults.clear()  # a fault an earlier failed case never reached must not move to this one
    if how == "silent":
        server.fail_slow(HANG, after=AT[at])
    else:
        server.fail_drip(HANG, after=AT[at])
    pipeline = build_pipeline(settings, llm=llm, retriever=KBRetriever(StaticRetriever(DOCS), ["static"], "hybrid"))
    started = time.monotonic()
    trace = pipeline.run(item.question if item else QUESTION, item.options if item else OPTIONS, mode="adaptive")
    took = time.monotonic() - started
    assert not server._faults, "the misbehaving request was never sent"
    return trace, took


def _check_bounds(trace: SelfRagTrace, took: float) -> None:
    s = trace.seconds
    assert took <= 3 * BUDGET + BOUND, (took, s)  # (a) the whole question
    assert s["decision"] <= BUDGET + BOUND, s  # (b) each stage
    assert s.get("rerank", 0.0) <= BUDGET + BOUND, s
    assert s.get("generation", 0.0) + s.get("reflection", 0.0) <= BUDGET + BOUND, s  # one budget for both


@pytest.mark.parametrize(("at", "how", "note", "answered"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_one_stage_running_out_keeps_the_question(
    server: FakeLLMServer, settings: Settings, llm: LLM, at: str, how: str, note: str | None, answered: bool
) -> None:
    trace, took = _ask(server, settings, llm, at, how)
    _check_bounds(trace, took)
    if not answered:  # the first answer had no time: an honest abstention, never a guess
        assert trace.abstention is not None and (trace.abstention.reason, trace.abstention.stage) == (
            "timeout",
            "generation",
        )
        assert trace.letter is None and not trace.iterations
        return
    assert trace.abstention is None and trace.letter == "B", (trace.abstention, trace.budget_notes)  # (c)
    assert note is not None and any(note in n for n in trace.budget_notes), trace.budget_notes
    assert trace.decision is not None and trace.decision.retrieve  # a decision that timed out retrieves too
    if at == "document 2":  # kept: the document judged in time; the unjudged two never reach the generator
        assert [(d.document.doc_id, d.kept) for d in trace.documents] == [("cap-1", True)]
        generation = next(r for r in server.requests if len(r.body["messages"]) == 1)  # no judge system prompt
        assert "amoxicillin 1 g" in generation.text()
        assert "Doxycycline" not in generation.text() and "Macrolides" not in generation.text()
    if at in ("generation 2", "utility 2"):
        assert trace.best_iteration == 1  # the best answer so far, not the one cut short or unscored


@pytest.mark.parametrize("at", ["utility 1", "generation 2"])
def test_under_a_cpu_burner_the_budgets_hold_and_the_answer_is_kept(
    server: FakeLLMServer, settings: Settings, llm: LLM, at: str
) -> None:
    """The key cases with both cores spun by scripts/cpu_burner.py: the bound is wall time, so load cannot stretch it."""
    with cpu_burner(procs=2):
        trace, took = _ask(server, settings, llm, at, "drip")
    _check_bounds(trace, took)
    assert trace.abstention is None and trace.letter == "B" and trace.best_iteration == 1


MCQ = Path(__file__).parents[1] / "assets" / "mcq"


@pytest.mark.slow  # 30 questions, each waiting out one stage budget: about 60 s on 2 busy cores
def test_thirty_benchmark_questions_lose_none_to_a_single_stage_timeout(
    server: FakeLLMServer, settings: Settings, llm: LLM
) -> None:
    """The 30 demo questions in the MIRAGE and Self-BioRAG formats, each with one request silent or dripping.

    The stage is drawn from every one except the first generation (with no answer yet, its timeout is
    the one honest abstention, checked above); the answer the model gave must survive it.
    """
    files = ("mcq_sample_mirage.json", "mcq_sample_selfbiorag.jsonl")
    items = [item for name in files for group in load_benchmark(MCQ / name).values() for item in group]
    assert len(items) == 30
    rng = random.Random(27)
    stages = [name for name in AT if name != "generation 1"]
    lost, slowest, drawn = [], 0.0, set()
    for item in items:
        at, how = rng.choice(stages), rng.choice(["silent", "drip"])
        drawn.add((at, how))
        trace, took = _ask(server, settings, llm, at, how, item)
        _check_bounds(trace, took)
        slowest = max(slowest, took)
        if trace.abstention is not None or trace.letter != item.answer:
            lost.append((item.qid, at, how, trace.abstention, trace.letter))
        assert len(trace.budget_notes) == 1, (item.qid, at, trace.budget_notes)  # the one slow stage, on record
    assert lost == [], lost
    assert {at for at, _ in drawn} == set(stages), drawn
    print(f"30 questions, 0 lost, slowest {slowest:.1f} s against a bound of {3 * BUDGET + BOUND:g} s")
