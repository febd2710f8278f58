"""Benchmark files, the resumable harness, query augmentations and the two CLI commands (over loopback HTTP)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigError, InvalidInputError
from core.llm.factory import make_llm
from core.runtime import Runtime
from core.selfrag import cli
from core.selfrag.evaluate import run_eval, summarise, wilson
from core.selfrag.factory import build_pipeline, make_retriever
from core.selfrag.mcq import load_benchmark, load_mirage, load_selfbiorag, sample
from core.selfrag.plot import plot_modes
from core.selfrag.retrieval import KBRetriever, QueryProcessor, StaticRetriever
from core.selfrag.types import Passage
from core.settings import Settings
from tests.conftest import make_settings
from tests.llm_server import FakeLLMServer

MCQ = Path(__file__).parents[1] / "assets" / "mcq"
MIRAGE = MCQ / "mcq_sample_mirage.json"
SELFBIORAG = MCQ / "mcq_sample_selfbiorag.jsonl"



def _static(passages: list[Passage]) -> KBRetriever:
    """The pipeline's retriever over fixed passages."""
    return KBRetriever(StaticRetriever(passages), ["static"], "hybrid")

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


class PubmedCorpus(StaticRetriever):
    """A corpus retriever named by import path in ``selfrag.corpus`` (as a PubMed-style corpus would be)."""

    def __init__(self, settings: Settings) -> None:
        super().__init__([Passage("p1", "pubmed abstract")])


class CliCorpus(StaticRetriever):
    def __init__(self, settings: Settings) -> None:
        super().__init__([Passage("p1", "a test passage")])


def _retriever(settings: Settings) -> KBRetriever:
    rt = Runtime(settings)
    return make_retriever(settings, rt.kb, rt.corpora)


def test_named_corpus_plugs_in_through_the_retriever_protocol(tmp_path: Path) -> None:
    path = f"{__name__}:PubmedCorpus"
    retriever = _retriever(make_settings(tmp_path, selfrag={"corpus": path}))
    assert retriever.retrieve("abstract", 1) == [Passage("p1", "pubmed abstract", source=f"{path}:", score=1.0)]
    with pytest.raises(ConfigError, match="nope"):
        _retriever(make_settings(tmp_path, selfrag={"corpus": "nope"}))
    with pytest.raises(ConfigError, match="has no class Missing"):
        _retriever(make_settings(tmp_path, selfrag={"corpus": f"{__name__}:Missing"}))


def _script(llm_server: FakeLLMServer, letter: str) -> None:
    llm_server.reply = f"{letter}. because"
    # "No" (cannot answer without a reference) 0.3 -> P(retrieve) 0.75; relevance ("Yes") then reads 0.25.
    llm_server.token_probs = {f"{letter}.": {f"{letter}.": 0.5, "No": 0.3, "Yes": 0.1, "4": 0.1}}


def test_harness_writes_one_record_per_question_and_resumes(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    _script(llm_server, "D")
    settings = make_settings(tmp_path, llm=llm_server.llm_overrides("openai"), selfrag={"judge_batch": "separate", "relevance_floor": 0.2, "relevance_margin": 0.0})
    pipeline = build_pipeline(settings, llm=make_llm(settings), retriever=_static([Passage("d", "nitrofurantoin in pregnancy")]))
    items = sample(load_benchmark(MIRAGE)["medqa"], 4, 0)
    out = tmp_path / "run.jsonl"
    first = run_eval(pipeline, items[:2], out, "adaptive", progress=False)
    assert [s.n for s in first] == [2]
    requests = len(llm_server.requests)
    (summary,) = run_eval(pipeline, items, out, "adaptive", progress=False)  # resumes: only 2 new questions
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 4 and len({r["qid"] for r in records}) == 4
    assert len(llm_server.requests) == 2 * requests  # the first two questions were not asked again
    for r in records:
        assert r["letter"] == "D" and r["correct"] == (r["gold"] == "D")
        assert r["decision"]["p_retrieve"] == pytest.approx(0.75)
        assert r["documents"][0]["relevance"] == pytest.approx(0.25) and r["iterations"][0]["expected_utility"] == 4.0
        assert set(r) >= {"raw_answer", "clean_answer", "seconds", "query", "abstention"}
    correct = sum(r["correct"] for r in records)
    assert summary.correct == correct and summary.accuracy == correct / 4 and summary.unanswered == 0
    assert summary.wrong == 4 - correct and {r["outcome"] for r in records} <= {"correct", "wrong"}
    assert (summary.ci_low, summary.ci_high) == pytest.approx(wilson(correct, 4))
    assert summary.retrieved == 4 and summary.mean_iterations == 1.0
    assert all("1 of 1 judged documents passed" in r["retrieval_note"] for r in records)


def test_wilson_interval_matches_hand_computed_values() -> None:
    assert wilson(0, 0) == (0.0, 1.0)
    low, high = wilson(8, 10)  # p 0.8, z 1.96: centre 0.7232, half-width 0.2326
    assert (round(low, 3), round(high, 3)) == (0.490, 0.943)
    low, high = wilson(0, 30)
    assert low == 0.0 and high == pytest.approx(0.1135, abs=1e-4)
    assert wilson(30, 30)[1] == 1.0


def test_summary_separates_outcomes_and_both_accuracies() -> None:
    base: dict[str, Any] = {"dataset": "d", "mode": "always", "seconds": {"generation": 2.0}, "decision": None}
    base["iterations"] = [{}]
    rows = [
        base | {"qid": "1", "letter": None, "correct": False, "abstention": {"reason": "unparseable"}},
        base | {"qid": "2", "letter": "A", "correct": True, "outcome": "correct"},
        base | {"qid": "3", "letter": "B", "correct": False, "outcome": "wrong"},
        base | {"qid": "4", "letter": None, "correct": False, "abstention": {"reason": "timeout"}},
        base | {"qid": "5", "letter": None, "correct": False, "outcome": "backend-error"},
    ]
    (s,) = summarise(rows)
    assert (s.n, s.correct, s.wrong, s.no_letter, s.timeout, s.backend_error) == (5, 1, 1, 1, 1, 1)
    assert s.accuracy == 0.2 and s.accuracy_answered == 0.5 and s.unanswered == 3
    assert s.median_seconds == 2.0 and s.to_json()["unanswered"] == 3


def test_timeouts_are_retried_on_resume_and_modes_share_questions(
    llm_server: FakeLLMServer, tmp_path: Path
) -> None:
    _script(llm_server, "D")
    llm = llm_server.llm_overrides("openai", timeout_s=0.3, max_retries=0)
    settings = make_settings(tmp_path, llm=llm, selfrag={"judge_batch": "separate"})
    pipeline = build_pipeline(settings, llm=make_llm(settings), retriever=_static([Passage("d", "nitrofurantoin in pregnancy")]))
    items = sample(load_benchmark(MIRAGE)["medqa"], 3, 0)
    out = tmp_path / "modes.jsonl"
    llm_server.fail_slow(1.0)  # the first request of the run (question 1, no-retrieval) times out
    summaries = run_eval(pipeline, items, out, ["no-retrieval", "adaptive"], progress=False)
    by_mode = {s.mode: s for s in summaries}
    assert by_mode["no-retrieval"].timeout == 1 and by_mode["no-retrieval"].n == 3 and by_mode["adaptive"].n == 3
    first = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["qid"], r["mode"]) for r in first[:2]] == [(items[0].qid, "no-retrieval"), (items[0].qid, "adaptive")]
    assert first[0]["outcome"] == "timeout" and first[0]["letter"] is None
    requests = len(llm_server.requests)
    summaries = run_eval(pipeline, items, out, ["no-retrieval", "adaptive"], progress=False)
    assert {s.mode: s.timeout for s in summaries} == {"no-retrieval": 0, "adaptive": 0}
    again = [json.loads(line) for line in out.read_text().splitlines()][len(first) :]
    assert [(r["qid"], r["mode"]) for r in again] == [(items[0].qid, "no-retrieval")]  # only the timed-out one
    assert len(llm_server.requests) - requests == 2  # its answer and the answer's utility
    png = plot_modes(summaries, tmp_path / "modes.png", title="test")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default=None)
    parser.add_argument("--set", action="append")
    cli.register(parser.add_subparsers(dest="command", required=True))
    return parser


