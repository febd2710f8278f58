"""The benchmark harness: run questions through the pipeline in one or more modes, one JSONL record each, resumable.

Each record is the question's whole :class:`~core.selfrag.types.SelfRagTrace`
plus ``dataset``, ``qid``, ``mode``, ``gold``, ``letter``, ``correct`` and
``outcome``, one of:

* ``correct`` / ``wrong``: a letter was extracted;
* ``no-letter``: the model answered but stated no option (or an ambiguous one);
* ``timeout``: the backend did not answer within ``llm.timeout_s`` (machine load, not the model's knowledge);
* ``backend-error``: any other backend failure.

A rerun with the same output file skips the (dataset, qid, mode) records it
holds, except ``timeout`` and ``backend-error`` ones, which run again (the
newest record of a key wins). Every mode runs on the same questions, question
by question, so an interrupted comparison stays paired. Accuracy is given over
all questions (failures count against it) and over the questions that got a
letter, each with a 95% Wilson score interval.
"""

from __future__ import annotations

import json
import math
import statistics
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core.config.selfrag import RetrievalMode
from core.selfrag.mcq import MCQItem
from core.selfrag.pipeline import STAGES, SelfRagPipeline
from core.selfrag.types import SelfRagTrace

__all__ = ["OUTCOMES", "RETRY_OUTCOMES", "EvalSummary", "make_record", "outcome", "run_eval", "summarise", "wilson"]

OUTCOMES = ("correct", "wrong", "no-letter", "timeout", "backend-error")
RETRY_OUTCOMES = frozenset({"timeout", "backend-error"})
_Z95 = 1.959964


def wilson(successes: int, n: int, z: float = _Z95) -> tuple[float, float]:
    """The Wilson score interval for ``successes`` of ``n`` (``(0, 1)`` when ``n`` is 0)."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def outcome(trace: SelfRagTrace, gold: str) -> str:
    """One of :data:`OUTCOMES` for ``trace`` against the ``gold`` letter."""
    reason = trace.abstention.reason if trace.abstention else None
    if reason in RETRY_OUTCOMES:
        return str(reason)
    if trace.letter is None:
        return "no-letter"
    return "correct" if trace.letter == gold else "wrong"


def make_record(item: MCQItem, mode: str, trace: SelfRagTrace) -> dict[str, Any]:
    """The JSONL record of ``item`` answered in ``mode``."""
    verdict = outcome(trace, item.answer)
    record = {"dataset": item.dataset, "qid": item.qid, "mode": mode, "gold": item.answer}
    return record | {"correct": verdict == "correct", "outcome": verdict, **trace.to_json()}


@dataclass
class EvalSummary:
    """One dataset in one mode: outcomes, accuracies with intervals, the retrieval decisions, time."""

    dataset: str
    mode: str
    n: int
    correct: int
    wrong: int
    no_letter: int
    timeout: int
    backend_error: int
    accuracy: float
    ci_low: float
    ci_high: float
    answered: int
    accuracy_answered: float | None
    ci_answered_low: float | None
    ci_answered_high: float | None
    retrieved: int
    p_retrieve_median: float | None
    p_retrieve_hist: list[int]
    kept_documents: float
    mean_iterations: float
    seconds_per_question: float
    median_seconds: float
    seconds_by_stage: dict[str, float] = field(default_factory=dict)

    @property
    def unanswered(self) -> int:
        """Questions without a letter, for any reason."""
        return self.n - self.answered

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self) | {"unanswered": self.unanswered}


def _key(record: dict[str, Any]) -> tuple[str, str, str]:
    return (str(record["dataset"]), str(record["qid"]), str(record["mode"]))


def _outcome_of(record: dict[str, Any]) -> str:
    """The record's outcome (records written before ``outcome`` existed are derived)."""
    if "outcome" in record:
        return str(record["outcome"])
    reason = (record.get("abstention") or {}).get("reason")
    if reason in RETRY_OUTCOMES:
        return str(reason)
    if record.get("letter") is None:
        return "no-letter"
    return "correct" if record.get("correct") else "wrong"


