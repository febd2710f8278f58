"""The commands that answer without embedding passages start without torch, onnxruntime, transformers or streamlit.

Each command runs as a user runs it (``python -X importtime -m core ...`` in a fresh interpreter
over the demo database and knowledge bases); the modules it imported are read from Python's own
import-time report. Start-up times themselves are measured by ``bench/startup_bench.py``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from core.settings import REPO_ROOT

HEAVY = {"torch", "transformers", "sentence_transformers", "streamlit", "onnxruntime", "onnx"}


def imported_modules(importtime_stderr: str) -> set[str]:
    """Top-level package names from ``-X importtime`` lines (``import time: self | cumulative | name``)."""
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and line.count("|") == 2:
            name = line.rsplit("|", 1)[1].strip()
            if name and name != "imported package":
                names.add(name.split(".")[0])
    return names


def run_timed(root: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    env = {
        **os.environ,
        "CASEBOOK_PRESET": "test",
        "CASEBOOK_PATHS__DATA_DIR": str(root / "data"),
        "CASEBOOK_PATHS__INDEX_DIR": str(root / "indexes"),
    }
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "core", *args],
        capture_output=True, text=True, env=env, cwd=REPO_ROOT, timeout=300, check=False,
    )  # fmt: skip
    return proc, imported_modules(proc.stderr)


@pytest.fixture(scope="module")
def scan_id(demo_kb_root: Path) -> str:
    proc, _ = run_timed(demo_kb_root, "scans", "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    return str(json.loads(proc.stdout)[0]["scan_id"])


def test_the_import_report_is_read() -> None:
    sample = "import time: self [us] | cumulative | imported package\nimport time: 5 | 9 |   torch._C\n"
    assert imported_modules(sample) == {"torch"}


@pytest.mark.parametrize(
    ("command", "expect"),
    [
        (["scans"], "scan_"),
        (["similar", "{scan}"], "HC-"),
        (["ask", "{scan}", "What is the diagnosis?", "--extractive"], "AI reading"),
        (["qa", "What is the adult dose of isoniazid?", "--extractive"], "300 mg"),
    ],
)
def test_answering_commands_import_no_heavy_library(
    demo_kb_root: Path, scan_id: str, command: list[str], expect: str
) -> None:
    proc, modules = run_timed(demo_kb_root, *[c.format(scan=scan_id) for c in command])
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert expect in proc.stdout  # it answered, so the search really ran
    assert "sqlalchemy" in modules  # the report was read (every command opens the database)
    assert not HEAVY & modules, sorted(HEAVY & modules)
