"""Side by side in one run: does the model's answer stand with the computed facts in the guard?

For a seeded sample of the doctor-question set (train split only; never tune on
test), every question that reaches the model is asked once (no Ask AI time
budget: this measures the guard, not the speed), and the same model text is
guarded twice: by the bundle alone (before) and with the answer's
:class:`~core.answer.facts.AnswerFacts` (after). An answer "stands" when the
guard keeps at least one sentence and a valid citation, as in
:func:`core.answer.service._from_guard`.

    CASEBOOK_LLM__TIMEOUT_S=150 nice -n 5 .venv/bin/python bench/ask_guard_facts.py --sample 12
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.answer.guard import GuardReport, enforce
from core.answer.guard_inputs import refusal_lists
from core.answer.prompt import ask_messages
from core.answer.service import answer_readonly
from core.askeval.doctor_set import _scan_ids, load_questions
from core.errors import CasebookError
from core.runtime import open_runtime
from core.settings import REPO_ROOT, Settings


def _stands(report: GuardReport) -> bool:
    return bool(report.kept and report.cited and not report.insufficient)


def main() -> int:
    """Run the comparison and print JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sample", type=int, default=12)
    ap.add_argument("--seed", type=int, default=13)
    ap.add_argument("--split", choices=["train"], default="train")
    args = ap.parse_args()
    rt = open_runtime(Settings())
    llm = rt.llm
    if llm is None:
        print("no model configured (llm.backend is extractive)", file=sys.stderr)
        return 1
    items = [i for i in load_questions(REPO_ROOT / "tests" / "data" / "doctor_questions.json") if i["split"] == args.split]
    chosen = sorted(random.Random(args.seed).sample(items, min(args.sample, len(items))), key=lambda i: i["id"])
    scans = _scan_ids(rt)
    rows = []
    reasons: dict[str, Counter[str]] = {"before": Counter(), "after": Counter()}
    for item in chosen:
        result, instant = answer_readonly(rt, scans[(item["user"], int(item["scan"]))], item["question"], None)
        if instant.path == "fixed" or result.bundle is None:
            continue
        started = time.monotonic()
        try:
            text = llm.chat(ask_messages(result, item["question"], instant.answer.answer)).text
        except CasebookError as exc:  # a loaded machine: count it and go on
            print(json.dumps({"id": item["id"], "failed": type(exc).__name__}), file=sys.stderr, flush=True)
            continue
        secs = time.monotonic() - started
        lists = refusal_lists(rt)
        names, drugs = lists["names"], lists["drugs"]
        before = enforce(text, result, names=names, drugs=drugs)
        after = enforce(text, result, names=names, drugs=drugs, facts=instant.facts)
        for name, rep in (("before", before), ("after", after)):
            reasons[name].update(r.split(":")[0] for _, r in rep.removed)
        rows.append(
            {
                "id": item["id"],
                "intent": instant.intent,
                "seconds": round(secs, 1),
                "sentences": len(before.kept) + len(before.removed),
                "kept_before": len(before.kept),
                "kept_after": len(after.kept),
                "stands_before": _stands(before),
                "stands_after": _stands(after),
                "removed_after": after.removed,
            }
        )
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    out = {
        "model_questions": len(rows),
        "stands_before": sum(r["stands_before"] for r in rows),
        "stands_after": sum(r["stands_after"] for r in rows),
        "sentences": sum(r["sentences"] for r in rows),
        "kept_before": sum(r["kept_before"] for r in rows),
        "kept_after": sum(r["kept_after"] for r in rows),
        "removed_reasons": {k: dict(v) for k, v in reasons.items()},
        "rows": rows,
    }
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
