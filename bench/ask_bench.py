"""Ask AI latency: time to first token and to the full answer, extractive vs local LLM.

    python -m bench.ask_bench [--questions 3] [--threads 1]

Runs on a private copy of the demo data (seeded in a temporary folder), prints a Markdown table
and the prompt/generated token counts of the LLM path. Results go to docs/benchmarks/ask.md.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import select

from core.answer.prompt import ask_messages
from core.answer.service import ask_question, stream_answer
from core.cases import build_context_bundle
from core.demo.seed import seed_demo
from core.llm.models import ensure_default_model
from core.runtime import open_runtime
from core.settings import REPO_ROOT, load_settings
from core.store.models import Scan, User

QUESTIONS = [
    "What is the prognosis?",
    "Which similar cases are most severe?",
    "Do the similar cases agree with the diagnosis?",
]
PATIENTS = ["rahul.mehta", "imran.khan", "maria.gonzalez"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--questions", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="askbench-"))
    settings = load_settings(
        paths={"data_dir": root / "data", "index_dir": root / "idx", "model_dir": REPO_ROOT / "models"},
        llm={"backend": "llamacpp", "llamacpp": {"threads": args.threads}, "max_tokens": 160},
        # model_answers always: this bench times the model itself, which Ask AI's default does not ask on its own
        ask={"llm_budget_s": 600, "rate_limit_per_minute": 10_000, "model_answers": "always"},
    )
    rt = open_runtime(settings)
    seed_demo(settings, rt.db)
    ensure_default_model(settings)
    llm = rt.llm
    assert llm is not None
    with rt.db.read_only() as s:
        doctor = int(s.scalar(select(User.id).where(User.role == "doctor")) or 0)
        scans = [
            s.scalar(
                select(Scan.id)
                .join(User, User.id == Scan.patient_id)
                .where(User.username == u)
                .order_by(Scan.created_at.desc())
            )
            for u in PATIENTS
        ]
    rows: dict[str, list[float]] = {"extractive_total": [], "llm_first_token": [], "llm_total": []}
    tokens: list[tuple[int | None, int | None]] = []
    for sid, q in zip(scans, QUESTIONS[: args.questions], strict=False):
        assert sid is not None
        t0 = time.perf_counter()
        ask_question(rt, sid, q, doctor)
        rows["extractive_total"].append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        first, path = None, "none"
        for ev in stream_answer(rt, sid, q, doctor, llm):
            if ev.kind == "delta" and first is None:
                first = time.perf_counter() - t0
            if ev.kind == "final" and ev.result is not None:
                path = f"{ev.result.path}" + ("" if ev.result.model_used else " (model not used)")
        rows["llm_total"].append(time.perf_counter() - t0)
        print(f"{q!r}: model answer {rows['llm_total'][-1]:.1f} s, path {path}", file=sys.stderr)
        rows["llm_first_token"].append(first if first is not None else float("nan"))
        completion = llm.chat(ask_messages(build_context_bundle(rt, sid), q))
        tokens.append((completion.prompt_tokens, completion.completion_tokens))
    print(f"| path | median seconds (n={len(rows['llm_total'])}) |\n|---|---:|")
    print(
        f"| extractive, full answer (first token = full answer) | {statistics.median(rows['extractive_total']):.3f} |"
    )
    print(f"| local LLM ({args.threads} thread), first token | {statistics.median(rows['llm_first_token']):.1f} |")
    print(f"| local LLM ({args.threads} thread), full guarded answer | {statistics.median(rows['llm_total']):.1f} |")
    print(f"\nlongest full guarded answer: {max(rows['llm_total']):.1f} s")
    print("\nprompt / generated tokens per question: " + ", ".join(f"{p}/{c}" for p, c in tokens))


if __name__ == "__main__":
    main()
