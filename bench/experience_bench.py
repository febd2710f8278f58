"""The whole experience on this machine: time to first useful text and to the final answer, per feature.

    python -m bench.experience_bench [--selfrag-questions 1] [--json]

One process, the default local model (llama.cpp, ``llm.threads`` 0 = the cores free at each call) and a
private copy of the demo data seeded in a temporary folder. For each feature the doctor's first useful
text is what the app shows before the model has finished, and the final answer is what stands when the
model is done (or its budget ran out):

- **Ask AI**: the instant extractive answer, then the model's guarded answer (``stream_answer``).
- **Report draft**: the template draft (``plan_draft``), then the model-worded draft (``stream_draft``
  under the drafts' own budget, as the page runs it).
- **Guideline QA**: the extractive bullets (``guideline.writer`` ``extractive``), then the bullets
  written by the model (``writer`` ``llm``).
- **Self-RAG**: one bundled multiple-choice question in adaptive mode (no text before the end).

The load average is recorded before and after every call (the machine is shared). Results print as a
Markdown table, or JSON with ``--json``; docs/BENCHMARKS.md keeps the last run.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from any folder

from sqlalchemy import select

from core.answer.service import stream_answer
from core.demo.seed import seed_demo
from core.llm.budget import CancelToken, feature_budget
from core.llm.models import ensure_default_model
from core.reports.writer import plan_draft, stream_draft
from core.runtime import open_runtime
from core.selfrag.mcq import load_benchmark
from core.settings import REPO_ROOT, load_settings
from core.store.models import Scan, User

ASK = ("rahul.mehta", "What do the similar cases suggest?")
GUIDELINE = "What is the adult daily dose of isoniazid for tuberculosis treatment?"


def loadavg() -> str:
    """The 1/5/15-minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _row(feature: str, first: float | None, final: float, source: str, load0: str) -> dict[str, Any]:
    return {"feature": feature, "first_useful_s": None if first is None else round(first, 3),
            "final_s": round(final, 2), "final_from": source, "load_before": load0, "load_after": loadavg()}  # fmt: skip


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    """Run every feature once and print the table."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--selfrag-questions", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="experience-bench-"))
    paths = {"data_dir": root / "data", "index_dir": REPO_ROOT / "indexes", "model_dir": REPO_ROOT / "models"}
    # model_answers always: the Ask AI row times the model's answer, which the default (instant only while the
    # model's answers rarely pass the guard, docs/ASK_AI.md) would not ask for
    ask = {"rate_limit_per_minute": 10_000, "model_answers": "always"}
    settings = load_settings(paths=paths, llm={"backend": "llamacpp"}, ask=ask)
    rt = open_runtime(settings)
    seed_demo(settings, rt.db)
    ensure_default_model(settings)
    llm = rt.llm
    assert llm is not None
    llm.chat([{"role": "user", "content": "Say OK."}], max_tokens=2)  # model load is not a feature's time
    with rt.db.read_only() as s:
        doctor = int(s.scalar(select(User.id).where(User.role == "doctor")) or 0)
        scan = s.scalar(
            select(Scan.id).join(User, User.id == Scan.patient_id).where(User.username == ASK[0])
            .order_by(Scan.created_at.desc())
        )  # fmt: skip
    assert scan is not None
    rows = []

    load0, t0, first, source = loadavg(), time.perf_counter(), None, "?"
    for ev in stream_answer(rt, scan, ASK[1], doctor, llm):
        if ev.kind == "instant" and first is None:
            first = time.perf_counter() - t0
        if ev.kind == "final" and ev.result is not None:
            source = "model" if ev.result.model_used else f"instant ({ev.result.reason or ev.result.path})"
    rows.append(_row("Ask AI", first, time.perf_counter() - t0, source, load0))

    load0, t0 = loadavg(), time.perf_counter()
    plan = plan_draft(rt, scan)
    first = time.perf_counter() - t0
    token = CancelToken(feature_budget(settings, "draft"))
    source = "?"
    for dev in stream_draft(rt, plan, llm, token, doctor_id=doctor):
        if dev.kind == "final" and dev.draft is not None:
            source = dev.draft.path + (f" ({dev.draft.reason})" if dev.draft.reason else "")
    rows.append(_row("Report draft", first, time.perf_counter() - t0, source, load0))

    for writer in ("extractive", "llm"):
        s_w = load_settings(paths=paths, llm={"backend": "llamacpp"}, guideline={"writer": writer})
        rt_w = rt if writer == "llm" and settings.guideline.writer == "llm" else open_runtime(s_w)
        load0, t0 = loadavg(), time.perf_counter()
        res = rt_w.guideline_qa.answer(GUIDELINE)
        took = time.perf_counter() - t0
        kind = type(res).__name__
        if writer == "extractive":
            extractive_s = took
        else:
            rows.append(_row("Guideline QA", extractive_s, took, f"{kind} ({getattr(res, 'backend', '-')})", load0))

    items = [i for items in load_benchmark(REPO_ROOT / "assets/mcq/mcq_sample_mirage.json").values() for i in items]
    for item in items[: args.selfrag_questions]:
        load0, t0 = loadavg(), time.perf_counter()
        trace = rt.selfrag.run(item.question, item.options, mode="adaptive")
        outcome = f"letter {trace.letter or '-'} (gold {item.answer}), retrieved {bool(trace.decision and trace.decision.retrieve)}"
        rows.append(_row(f"Self-RAG ({item.qid})", None, time.perf_counter() - t0, outcome, load0))

    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print("| feature | first useful text s | final answer s | final from | load before -> after |")
        print("|---|---:|---:|---|---|")
        for r in rows:
            first_s = "-" if r["first_useful_s"] is None else f"{r['first_useful_s']:.3f}"
            print(f"| {r['feature']} | {first_s} | {r['final_s']:.1f} | {r['final_from']} | "
                  f"{r['load_before']} -> {r['load_after']} |")  # fmt: skip
    return rows


if __name__ == "__main__":
    main()
