"""Does Self-RAG's regeneration help, and what does ``selfrag.regenerate_margin`` change? (issue 27, item 7)

    python -m bench.selfrag_bench regen [--benchmark FILE ...] [--dataset NAME] [--limit N] [--mode adaptive]
                                        [--margins 0 0.25 0.5 1] [--out DIR] [--timeout-s 120] [--json]

Recording: every question runs once on the default local model with regeneration forced
(``utility_stop`` 5.0, ``max_iterations`` 3) and no rerank or reflection budget (a stage budget cut
on a loaded machine would record fewer answers: this measures what regeneration does, the pipeline
benchmark measures the time), so each record holds up to three answers with their expected
utilities (resumable through ``out/selfrag_regen.jsonl``; timeouts run again).

Replay (:func:`replay`, no model): for each margin, the real stopping rule (stop at the default
``utility_stop``) and the pipeline's own choice (:func:`core.selfrag.pipeline._best`) pick the kept
answer from the recorded ones. Rows: accuracy of the first answer and of the kept answer (Wilson
95% intervals), the kept-minus-first difference with a paired bootstrap 95% interval, and how many
questions a regeneration turned right -> wrong and wrong -> right. Regeneration helps at a margin
when the difference's interval lies above 0.

Everything is printed with the CPU model, its bf16 flag and the load average at start and end.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core.selfrag.evaluate import wilson
from core.selfrag.extract import extract_letter
from core.selfrag.pipeline import _best
from core.selfrag.tokens import clean_answer
from core.selfrag.types import Iteration

__all__ = ["record_regen", "replay"]


def _iterations(record: dict[str, Any]) -> list[Iteration]:
    return [
        Iteration(int(it["number"]), str(it["raw_answer"]), it["expected_utility"]) for it in record.get("iterations") or []
    ]


def _right(it: Iteration, record: dict[str, Any]) -> bool:
    return extract_letter(clean_answer(it.raw_answer), record["options"]) == record["gold"]


def _kept(iterations: list[Iteration], margin: float, utility_stop: float) -> Iteration:
    """The answer the pipeline keeps with ``margin``: it regenerates until an answer reaches ``utility_stop``."""
    ran: list[Iteration] = []
    for it in iterations:
        ran.append(it)
        if it.expected_utility is None or it.expected_utility >= utility_stop:
            break
    return _best(ran, margin)


def _paired_ci(first: list[bool], kept: list[bool], seed: int = 0, draws: int = 2000) -> tuple[float, float]:
    """95% paired bootstrap interval of mean(kept) - mean(first)."""
    n = len(first)
    if not n:
        return (0.0, 0.0)
    rng = random.Random(seed)
    diffs = []
    for _ in range(draws):
        idx = [rng.randrange(n) for _ in range(n)]
        diffs.append(sum(kept[i] - first[i] for i in idx) / n)
    diffs.sort()
    return diffs[int(0.025 * draws)], diffs[int(0.975 * draws) - 1]


def replay(records: Sequence[dict[str, Any]], margins: Sequence[float], utility_stop: float) -> list[dict[str, Any]]:
    """One row per margin over the records that have a first answer (see the module docstring)."""
    usable = [r for r in records if _iterations(r)]
    first = [_right(_iterations(r)[0], r) for r in usable]
    rows = []
    for margin in margins:
        kept = [_right(_kept(_iterations(r), margin, utility_stop), r) for r in usable]
        n, a, b = len(usable), sum(first), sum(kept)
        lo, hi = _paired_ci(first, kept)
        rows.append(
            {
                "margin": margin,
                "n": n,
                "first right": a,
                "first acc (95% CI)": _pct(a, n),
                "kept right": b,
                "kept acc (95% CI)": _pct(b, n),
                "kept - first (95% CI)": f"{(b - a) / n if n else 0:+.3f} ({lo:+.3f} to {hi:+.3f})",
                "right->wrong": sum(f and not k for f, k in zip(first, kept, strict=True)),
                "wrong->right": sum(k and not f for f, k in zip(first, kept, strict=True)),
            }
        )
    return rows


def _pct(k: int, n: int) -> str:
    if not n:
        return "-"
    lo, hi = wilson(k, n)
    return f"{k / n:.3f} ({lo:.3f}-{hi:.3f})"


def record_regen(
    benchmarks: list[Path], dataset: str | None, limit: int, mode: str, out: Path, timeout_s: float
) -> list[dict[str, Any]]:
    """Answer the questions on the default local model with regeneration forced; the JSONL records with options."""
    from core.kb import ensure_demo_kb
    from core.runtime import Runtime
    from core.selfrag.evaluate import read_records, run_eval
    from core.selfrag.mcq import load_benchmark, sample
    from core.settings import load_settings

    settings = load_settings(
        llm={"backend": "llamacpp", "timeout_s": timeout_s},
        selfrag={
            "utility_stop": 5.0,
            "max_iterations": 3,
            "regenerate_margin": 0.0,
            # what regeneration does, not whether it fits the time (the pipeline benchmark measures that):
            # on a shared machine a stage budget would cut the recorded answers short
            "budget_rerank_s": 0.0,
            "budget_reflection_s": 0.0,
        },
    )
    ensure_demo_kb(settings)
    pipeline = Runtime(settings).selfrag
    items = []
    for path in benchmarks:
        data = load_benchmark(path)
        for name in [dataset] if dataset else sorted(data):
            items += sample(data[name], limit, settings.selfrag.eval_seed)
    path = out / "selfrag_regen.jsonl"
    run_eval(pipeline, items, path, mode, progress=True)  # type: ignore[arg-type]
    options = {(i.dataset, i.qid): i.options for i in items}
    records = [r for r in read_records(path).values() if (r["dataset"], r["qid"]) in options]
    return [r | {"options": options[(r["dataset"], r["qid"])]} for r in records]
