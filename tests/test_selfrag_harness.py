"""Benchmark files, the resumable harness, query augmentations and the two CLI commands (over loopback HTTP)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from core.errors import ConfigError, InvalidInputError
from core.selfrag import cli
from core.selfrag.evaluate import run_eval, summarise
from core.selfrag.factory import build_pipeline, make_retriever, register_corpus
from core.selfrag.mcq import load_benchmark, load_mirage, load_selfbiorag, sample
from core.selfrag.retrieval import QueryProcessor, StaticRetriever
from core.selfrag.types import Document
from tests.conftest import make_settings
from tests.llm_server import FakeLLMServer

MCQ = Path(__file__).parents[1] / "assets" / "mcq"
MIRAGE = MCQ / "mcq_sample_mirage.json"
SELFBIORAG = MCQ / "mcq_sample_selfbiorag.jsonl"


def test_sample_files_load_in_both_formats() -> None:
    mirage = load_benchmark(MIRAGE)
    assert set(mirage) == {"medqa", "mmlu"} and len(mirage["medqa"]) + len(mirage["mmlu"]) == 20
    sbr = load_benchmark(SELFBIORAG)
    assert list(sbr) == ["med_qa"] and len(sbr["med_qa"]) == 10
    for items in (*mirage.values(), *sbr.values()):
        for item in items:
            assert item.answer in item.options and len(item.options) == 4 and item.question
    first = sbr["med_qa"][0]
    assert not first.question.startswith("QUESTION") and "Option" not in first.question
    assert len({i.qid for i in sbr["med_qa"]}) == 10


def test_bad_benchmark_rows_are_rejected() -> None:
    with pytest.raises(InvalidInputError, match="valid answer"):
        load_mirage({"x": {"1": {"question": "q", "options": {"A": "a"}, "answer": "B"}}})
    row = {"name": "x", "instances": {"input": "QUESTION: q\nOption A: yes\nOption B: no\n", "output": "maybe"}}
    with pytest.raises(InvalidInputError, match="no single option"):
        load_selfbiorag([json.dumps(row)])


def test_sample_is_seeded_and_keeps_file_order() -> None:
    items = load_benchmark(MIRAGE)["medqa"]
    a, b = sample(items, 5, 1), sample(items, 5, 1)
    assert a == b and len(a) == 5
    assert [items.index(x) for x in a] == sorted(items.index(x) for x in a)
    assert sample(items, 5, 2) != a
    assert sample(items, 0, 1) == items == sample(items, 99, 1)


def test_query_augmentations_from_yaml(tmp_path: Path) -> None:
    assert QueryProcessor.from_yaml(None).process("TB?").queries == ["TB?"]
    path = tmp_path / "aug.yaml"
    path.write_text(
        "augmentations:\n"
        "  - {type: replace, pattern: '\\bTB\\b', with: tuberculosis}\n"
        "  - {type: suffix, text: ' treatment'}\n"
        "  - {type: expand, terms: {tuberculosis: Mycobacterium tuberculosis infection}}\n"
    )
    processed = QueryProcessor.from_yaml(path).process("latent TB")
    assert processed.queries == [
        "latent tuberculosis treatment",
        "latent Mycobacterium tuberculosis infection treatment",
    ]
    assert processed.applied == ["replace", "suffix", "expand"]
    with pytest.raises(ConfigError, match="augmentation"):
        QueryProcessor([{"type": "translate"}])


def test_named_corpus_plugs_in_through_the_retriever_protocol(tmp_path: Path) -> None:
    docs = [Document("p1", "pubmed abstract")]
    register_corpus("test-corpus", lambda settings: StaticRetriever(docs))
    retriever = make_retriever(make_settings(tmp_path, selfrag={"corpus": "test-corpus"}))
    assert retriever.retrieve("abstract", 1) == [Document("p1", "pubmed abstract", score=1.0)]
    with pytest.raises(ConfigError, match="test-corpus"):
        make_retriever(make_settings(tmp_path, selfrag={"corpus": "nope"}))


def _script(llm_server: FakeLLMServer, letter: str) -> None:
    llm_server.reply = f"{letter}. because"
    llm_server.token_probs = {f"{letter}.": {f"{letter}.": 0.5, "Yes": 0.3, "No": 0.1, "4": 0.1}}


def test_harness_writes_one_record_per_question_and_resumes(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    _script(llm_server, "D")
    settings = make_settings(tmp_path, llm=llm_server.llm_overrides("openai"))
    pipeline = build_pipeline(settings, retriever=StaticRetriever([Document("d", "nitrofurantoin in pregnancy")]))
    items = sample(load_benchmark(MIRAGE)["medqa"], 4, 0)
    out = tmp_path / "run.jsonl"
    summary = run_eval(pipeline, items[:2], out, "adaptive", progress=False)
    assert [s.n for s in summary] == [2]
    requests = len(llm_server.requests)
    (summary,) = run_eval(pipeline, items, out, "adaptive", progress=False)  # resumes: only 2 new questions
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 4 and len({r["qid"] for r in records}) == 4
    assert len(llm_server.requests) == 2 * requests  # the first two questions were not asked again
    for r in records:
        assert r["letter"] == "D" and r["correct"] == (r["gold"] == "D")
        assert r["decision"]["p_retrieve"] == pytest.approx(0.75)
        assert r["documents"][0]["relevance"] == pytest.approx(0.75) and r["iterations"][0]["expected_utility"] == 4.0
        assert set(r) >= {"raw_answer", "clean_answer", "seconds", "query", "abstention"}
    correct = sum(r["correct"] for r in records)
    assert summary.correct == correct and summary.accuracy == correct / 4 and summary.unanswered == 0
    assert summary.stderr == pytest.approx((summary.accuracy * (1 - summary.accuracy) / 4) ** 0.5)
    assert summary.retrieved == 4 and summary.mean_iterations == 1.0


def test_summary_counts_unanswered_as_wrong() -> None:
    base = {"dataset": "d", "mode": "always", "seconds": {}, "decision": None, "iterations": [{}]}
    rows = [base | {"qid": "1", "letter": None, "correct": False}, base | {"qid": "2", "letter": "A", "correct": True}]
    (s,) = summarise(rows)
    assert (s.n, s.correct, s.unanswered, s.accuracy) == (2, 1, 1, 0.5)
    assert s.stderr == pytest.approx(0.5 / 2**0.5)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default=None)
    parser.add_argument("--set", action="append")
    cli.register(parser.add_subparsers(dest="command", required=True))
    return parser


def _sets(llm_server: FakeLLMServer, tmp_path: Path) -> list[str]:
    values = {f"llm.{k}": v for k, v in llm_server.llm_overrides("openai").items()}
    values |= {"paths.index_dir": tmp_path / "idx", "paths.data_dir": tmp_path / "data", "selfrag.progress": False}
    return [arg for k, v in values.items() for arg in ("--set", f"{k}={v}")]


def test_cli_selfrag_prints_the_whole_trace(
    llm_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _script(llm_server, "B")
    options = json.dumps({"A": "Vancomycin", "B": "Amoxicillin"})
    argv = ["--preset", "test", *_sets(llm_server, tmp_path), "selfrag", "Outpatient CAP?", "--options-json", options]
    args = _parser().parse_args([*argv, "--mode", "no-retrieval", "--json"])
    assert args.func(args) == 0
    trace = json.loads(capsys.readouterr().out)
    assert trace["letter"] == "B" and trace["decision"]["reason"] == "mode no-retrieval"
    assert trace["options"] == {"A": "Vancomycin", "B": "Amoxicillin"} and trace["iterations"]
    bad = _parser().parse_args([*argv[:-2], "--options-json", "[1]"])
    with pytest.raises(InvalidInputError, match="options-json"):
        bad.func(bad)


def test_cli_eval_mcq(llm_server: FakeLLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _script(llm_server, "A")
    out = tmp_path / "eval.jsonl"
    argv = [*_sets(llm_server, tmp_path), "eval-mcq", "--benchmark", str(SELFBIORAG), "--dataset", "med_qa"]
    run = ["--limit", "3", "--seed", "1", "--mode", "no-retrieval", "--out", str(out), "--json"]
    args = _parser().parse_args(["--preset", "test", *argv, *run])
    assert args.func(args) == 0
    payload = json.loads(capsys.readouterr().out)
    (result,) = payload["results"]
    assert (result["dataset"], result["mode"], result["n"], result["unanswered"]) == ("med_qa", "no-retrieval", 3, 0)
    assert len(out.read_text().splitlines()) == 3
    args.dataset = "nope"
    with pytest.raises(InvalidInputError, match="nope"):
        args.func(args)


def test_cli_refuses_when_switched_off(tmp_path: Path) -> None:
    args = _parser().parse_args(["--preset", "test", "--set", "selfrag.enabled=false", "selfrag", "q"])
    with pytest.raises(ConfigError, match="switched off"):
        args.func(args)
