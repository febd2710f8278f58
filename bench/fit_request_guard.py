"""Fit Guideline QA's request guard on its reference lines and write the shipped fit.

    nice -n 5 .venv/bin/python bench/fit_request_guard.py [--questions FILE --split train] [--write]

Fits the logistic regression of :mod:`core.guideline.request_guard` over the runtime embedder's
query vectors of ``guideline.request_guard_exemplars`` and reports P(refuse) on a question set's
split (by ``expect``: answer, disagreement, out_of_scope, refuse), so the threshold can be chosen
above every answerable question of a train split. ``--write`` stores the fit in
``core/guideline/data/request_guard.json`` (with the embedder's model id and the reference file's
hash). Prints the load average and CPU flags beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import defaultdict
from pathlib import Path


def _flags() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return " ".join(f for f in ("avx2", "avx512f", "avx512_bf16") if f in line.split())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", default="/work/eval_inputs/guideline/guideline_outside_questions.json")
    ap.add_argument("--split", default="train", help="the split to report (never tune on a test split)")
    ap.add_argument("--write", action="store_true", help="write core/guideline/data/request_guard.json")
    args = ap.parse_args()
    from core.guideline.request_guard import SHIPPED, RequestGuard
    from core.runtime import Runtime
    from core.settings import load_settings

    rt = Runtime(load_settings())
    cfg = rt.settings.guideline
    emb = rt.embedder
    guard = RequestGuard(emb.embed_queries, lambda: emb.model_id, rt.settings.paths.resolve(cfg.request_guard_exemplars),
                         cfg.request_guard_threshold, cfg.request_guard_c, shipped=Path("/nonexistent"))  # fmt: skip
    if args.write:
        guard.save(SHIPPED)
        print(f"wrote {SHIPPED} ({emb.model_id})")
    by: dict[str, list[float]] = defaultdict(list)
    path = Path(args.questions)
    if path.exists():
        for item in json.loads(path.read_text())["items"]:
            if item.get("split") == args.split:
                by[str(item.get("expect") or "answer")].append(guard.score(item["question"])[0])
    report = {"load": os.getloadavg(), "cpu_flags": _flags(), "model_id": emb.model_id, "split": args.split,
              "threshold": cfg.request_guard_threshold,
              "p_refuse": {k: {"n": len(v), "max": round(max(v), 3), "over_threshold": sum(p >= cfg.request_guard_threshold
                                                                                          for p in v)}
                           for k, v in sorted(by.items())}}  # fmt: skip
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
