"""The whole experience on this machine: time to first useful text and to the final answer, per feature.

    python -m bench.experience_bench [--trials 3] [--cancel-after 3] [--selfrag-questions 1] [--json OUT]
    python scripts/cpu_burner.py --procs 6 --seconds 3600 --run python -m bench.experience_bench   # loaded

One process, the default local model (llama.cpp, ``llm.threads`` 0 = the cores free at each call) and a
private copy of the demo data seeded in a temporary folder. For each feature the doctor's first useful
text is what the app shows before the model has finished, and the final answer is what stands when the
model is done (or its budget ran out):

- **Ask AI**: the instant extractive answer, then the model's guarded answer (``stream_answer``, the
  default ``auto`` choice: under load the plan may not start the model at all).
- **Report draft**: the template draft (``plan_draft``), then the model-worded draft (``stream_draft``
  under the drafts' own budget, as the page runs it).
- **Guideline QA**: the extractive bullets (``guideline.writer`` ``extractive``), then the bullets
  written by the model (``writer`` ``llm``).
- **Self-RAG**: bundled multiple-choice questions in adaptive mode (no text before the end).

Each feature runs ``--trials`` times; per feature the table gives the median first useful text and final
answer, the slowest final answer, the share of calls that ended within the model call's budget + 2 s, the
share whose final answer is the model's, and the Cancel latency. Cancel is one more trial per streamed
feature: the doctor's Cancel ``--cancel-after`` seconds after the instant text (as the page does it: Ask AI
closes the stream, a draft cancels its token), timed until the stream has stopped. The load average is
recorded before and after every call; the CPU flags are printed with the table.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from any folder

from sqlalchemy import select

from core.answer.service import stream_answer
from core.demo.seed import seed_demo
from core.llm.budget import feature_budget
from core.llm.models import ensure_default_model
from core.llm.plan import CallPlan, plan_call
from core.reports.writer import plan_draft, stream_draft
from core.runtime import open_runtime
from core.selfrag.mcq import load_benchmark
from core.settings import REPO_ROOT, load_settings
from core.store.models import Scan, User

ASK_USER = "rahul.mehta"
ASK_QUESTIONS = ("What do the similar cases suggest?", "How many of the similar cases share a diagnosis?",
                 "Why are these cases similar to this scan?")  # fmt: skip
GUIDELINES = ("What is the adult daily dose of isoniazid for tuberculosis treatment?",
              "How long is treatment for drug-susceptible pulmonary tuberculosis?",
              "Which antibiotics are recommended for community-acquired pneumonia in outpatients?")  # fmt: skip
SLACK_S = 2.0  # the "within budget + 2 s"
FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


def loadavg() -> str:
    """The 1/5/15-minute load averages."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def cpu_flags() -> str:
    """The SIMD flags that decide the model's and the embedder's speed."""
    try:
        words = set(Path("/proc/cpuinfo").read_text().split())
    except OSError:
        return "unknown"
    return " ".join(f for f in FLAGS if f in words) or "none of " + " ".join(FLAGS)


def _call(feature: str, first: float | None, final: float, budget: float | None, model: bool | None,
          source: str, load0: str, cancel_s: float | None = None) -> dict[str, Any]:  # fmt: skip
    within = None if budget is None else final <= budget + SLACK_S
    return {"feature": feature, "first_useful_s": None if first is None else round(first, 3),
            "final_s": round(final, 2), "budget_s": budget, "within_budget": within, "model_used": model,
            "final_from": source, "cancel_s": None if cancel_s is None else round(cancel_s, 3),
            "load_before": load0, "load_after": loadavg()}  # fmt: skip


def _not_started(plan: CallPlan) -> str:
    """Why a call's model did not start: no model call was planned, its guard pass rate, or its estimate."""
    if plan.choice == "none":
        return "no model call: the answer needs none"  # e.g. a fixed abstention, which the model may not reword
    return plan.held_back or "estimate cannot fit"


