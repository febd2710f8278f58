"""`python -m core kb ...` end to end: ingest, search --json, stats, delete, build (demo assets in a tmp dir)."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

import pytest

from core import cli
from core.errors import CasebookError
from core.kb.cli import register

DATA = Path(__file__).parent / "data" / "kb"


def _parser() -> argparse.ArgumentParser:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    if "kb" not in sub.choices:  # until core.cli lists core.kb.cli in _AREAS
        register(sub)
    return parser


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    args = _parser().parse_args(argv)
    try:
        code = args.func(args)
    except CasebookError as exc:
        print(f"error: {exc}\nhint: {exc.hint}", file=sys.stderr)
        code = 2
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def base(tmp_path: Path) -> list[str]:
    return [
        "--preset",
        "test",
        "--set",
        f"paths.index_dir={tmp_path / 'idx'}",
        "--set",
        f"paths.assets_dir={tmp_path / 'assets'}",
    ]


def test_ingest_search_stats_delete(base: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run([*base, "kb", "ingest-spl", str(DATA), "--kb", "druglabels", "--json"], capsys)
    assert code == 0
    report = json.loads(out)
    assert report["docs_added"] == 1 and len(report["skipped"]) == 5
    assert "parse spl" in err  # tqdm progress goes to stderr

    code, out, _ = run(
        [*base, "kb", "search", "lactic acidosis risk factors", "--kb", "druglabels", "--top-k", "2", "--json"], capsys
    )
    rows = json.loads(out)
    assert code == 0 and len(rows) == 2
    assert rows[0]["drug"] == "Glumetza Test" and rows[0]["loinc"] in {"43685-7", "34066-1"}
    assert {"chunk_id", "score", "dense_score", "bm25_score", "section", "drug_names", "text"} <= set(rows[0])

    code, out, _ = run([*base, "kb", "search", "lactic acidosis", "--kb", "druglabels", "--mode", "bm25", "--json"], capsys)
    assert all(r["dense_score"] is None and r["bm25_score"] > 0 for r in json.loads(out))

    code, out, _ = run([*base, "kb", "stats", "--json"], capsys)
    stats = json.loads(out)
    assert stats["druglabels"]["n_docs"] == 1 and stats["guidelines"] == {"exists": False}

    doc_id = stats["druglabels"]["documents"][0]["doc_id"]
    code, out, _ = run([*base, "kb", "delete", doc_id, "--kb", "druglabels", "--json"], capsys)
    assert code == 0 and json.loads(out)["chunks_removed"] == 5
    code, out, err = run([*base, "kb", "delete", doc_id, "--kb", "druglabels"], capsys)
    assert code == 2 and "error: No document" in err and "hint:" in err


def test_only_bad_files_exit_nonzero(base: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run([*base, "kb", "ingest-spl", str(DATA / "xxe.xml"), str(DATA / "garbage.xml"), "--json"], capsys)
    assert code == 1 and len(json.loads(out)["skipped"]) == 2


def test_search_without_index_is_a_clear_error(base: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run([*base, "kb", "search", "x", "--kb", "guidelines"], capsys)
    assert code == 2 and "has no index" in err and "kb build" in err


def test_build_is_idempotent_and_refreshes_on_change(
    base: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    guides = tmp_path / "assets" / "kb" / "guidelines"
    labels = tmp_path / "assets" / "kb" / "labels"
    guides.mkdir(parents=True)
    labels.mkdir(parents=True)
    shutil.copy(DATA / "guideline_small.md", guides)
    shutil.copy(DATA / "spl_metformin.xml", labels)
    code, out, _ = run([*base, "kb", "build", "--json"], capsys)
    assert code == 0 and sorted(r["kb"] for r in json.loads(out)["rebuilt"]) == ["druglabels", "guidelines"]
    code, out, _ = run([*base, "kb", "build", "--json"], capsys)
    assert json.loads(out)["rebuilt"] == []
    shutil.copy(DATA / "guideline_small.html", guides)
    code, out, _ = run([*base, "kb", "build", "--json"], capsys)
    (rebuilt,) = json.loads(out)["rebuilt"]
    assert rebuilt["kb"] == "guidelines" and rebuilt["docs_added"] == 2


def test_demo_fingerprint_tracks_shaping_settings(tmp_path: Path) -> None:
    from core.kb.demo.build import demo_fingerprint
    from core.settings import load_settings

    (tmp_path / "kb" / "guidelines").mkdir(parents=True)
    (tmp_path / "kb" / "guidelines" / "a.md").write_text("# A\n\ntext")
    base = load_settings("test", paths={"assets_dir": tmp_path})
    same = load_settings("test", paths={"assets_dir": tmp_path}, kb={"progress": False, "rrf_k": 10})
    other = load_settings("test", paths={"assets_dir": tmp_path}, kb={"chunk_overlap": 20})
    minilm = load_settings("test", paths={"assets_dir": tmp_path}, embed={"backend": "sentence-transformers"})
    fp = demo_fingerprint(base, "guidelines")
    assert demo_fingerprint(same, "guidelines") == fp  # query-time settings do not shape the index
    assert demo_fingerprint(other, "guidelines") != fp
    assert demo_fingerprint(minilm, "guidelines") != fp
    plugin = load_settings("test", paths={"assets_dir": tmp_path}, embed={"options": {"dim": 64}})
    assert demo_fingerprint(plugin, "guidelines") != fp  # an import-path embedder's options shape its vectors
    (tmp_path / "kb" / "guidelines" / "a.md").write_text("# A\n\nchanged")
    assert demo_fingerprint(base, "guidelines") != fp