def read_records(out: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
    """The newest record per (dataset, qid, mode) in ``out`` (a cut last line is skipped)."""
    records: dict[tuple[str, str, str], dict[str, Any]] = {}
    if out.exists():
        for line in out.read_text(encoding="utf-8").splitlines():
            if line.strip():
                try:
                    record = json.loads(line)
                except ValueError:
                    continue  # a line cut by an interrupted run: that question runs again
                records[_key(record)] = record
    return records


def run_eval(
    pipeline: SelfRagPipeline,
    items: Sequence[MCQItem],
    out: Path,
    modes: RetrievalMode | Sequence[RetrievalMode],
    progress: bool,
    workers: int = 1,
) -> list[EvalSummary]:
    """Run every (item, mode) not yet done in ``out`` (timeouts and backend errors again); summaries per dataset.

    ``workers`` > 1 runs that many questions at once (``selfrag.eval_workers``; a server backend with
    several slots answers them in parallel); records are appended as they finish.
    """
    from tqdm import tqdm

    modes = [modes] if isinstance(modes, str) else list(modes)
    done = read_records(out)
    todo = [
        (item, mode)
        for item in items
        for mode in modes
        if (item.dataset, item.qid, mode) not in done
        or _outcome_of(done[(item.dataset, item.qid, mode)]) in RETRY_OUTCOMES
    ]
    out.parent.mkdir(parents=True, exist_ok=True)
    lock = threading.Lock()
    with out.open("a", encoding="utf-8") as fh, tqdm(
        total=len(todo), desc=f"eval-mcq {'/'.join(modes)}", unit="run", disable=not progress
    ) as bar:

        def one(job: tuple[MCQItem, RetrievalMode]) -> None:
            item, mode = job
            record = make_record(item, mode, pipeline.run(item.question, item.options, mode=mode))
            with lock:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
                fh.flush()
                done[_key(record)] = record
                bar.update(1)

        if workers <= 1:
            for job in todo:
                one(job)
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                list(pool.map(one, todo))
    wanted = {(item.dataset, item.qid, mode) for item in items for mode in modes}
    return summarise([r for k, r in done.items() if k in wanted])


def summarise(records: Sequence[dict[str, Any]]) -> list[EvalSummary]:
    """Outcome counts, both accuracies with Wilson intervals, P(retrieve) spread and seconds per (dataset, mode)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["dataset"], record["mode"]), []).append(record)
    summaries = []
    for (dataset, mode), rows in sorted(groups.items()):
        n = len(rows)
        counts = {o: 0 for o in OUTCOMES}
        for r in rows:
            counts[_outcome_of(r)] += 1
        answered = counts["correct"] + counts["wrong"]
        ps = [float(r["decision"]["p_retrieve"]) for r in rows if r.get("decision") and r["decision"].get("p_retrieve") is not None]
        hist = [0] * 10
        for p in ps:
            hist[min(int(p * 10), 9)] += 1
        totals = [sum((r.get("seconds") or {}).values()) for r in rows]
        stages = {s: sum((r.get("seconds") or {}).get(s, 0.0) for r in rows) / n for s in STAGES}
        low, high = wilson(counts["correct"], n)
        a_low, a_high = wilson(counts["correct"], answered) if answered else (None, None)
        summaries.append(
            EvalSummary(
                dataset=dataset,
                mode=mode,
                n=n,
                correct=counts["correct"],
                wrong=counts["wrong"],
                no_letter=counts["no-letter"],
                timeout=counts["timeout"],
                backend_error=counts["backend-error"],
                accuracy=counts["correct"] / n,
                ci_low=low,
                ci_high=high,
                answered=answered,
                accuracy_answered=counts["correct"] / answered if answered else None,
                ci_answered_low=a_low,
                ci_answered_high=a_high,
                retrieved=sum(bool(r.get("decision") and r["decision"]["retrieve"]) for r in rows),
                p_retrieve_median=statistics.median(ps) if ps else None,
                p_retrieve_hist=hist,
                kept_documents=sum(sum(bool(d.get("kept")) for d in r.get("documents") or []) for r in rows) / n,
                mean_iterations=sum(len(r.get("iterations") or []) for r in rows) / n,
                seconds_per_question=sum(totals) / n,
                median_seconds=statistics.median(totals),
                seconds_by_stage=stages,
            )
        )
    return summaries