def open_bench_runtime(prefix: str, **overrides: Any) -> tuple[Any, dict[str, Path]]:
    """A runtime on the default local model over a fresh data folder with the demo data, the model loaded."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    paths = {"data_dir": root / "data", "index_dir": REPO_ROOT / "indexes", "model_dir": REPO_ROOT / "models"}
    # model_answers always: the Ask AI rows time the model's answer, which the default (instant only while the
    # model's answers rarely pass the guard, docs/ASK_AI.md) would not ask for
    ask = {"rate_limit_per_minute": 10_000, "model_answers": "always"}
    settings = load_settings(paths=paths, llm={"backend": "llamacpp"}, ask=ask, **overrides)
    rt = open_runtime(settings)
    seed_demo(settings, rt.db)
    ensure_default_model(settings)
    assert rt.llm is not None
    rt.llm.chat([{"role": "user", "content": "Say OK."}], max_tokens=2)  # model load is not a feature's time
    return rt, paths


def ask_target(rt: Any) -> tuple[str, int]:
    """The scan the Ask AI and draft rows ask about (the demo patient's newest), and a doctor's id."""
    with rt.db.read_only() as s:
        doctor = int(s.scalar(select(User.id).where(User.role == "doctor")) or 0)
        scan = s.scalar(
            select(Scan.id).join(User, User.id == Scan.patient_id).where(User.username == ASK_USER)
            .order_by(Scan.created_at.desc())
        )  # fmt: skip
    assert scan is not None
    return str(scan), doctor


def ask_call(rt: Any, scan: str, question: str, doctor: int, cancel_after: float | None) -> dict[str, Any]:
    """One Ask AI question as the page asks it (``auto``).

    With ``cancel_after`` the doctor has chosen to run the model anyway (``local``, as the page's
    button does) and the stream is closed that long after the instant answer: the Cancel.
    """
    load0, t0 = loadavg(), time.perf_counter()
    first, budget, model, source, cancel_s = None, None, None, "?", None
    planned: CallPlan | None = None
    stream = stream_answer(rt, scan, question, doctor, rt.llm, "auto" if cancel_after is None else "local")
    with closing(stream):
        for ev in stream:
            now = time.perf_counter() - t0
            if ev.kind == "instant" and ev.plan is not None:
                first, budget, planned = now, ev.plan.budget_s, ev.plan
                if not ev.plan.starts:
                    source = f"instant (model not started: {_not_started(ev.plan)})"
            if ev.kind == "final" and ev.result is not None:
                model = None if planned is not None and planned.choice == "none" else ev.result.model_used
                if source == "?":
                    source = "model" if model else f"instant ({ev.result.reason or ev.result.path})"
            if cancel_after is not None and first is not None and ev.kind != "final" and now - first >= cancel_after:
                c0 = time.perf_counter()
                stream.close()
                cancel_s, source = time.perf_counter() - c0, "cancelled"
                break
    return _call("Ask AI", first, time.perf_counter() - t0, budget, model, source, load0, cancel_s)


def draft_call(rt: Any, scan: str, doctor: int, cancel_after: float | None) -> dict[str, Any]:
    """One report draft as the page writes it: the template, then the model when its plan starts it.

    Under ``auto`` a plan that cannot fit waits for the doctor (the template stands). With
    ``cancel_after`` the doctor ran the model anyway (``local``) and cancels that long after the template.
    """
    load0, t0 = loadavg(), time.perf_counter()
    plan = plan_draft(rt, scan)
    first = time.perf_counter() - t0
    call = plan_call(rt.settings, "draft", rt.llm, plan.messages, "auto" if cancel_after is None else "local")
    if not call.starts:
        why = _not_started(call)
        return _call("Report draft", first, first, call.budget_s, False, f"template (model not started: {why})", load0)
    token = call.token()
    source, model, c0 = "?", None, None
    for dev in stream_draft(rt, plan, rt.llm, token, doctor_id=doctor):
        now = time.perf_counter() - t0
        if cancel_after is not None and c0 is None and now - first >= cancel_after:
            c0 = time.perf_counter()
            token.cancel()
        if dev.kind == "final" and dev.draft is not None:
            model = dev.draft.path == "llm"
            source = dev.draft.path + (f" ({dev.draft.reason})" if dev.draft.reason else "")
    cancel_s = None if c0 is None else time.perf_counter() - c0
    return _call("Report draft", first, time.perf_counter() - t0, call.budget_s, model, source, load0, cancel_s)


def guideline_call(rt_extractive: Any, rt_llm: Any, question: str) -> dict[str, Any]:
    """One Guideline QA question: the extractive bullets (first useful text), then the model's."""
    load0, t0 = loadavg(), time.perf_counter()
    rt_extractive.guideline_qa.answer(question)
    first = time.perf_counter() - t0
    t1 = time.perf_counter()
    res = rt_llm.guideline_qa.answer(question)
    final = time.perf_counter() - t1
    backend = getattr(res, "backend", None)
    model = None if backend is None else backend != "extractive"
    budget = feature_budget(rt_llm.settings, "guideline")
    return _call("Guideline QA", first, final, budget, model, f"{type(res).__name__} ({backend or '-'})", load0)


def selfrag_calls(rt: Any, n: int) -> Iterator[dict[str, Any]]:
    """``n`` bundled multiple-choice questions in adaptive mode (stage budgets hold inside the pipeline)."""
    items = [i for items in load_benchmark(REPO_ROOT / "assets/mcq/mcq_sample_mirage.json").values() for i in items]
    for item in items[:n]:
        load0, t0 = loadavg(), time.perf_counter()
        trace = rt.selfrag.run(item.question, item.options, mode="adaptive")
        retrieved = bool(trace.decision and trace.decision.retrieve)
        outcome = f"letter {trace.letter or '-'} (gold {item.answer}), retrieved {retrieved}"
        yield _call("Self-RAG", None, time.perf_counter() - t0, None, None, outcome, load0)


def summarise(calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per feature: medians, the slowest final, within-budget and model-used shares, Cancel latency."""
    out = []
    for feature in dict.fromkeys(c["feature"] for c in calls):
        mine = [c for c in calls if c["feature"] == feature]
        timed = [c for c in mine if c["cancel_s"] is None]
        firsts = [c["first_useful_s"] for c in timed if c["first_useful_s"] is not None]
        judged = [c for c in mine if c["within_budget"] is not None]
        used = [c for c in timed if c["model_used"] is not None]
        cancels = [c["cancel_s"] for c in mine if c["cancel_s"] is not None]

        def share(rows: list[dict[str, Any]], ok: Callable[[dict[str, Any]], bool]) -> str:
            return "-" if not rows else f"{sum(ok(r) for r in rows)}/{len(rows)}"

        out.append({
            "feature": feature, "calls": len(mine),
            "first_useful_p50_s": statistics.median(firsts) if firsts else None,
            "final_p50_s": statistics.median(c["final_s"] for c in timed) if timed else None,
            "final_max_s": max((c["final_s"] for c in timed), default=None),
            "within_budget_2s": share(judged, lambda r: bool(r["within_budget"])),
            "model_used": share(used, lambda r: bool(r["model_used"])),
            "cancel_s": max(cancels) if cancels else None,
        })  # fmt: skip
    return out


def _fmt(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run every feature ``--trials`` times (plus one Cancel trial each) and print the tables."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=3, help="timed calls per feature")
    ap.add_argument("--cancel-after", type=float, default=3.0, help="seconds after the instant text (0: no Cancel)")
    ap.add_argument("--selfrag-questions", type=int, default=1)
    ap.add_argument("--json", type=Path, default=None, help="also write every call and the summary here")
    args = ap.parse_args(argv)
    rt, paths = open_bench_runtime("experience-bench-", guideline={"writer": "llm"})
    rt_extractive = open_runtime(load_settings(paths=paths, llm={"backend": "llamacpp"}, guideline={"writer": "extractive"}))
    scan, doctor = ask_target(rt)
    head = {"cpu_flags": cpu_flags(), "cores": os.cpu_count(), "load_start": loadavg(), "trials": args.trials,
            "started": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}  # fmt: skip
    cancel = args.cancel_after if args.cancel_after > 0 else None
    calls: list[dict[str, Any]] = []
    for i in range(args.trials):
        calls.append(ask_call(rt, scan, ASK_QUESTIONS[i % len(ASK_QUESTIONS)], doctor, None))
    if cancel is not None:
        calls.append(ask_call(rt, scan, ASK_QUESTIONS[0], doctor, cancel))
    for _ in range(args.trials):
        calls.append(draft_call(rt, scan, doctor, None))
    if cancel is not None:
        calls.append(draft_call(rt, scan, doctor, cancel))
    for i in range(args.trials):
        calls.append(guideline_call(rt_extractive, rt, GUIDELINES[i % len(GUIDELINES)]))
    calls.extend(selfrag_calls(rt, args.selfrag_questions))
    head["load_end"] = loadavg()
    summary = summarise(calls)
    if args.json is not None:
        args.json.write_text(json.dumps({"run": head, "summary": summary, "calls": calls}, indent=2) + "\n")
    print(f"CPU flags: {head['cpu_flags']}; {head['cores']} cores; load {head['load_start']} -> {head['load_end']}; "
          f"{head['started']}")  # fmt: skip
    print("| feature | calls | first useful p50 s | final p50 s | final max s | within budget + 2 s "
          "| model's answer used | Cancel s |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in summary:
        print(f"| {r['feature']} | {r['calls']} | {_fmt(r['first_useful_p50_s'], 3)} | {_fmt(r['final_p50_s'])} | "
              f"{_fmt(r['final_max_s'])} | {r['within_budget_2s']} | {r['model_used']} | {_fmt(r['cancel_s'], 2)} |")  # fmt: skip
    print()
    print("| feature | first s | final s | budget s | final from | Cancel s | load before -> after |")
    print("|---|---:|---:|---:|---|---:|---|")
    for c in calls:
        print(f"| {c['feature']} | {_fmt(c['first_useful_s'], 3)} | {c['final_s']:.1f} | {_fmt(c['budget_s'], 0)} | "
              f"{c['final_from']} | {_fmt(c['cancel_s'], 2)} | {c['load_before']} -> {c['load_after']} |")  # fmt: skip
    return {"run": head, "summary": summary, "calls": calls}


if __name__ == "__main__":
    main()
