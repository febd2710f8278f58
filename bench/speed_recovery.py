"""Ask AI under a CPU burner, then after it stops: budgets held, and how soon the speed estimate recovers (issue 27).

    python -m bench.speed_recovery [--procs 4] [--min-load 6] [--wait-s 300] [--loaded-calls 4] [--after-calls 6]
                                   [--gap-s 20] [--json FILE]

The default local model answers Ask AI questions as the page asks them (``auto``: the call's plan
first; a model call the measured speed says cannot fit waits and the instant answer stands). A fresh
data folder is used, so the speed estimate starts empty, as on a new install.

1. **Loaded.** ``scripts/cpu_burner.py`` starts ``--procs`` spinning processes; once the 1-minute load
   average reaches ``--min-load`` (or after ``--wait-s``), ``--loaded-calls`` questions are asked.
2. **After.** The burner is stopped and questions are asked every ``--gap-s`` seconds, ``--after-calls``
   of them: what each call did (model answered, cut at its budget, not started), and the speed estimate
   after it.

Printed: every call (final seconds, within budget + 2 s, what stood, the estimate and its load), how
many calls after the burner stopped it took until a call ran the model within its budget, the CPU
flags and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.experience_bench import ASK_QUESTIONS, ask_call, ask_target, cpu_flags, loadavg, open_bench_runtime
from core.llm.budget import speed_meter
from core.settings import REPO_ROOT

QUESTIONS = (ASK_QUESTIONS[0], ASK_QUESTIONS[2])  # both ask the model (the second of the three gets a fixed answer)


def _estimate() -> dict[str, Any]:
    r = speed_meter().reading()
    rnd = lambda x: None if x is None else round(x, 1)  # noqa: E731
    return {"prompt_tps": rnd(r.prompt_tps), "gen_tps": rnd(r.gen_tps), "measured_load": rnd(r.load),
            "partial": r.partial, "samples": r.samples}  # fmt: skip


def _ask(rt: Any, scan: str, doctor: int, i: int, phase: str) -> dict[str, Any]:
    call = ask_call(rt, scan, QUESTIONS[i % len(QUESTIONS)], doctor, None)
    row = call | {"phase": phase, "estimate_after": _estimate(), "at": time.strftime("%H:%M:%S", time.gmtime())}
    print(f"{phase:6} {row['at']} final {row['final_s']:6.1f} s  within {row['within_budget']}  "
          f"{row['final_from']}  load {row['load_after']}  estimate {row['estimate_after']}", flush=True)  # fmt: skip
    return row


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the loaded phase, stop the burner, run the recovery phase; print and return every call."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--procs", type=int, default=4, help="burner processes")
    ap.add_argument("--min-load", type=float, default=6.0, help="1-minute load average to reach before asking")
    ap.add_argument("--wait-s", type=float, default=300.0, help="longest wait for --min-load")
    ap.add_argument("--loaded-calls", type=int, default=4)
    ap.add_argument("--after-calls", type=int, default=6)
    ap.add_argument("--gap-s", type=float, default=20.0, help="seconds between questions after the burner stops")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    rt, _ = open_bench_runtime("speed-recovery-")
    scan, doctor = ask_target(rt)
    head = {"cpu_flags": cpu_flags(), "cores": os.cpu_count(), "load_start": loadavg(), "procs": args.procs,
            "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}  # fmt: skip
    burner = subprocess.Popen(
        [sys.executable, str(REPO_ROOT / "scripts" / "cpu_burner.py"), "--procs", str(args.procs), "--seconds", "900"]
    )
    calls: list[dict[str, Any]] = []
    try:
        waited = time.monotonic()
        while os.getloadavg()[0] < args.min_load and time.monotonic() - waited < args.wait_s:
            time.sleep(5)
        head["load_when_asking"] = loadavg()
        calls += [_ask(rt, scan, doctor, i, "loaded") for i in range(args.loaded_calls)]
    finally:
        burner.terminate()
        burner.wait(timeout=30)
    head["burner_stopped"] = time.strftime("%H:%M:%S", time.gmtime())
    for i in range(args.after_calls):
        time.sleep(args.gap_s)
        calls.append(_ask(rt, scan, doctor, i, "after"))
    after = [c for c in calls if c["phase"] == "after"]
    ran = [  # the model was started and came back before its budget (its text passed the rules or not)
        n for n, c in enumerate(after, 1)
        if "not started" not in c["final_from"] and c["budget_s"] and c["final_s"] < c["budget_s"]
    ]  # fmt: skip
    head["first_model_call_after_burner"] = ran[0] if ran else None
    head["within_budget_2s"] = f"{sum(bool(c['within_budget']) for c in calls)}/{len(calls)}"
    head["load_end"] = loadavg()
    print(json.dumps(head, indent=2))
    out = {"run": head, "calls": calls}
    if args.json is not None:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return out


if __name__ == "__main__":
    main()
