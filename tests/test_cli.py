"""The command line, run as a user runs it: a subprocess against the demo database."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from core.runtime import Runtime
from core.settings import REPO_ROOT


def _run(demo_root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "CASEBOOK_PRESET": "test",
        "CASEBOOK_PATHS__DATA_DIR": str(demo_root / "data"),
        "CASEBOOK_PATHS__INDEX_DIR": str(demo_root / "indexes"),
    }
    return subprocess.run(
        [sys.executable, "-m", "core", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=300,
        check=False,
    )


def test_scans_similar_and_bundle_answer_in_json(demo_root: Path, demo: Runtime) -> None:
    scans = json.loads(_run(demo_root, "scans", "--json").stdout)
    assert {"scan_id", "patient", "anatomy", "diagnosis"} <= set(scans[0])
    ptx = next(s["scan_id"] for s in scans if s["patient"] == "imran.khan")
    similar = json.loads(_run(demo_root, "similar", ptx, "--top-k", "3", "--json").stdout)
    assert len(similar["cases"]) == 3 and similar["cases"][0]["severity"] == "critical"
    bundle = json.loads(_run(demo_root, "bundle", ptx, "--json").stdout)
    assert bundle["bundle"]["currentScan"]["diagnosis"] == "Tension pneumothorax"


def test_unknown_scan_exits_2_with_a_hint(demo_root: Path, demo: Runtime) -> None:
    proc = _run(demo_root, "similar", "scan_nope", "--json")
    assert proc.returncode == 2
    assert "Unknown scan 'scan_nope'" in proc.stderr and "hint:" in proc.stderr


def test_seed_demo_leaves_existing_data_alone(demo_root: Path, demo: Runtime) -> None:
    out = json.loads(_run(demo_root, "seed-demo", "--json").stdout)
    assert out["seeded"] is False
