"""The judge and LLM-reflection critics over real HTTP (loopback OpenAI-compatible server), and on the default model."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from core.config.selfrag import SelfRagSettings
from core.llm.base import LLM
from core.llm.factory import make_llm
from core.selfrag.critic import JudgeCritic, LLMReflectionCritic, first_token_labels
from core.selfrag.factory import build_pipeline
from core.selfrag.prompts import format_mcq
from core.selfrag.retrieval import KBRetriever, StaticRetriever
from core.selfrag.tokens import (
    FULLY_SUPPORTED,
    IRRELEVANT,
    NO_RETRIEVAL,
    NO_SUPPORT,
    PARTIALLY_SUPPORTED,
    RELEVANT,
    RETRIEVAL,
    UTILITY_TOKENS,
)
from core.selfrag.types import Passage
from core.settings import Settings, load_settings
from tests.conftest import make_settings
from tests.llm_server import FakeLLMServer

DOC = Passage("cap-1", "Outpatient pneumonia in healthy adults: amoxicillin 1 g three times daily.", "CAP therapy")


def _static(passages: list[Passage]) -> KBRetriever:
    """The pipeline's retriever over fixed passages."""
    return KBRetriever(StaticRetriever(passages), ["static"], "hybrid")
OPTIONS = {"A": "Vancomycin", "B": "Amoxicillin", "C": "Meropenem"}
QUESTION = "Which antibiotic is first choice for outpatient pneumonia in a healthy adult?"


def _openai(llm_server: FakeLLMServer, tmp_path: Path, **selfrag: object) -> Settings:
    return make_settings(tmp_path, llm=llm_server.llm_overrides("openai"), selfrag=selfrag)


def _llm(settings: Settings) -> LLM:
    llm = make_llm(settings)
    assert llm is not None
    return llm


def test_first_token_labels_folds_case_and_spaces() -> None:
    top = {"Yes": math.log(0.5), " yes": math.log(0.2), "No": math.log(0.1), "Maybe": math.log(0.1)}
    labels = first_token_labels(top, {"yes": RELEVANT, "no": IRRELEVANT})
    assert math.exp(labels[RELEVANT]) == pytest.approx(0.7)
    assert math.exp(labels[IRRELEVANT]) == pytest.approx(0.1)
    assert first_token_labels({"[": -0.1, "Re": -2.0}, {"yes": RELEVANT}) == {}  # multi-token labels say nothing


