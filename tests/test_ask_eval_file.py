"""``python -m core eval-ask --questions PATH``: an outside-format question file run by path.

A second outside set arrives as a file; a clone must be able to re-run it without code changes.
Runs the real command over the seeded demo data (real SQLite, FAISS, the shipped intent model).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import main
from core.settings import REPO_ROOT


def _args(root: Path, *rest: str) -> list[str]:
    return ["--preset", "test", "--set", f"paths.data_dir={root / 'data'}", "--set", f"paths.index_dir={root / 'indexes'}",
            "--set", f"paths.model_dir={root / 'models'}", "eval-ask", *rest]  # fmt: skip


def test_a_question_file_is_run_by_path(demo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    shipped = json.loads((REPO_ROOT / "tests" / "data" / "ask_outside_questions.json").read_text())
    train = [i for i in shipped["items"] if i["split"] == "train"][:4]
    test = [i for i in shipped["items"] if i["split"] == "test"][:2]
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(shipped | {"items": train + test}))
    main(_args(demo_root, "--questions", str(path), "--split", "train", "--json"))
    out = json.loads(capsys.readouterr().out)
    assert out["questionFile"] == str(path) and list(out["outside"]) == ["train"] and "doctor" not in out
    assert out["outside"]["train"]["questions"] == 4
    assert out["outside"]["train"]["parts"] == sum(len(i["parts"]) for i in train)


def test_a_missing_question_file_is_a_clear_error(demo_root: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(_args(demo_root, "--questions", str(tmp_path / "nope.json"), "--json"))
    err = capsys.readouterr().err
    assert rc == 2 and "No question file at" in err and "outside set's format" in err