def _sets(llm_server: FakeLLMServer, tmp_path: Path) -> list[str]:
    values = {f"llm.{k}": v for k, v in llm_server.flat_llm_overrides("openai").items()}
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
    plot = tmp_path / "cmp.png"
    args = _parser().parse_args(["--preset", "test", "--set", f"selfrag.corpus={__name__}:CliCorpus", *argv, *run[:4],
                                 "--modes", "no-retrieval", "always", "--out", str(out), "--plot", str(plot)])  # fmt: skip
    assert args.func(args) == 0
    text = capsys.readouterr().out
    assert "med_qa [always] n=3: correct" in text and "no letter 0, timeout 0" in text and "95% CI" in text
    assert len(out.read_text().splitlines()) == 6 and plot.stat().st_size > 10_000  # 3 new runs, same questions
    args.dataset = "nope"
    with pytest.raises(InvalidInputError, match="nope"):
        args.func(args)


def test_cli_refuses_when_switched_off(tmp_path: Path) -> None:
    args = _parser().parse_args(["--preset", "test", "--set", "selfrag.enabled=false", "selfrag", "q"])
    with pytest.raises(ConfigError, match="switched off"):
        args.func(args)


def test_concurrent_questions_give_the_sequential_records(llm_server: FakeLLMServer, tmp_path: Path) -> None:
    _script(llm_server, "B")
    settings = make_settings(tmp_path, llm=llm_server.llm_overrides("openai"), selfrag={"concurrency": 2})
    pipeline = build_pipeline(settings, llm=make_llm(settings), retriever=_static([Passage("d", "a passage"), Passage("e", "b")]))
    items = load_benchmark(SELFBIORAG)["med_qa"]
    one = run_eval(pipeline, items, tmp_path / "one.jsonl", ["no-retrieval", "adaptive"], progress=False)
    four = run_eval(pipeline, items, tmp_path / "four.jsonl", ["no-retrieval", "adaptive"], progress=False, workers=4)
    assert [s.to_json() | {"seconds_per_question": 0, "median_seconds": 0, "seconds_by_stage": {}} for s in one] == [
        s.to_json() | {"seconds_per_question": 0, "median_seconds": 0, "seconds_by_stage": {}} for s in four
    ]

    def letters(name: str) -> dict[tuple[str, str], Any]:
        rows = [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]
        return {(r["qid"], r["mode"]): (r["letter"], r["outcome"], r["retrieval_note"]) for r in rows}

    assert letters("one.jsonl") == letters("four.jsonl") and len(letters("four.jsonl")) == 20


def test_importing_selfrag_loads_no_knowledge_base_code() -> None:
    # The retrieval seam is core.kb's protocol, but only a search touches core.kb (the KBs, FAISS, bm25s).
    code = "import json, sys, core.selfrag; print(json.dumps(sorted(m for m in sys.modules if m.startswith('core.kb'))))"
    out = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parents[1], capture_output=True,
                         text=True, check=True, timeout=120)  # fmt: skip
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
