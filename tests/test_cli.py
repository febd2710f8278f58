"""The command line, run as a user runs it: a subprocess against the demo database."""

from __future__ import annotations

import json
from pathlib import Path

from core.runtime import Runtime
from tests.conftest import run_cli


def test_scans_similar_and_bundle_answer_in_json(demo_root: Path, demo: Runtime) -> None:
    scans = json.loads(run_cli(demo_root, "scans", "--json").stdout)
    assert {"scan_id", "patient", "anatomy", "diagnosis"} <= set(scans[0])
    ptx = next(s["scan_id"] for s in scans if s["patient"] == "imran.khan")
    similar = json.loads(run_cli(demo_root, "similar", ptx, "--top-k", "3", "--json").stdout)
    assert len(similar["cases"]) == 3 and similar["cases"][0]["severity"] == "critical"
    bundle = json.loads(run_cli(demo_root, "bundle", ptx, "--json").stdout)
    assert bundle["bundle"]["currentScan"]["diagnosis"] == "Tension pneumothorax"


def test_unknown_scan_exits_2_with_a_hint(demo_root: Path, demo: Runtime) -> None:
    proc = run_cli(demo_root, "similar", "scan_nope", "--json")
    assert proc.returncode == 2
    assert "Unknown scan 'scan_nope'" in proc.stderr and "hint:" in proc.stderr


def test_seed_demo_leaves_existing_data_alone(demo_root: Path, demo: Runtime) -> None:
    out = json.loads(run_cli(demo_root, "seed-demo", "--json").stdout)
    assert out["seeded"] is False