def test_judge_reads_yes_no_and_digits_from_logprobs(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    settings = _openai(llm_server, tmp_path, judge_batch="separate")
    critic = JudgeCritic(_llm(settings), settings.selfrag)
    llm_server.reply = "Yes"
    llm_server.token_probs = {"Yes": {"Yes": 0.8, "No": 0.15, "Maybe": 0.05}}
    retrieval = critic.retrieval(QUESTION)  # "can you answer without looking up?" Yes -> [No Retrieval]
    assert math.exp(retrieval[NO_RETRIEVAL]) == pytest.approx(0.8)
    assert math.exp(retrieval[RETRIEVAL]) == pytest.approx(0.15)
    body = llm_server.requests[-1].body
    assert body["max_tokens"] == 1 and body["logprobs"] is True and body["top_logprobs"] == 20
    assert "without looking anything up? Answer Yes or No" in llm_server.requests[-1].text()

    llm_server.reply = "2"
    llm_server.token_probs = {"2": {"2": 0.5, "1": 0.3, "3": 0.1, "4": 0.05}}
    (reading,) = critic.documents(QUESTION, [DOC])
    assert set(reading.relevance) == set()  # "2" answers no Yes/No question: unscored, not guessed
    assert {k: round(math.exp(v), 3) for k, v in reading.support.items()} == {
        FULLY_SUPPORTED: 0.3,
        PARTIALLY_SUPPORTED: 0.5,
        NO_SUPPORT: 0.1,
    }
    assert set(reading.utility) == {UTILITY_TOKENS[0], UTILITY_TOKENS[1], UTILITY_TOKENS[2], UTILITY_TOKENS[3]}
    assert DOC.text in llm_server.requests[-1].text()


def test_llm_reflection_critic_reads_reflection_tokens(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    settings = _openai(llm_server, tmp_path)
    critic = LLMReflectionCritic(_llm(settings), settings.selfrag)
    llm_server.reply = "[Retrieval]"
    llm_server.token_probs = {"[Retrieval]": {"[Retrieval]": math.exp(-0.1), "[No Retrieval]": math.exp(-2.3)}}
    lp = critic.retrieval(QUESTION)
    assert lp[RETRIEVAL] == pytest.approx(-0.1) and lp[NO_RETRIEVAL] == pytest.approx(-2.3)
    request = llm_server.requests[-1]
    assert request.path.endswith("/completions") and not request.path.endswith("chat/completions")
    assert request.body["prompt"].startswith("### Instruction:\n") and request.body["logprobs"] == 20
    critic.documents(QUESTION, [DOC])
    prompts = [r.body["prompt"] for r in llm_server.requests[-3:]]
    assert prompts[0].endswith("</paragraph>") and "[Retrieval]<paragraph>" in prompts[0]
    assert prompts[1].endswith("</paragraph>[Relevant]")
    assert prompts[2].endswith("[Relevant][Fully supported]")


def test_judge_pipeline_end_to_end_over_http(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    # One scripted reply for every request: "B", with Yes/No and digits among its alternatives.
    llm_server.reply = "B"
    llm_server.token_probs = {"B": {"B": 0.5, "Yes": 0.2, "No": 0.05, "5": 0.2, "1": 0.05}}
    settings = _openai(llm_server, tmp_path, judge_batch="separate", retrieval_threshold=0.1)
    pipeline = build_pipeline(settings, llm=make_llm(settings), retriever=_static([DOC]))
    trace = pipeline.run(QUESTION, OPTIONS)
    assert trace.decision is not None and trace.decision.retrieve
    assert trace.decision.p_retrieve == pytest.approx(0.2)  # P(No) / (P(Yes) + P(No)) = 0.05 / 0.25
    (doc,) = trace.documents
    assert doc.kept and doc.relevance == pytest.approx(0.8)
    assert doc.groundedness == pytest.approx(1.0)  # "1" (fully supported) is the only support digit seen
    assert doc.utility == pytest.approx((1.0 * 0.2 - 1.0 * 0.05) / 0.25)
    assert trace.iterations[0].expected_utility == pytest.approx((5 * 0.2 + 1 * 0.05) / 0.25)
    assert len(trace.iterations) == 1  # 4.2 reaches utility_stop
    assert (trace.clean_answer, trace.letter, trace.abstention) == ("B", "B", None)
    generation = next(
        r for r in llm_server.requests if r.body.get("max_tokens") == settings.selfrag.generation_max_tokens
    )
    assert "[Retrieval]<paragraph>CAP therapy" in generation.text() and "C. Meropenem" in generation.text()


def test_combined_judge_reads_three_answers_from_one_request(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    settings = _openai(llm_server, tmp_path, concurrency=3)
    critic = JudgeCritic(_llm(settings), settings.selfrag)
    llm_server.reply = "Yes, 2 4"
    llm_server.token_probs = {
        "Yes,": {"Yes,": 0.7, "No": 0.2, "2": 0.1},  # "Yes," is not a Yes/No token: its top holds "No" and "2"
        " 2": {" 2": 0.6, " 1": 0.3, " 3": 0.1},
        " 4": {" 4": 0.5, " 5": 0.4, " 3": 0.1},
    }
    docs = [DOC, Passage("d2", "second"), Passage("d3", "third")]
    before = len(llm_server.requests)
    readings = critic.documents(QUESTION, docs)
    assert len(llm_server.requests) - before == 3  # one request per document, whatever the concurrency
    assert {r.body["max_tokens"] for r in llm_server.requests[before:]} == {8}
    assert "as three answers separated by spaces" in llm_server.requests[-1].text()
    for reading in readings:
        assert reading.relevance == {}  # the first generated token answered no Yes/No question: unscored
        assert {k: round(math.exp(v), 3) for k, v in reading.support.items()} == {
            FULLY_SUPPORTED: 0.3,
            PARTIALLY_SUPPORTED: 0.6,
            NO_SUPPORT: 0.1,
        }
        assert round(math.exp(reading.utility[UTILITY_TOKENS[4]]), 3) == 0.4
    llm_server.reply = "No 3 1"
    llm_server.token_probs = {"No": {"No": 0.9, "Yes": 0.1}}
    (reading,) = critic.documents(QUESTION, [DOC])
    assert math.exp(reading.relevance[IRRELEVANT]) == pytest.approx(0.9)


def test_relevance_floor_keeps_off_topic_documents_from_the_generator(
    llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    llm_server.reply = "No 3 1"  # every judge answer (and the answer text) reads "No 3 1"
    llm_server.token_probs = {"No": {"No": 0.7, "Yes": 0.3}, " 1": {" 1": 0.6, " 5": 0.4}}
    docs = [DOC, Passage("x", "Paris has the Eiffel Tower.", "Paris")]
    settings = _openai(llm_server, tmp_path, top_k=5, max_iterations=1)
    trace = build_pipeline(settings, llm=make_llm(settings), retriever=_static(docs)).run(QUESTION, OPTIONS, mode="always")
    assert len(trace.documents) == 2 and all(d.relevance == pytest.approx(0.3) for d in trace.documents)
    assert not any(d.kept for d in trace.documents)
    assert "none of 2 judged documents reached relevance 0.6" in trace.retrieval_note  # floor 0.5 + margin 0.1
    generation = next(r for r in llm_server.requests if r.body.get("max_tokens") == settings.selfrag.generation_max_tokens)
    assert "<paragraph>" not in generation.text()  # answered without evidence
    floor0 = _openai(llm_server, tmp_path, top_k=5, max_iterations=1, relevance_floor=0.0)
    trace = build_pipeline(floor0, llm=make_llm(floor0), retriever=_static(docs)).run(QUESTION, OPTIONS, mode="always")
    assert all(d.kept for d in trace.documents) and "2 of 2 judged documents passed" in trace.retrieval_note
    trace = build_pipeline(settings, llm=make_llm(settings), retriever=_static(docs)).run(QUESTION, OPTIONS, mode="no-retrieval")
    assert trace.retrieval_note == "not retrieved: mode no-retrieval"


def test_stage_budgets_end_reranking_and_regeneration_early(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    llm_server.reply = "Yes 1 2"  # the answer's utility is read from its first token: "2" among the alternatives
    llm_server.token_probs = {"Yes": {"Yes": 0.6, "No": 0.1, "2": 0.3}, " 2": {" 2": 0.9, " 3": 0.1}}
    docs = [DOC, Passage("d2", "amoxicillin dose"), Passage("d3", "amoxicillin adults")]
    tiny = 1e-9  # spent before the first backend call: budgets hold in wall time (issue 27)
    settings = _openai(llm_server, tmp_path, top_k=3, budget_rerank_s=tiny, budget_reflection_s=60.0)
    trace = build_pipeline(settings, llm=make_llm(settings), retriever=_static(docs)).run(QUESTION, OPTIONS, mode="always")
    assert trace.documents == []  # none judged in time: none reaches the generator unjudged
    assert any("rerank timed out" in n and "after 0 of 3 documents; 3 dropped unjudged" in n for n in trace.budget_notes)
    assert len(trace.iterations) == 3  # utility 2 < 4 regenerates while the reflection budget lasts
    settings = _openai(llm_server, tmp_path, top_k=3, budget_reflection_s=tiny)
    trace = build_pipeline(settings, llm=make_llm(settings), retriever=_static(docs)).run(QUESTION, OPTIONS, mode="always")
    assert len(trace.documents) == 3 and not trace.iterations  # the first answer had no time: nothing to keep
    assert trace.abstention is not None and (trace.abstention.reason, trace.abstention.stage) == ("timeout", "generation")


def test_timeout_is_its_own_abstention(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    llm_server.reply = "A"
    settings = make_settings(
        tmp_path, llm=llm_server.llm_overrides("openai", timeout_s=0.3, max_retries=0), selfrag={"mode": "no-retrieval"}
    )
    llm_server.fail_slow(1.0)
    trace = build_pipeline(settings, llm=make_llm(settings), retriever=_static([DOC])).run(QUESTION, OPTIONS)
    assert trace.abstention is not None and trace.abstention.reason == "timeout" and trace.letter is None


def test_low_utility_regenerates_and_keeps_the_best(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    llm_server.reply = "C"
    llm_server.token_probs = {"C": {"C": 0.6, "Yes": 0.3, "2": 0.1}}
    settings = _openai(llm_server, tmp_path, max_iterations=3)
    trace = build_pipeline(settings, llm=make_llm(settings), retriever=_static([DOC])).run(QUESTION, OPTIONS)
    assert trace.decision is not None and not trace.decision.retrieve  # P(retrieve) = 0 < 0.3
    assert [it.expected_utility for it in trace.iterations] == [2.0, 2.0, 2.0]
    assert [it.temperature for it in trace.iterations] == [0.0, 0.7, 0.7]
    assert trace.best_iteration == 1 and trace.letter == "C"
    regenerated = [r for r in llm_server.requests if "previous answer was rated 2.0" in r.text()]
    assert len(regenerated) == 2


def test_backend_error_is_an_abstention(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    llm_server.reply = "A"
    settings = _openai(llm_server, tmp_path, mode="no-retrieval")
    pipeline = build_pipeline(settings, llm=make_llm(settings), retriever=_static([DOC]))
    llm_server.fail_status(503, times=3)
    trace = pipeline.run(QUESTION, OPTIONS)
    assert trace.letter is None and trace.abstention is not None and trace.abstention.reason == "backend-error"
    llm_server.fail_status(503, times=3)  # now the critic's retrieval question fails
    trace = pipeline.run(QUESTION, OPTIONS, mode="adaptive")
    assert trace.abstention is not None and trace.abstention.reason == "backend-error" and not trace.iterations


def test_extractive_backend_is_a_clear_config_error(tmp_path: Path) -> None:
    from core.errors import ConfigError

    with pytest.raises(ConfigError, match="needs a language model"):
        build_pipeline(make_settings(tmp_path), llm=None, retriever=_static([DOC]))


@pytest.mark.slow
def test_judge_on_the_default_local_model() -> None:
    from core.llm.models import default_model_path, load_spec, verify

    settings = load_settings("test", llm={"backend": "llamacpp", "max_tokens": 48})
    path = default_model_path(settings)
    if not verify(load_spec(settings.llm.llamacpp.model_name), path):
        pytest.skip(f"default model {path} not assembled (python -m core llm assemble)")
    llm = _llm(settings)
    critic = JudgeCritic(llm, SelfRagSettings())
    off_topic = Passage("x", "The Eiffel Tower is made of wrought iron and stands in Paris.", "Paris")
    query = format_mcq(QUESTION, OPTIONS, instruction=False)
    on_topic, off = critic.documents(query, [DOC, off_topic])
    from core.selfrag import scoring

    rel_on, rel_off = scoring.relevance(on_topic.relevance), scoring.relevance(off.relevance)
    assert rel_on is not None and rel_off is not None and rel_on > 0.5 > rel_off
    sr = settings.model_copy(update={"selfrag": SelfRagSettings(generation_max_tokens=48, max_iterations=1)})
    trace = build_pipeline(sr, llm=llm, retriever=_static([DOC])).run(QUESTION, OPTIONS, mode="always")
    assert trace.decision is not None and trace.documents and trace.iterations
    assert trace.iterations[0].expected_utility is not None
    # The 1.5B model has written "A. Amoxicillin" here (the right drug under the wrong letter): contradictory,
    # so no letter. Never a wrong letter.
    assert trace.letter in {"B", None}
    assert trace.letter == "B" or "Amoxicillin" in trace.clean_answer
