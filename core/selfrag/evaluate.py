"""The benchmark harness: run a dataset through the pipeline, one JSONL trace per question, resumable.

Each record is the question's whole :class:`~core.selfrag.types.SelfRagTrace`
plus ``dataset``, ``qid``, ``mode``, ``gold``, ``letter`` and ``correct``.
A rerun with the same output file skips the (dataset, qid, mode) records it
already holds. Accuracy counts an unanswered question (no letter) as wrong;
its standard error is ``sqrt(acc * (1 - acc) / n)``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from core.selfrag.mcq import MCQItem
from core.selfrag.pipeline import STAGES, SelfRagPipeline
from core.selfrag.settings import RetrievalMode

__all__ = ["EvalSummary", "run_eval", "summarise"]


@dataclass
class EvalSummary:
    """Accuracy of one dataset in one mode."""

    dataset: str
    mode: str
    n: int
    correct: int
    unanswered: int
    accuracy: float
    stderr: float
    retrieved: int
    mean_iterations: float
    seconds_per_question: float
    seconds_by_stage: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


def _key(record: dict[str, Any]) -> tuple[str, str, str]:
    return (str(record["dataset"]), str(record["qid"]), str(record["mode"]))


def _read(out: Path) -> dict[tuple[str, str, str], dict[str, Any]]:
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
    mode: RetrievalMode,
    progress: bool,
) -> list[EvalSummary]:
    """Run every item not yet in ``out`` and append its record; returns the summary per dataset."""
    from tqdm import tqdm

    done = _read(out)
    todo = [item for item in items if (item.dataset, item.qid, mode) not in done]
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a", encoding="utf-8") as fh:
        for item in tqdm(todo, desc=f"eval-mcq {mode}", unit="q", disable=not progress):
            trace = pipeline.run(item.question, item.options, mode=mode)
            record = {"dataset": item.dataset, "qid": item.qid, "mode": mode, "gold": item.answer}
            record |= {"correct": trace.letter == item.answer, **trace.to_json()}
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
            fh.flush()
            done[_key(record)] = record
    wanted = {(item.dataset, item.qid, mode) for item in items}
    return summarise([r for k, r in done.items() if k in wanted])


def summarise(records: Sequence[dict[str, Any]]) -> list[EvalSummary]:
    """Accuracy, standard error, unanswered count and mean stage seconds per (dataset, mode)."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in records:
        groups.setdefault((record["dataset"], record["mode"]), []).append(record)
    summaries = []
    for (dataset, mode), rows in sorted(groups.items()):
        n = len(rows)
        correct = sum(bool(r["correct"]) for r in rows)
        accuracy = correct / n
        stages = {s: sum(r["seconds"].get(s, 0.0) for r in rows) / n for s in STAGES}
        summaries.append(
            EvalSummary(
                dataset=dataset,
                mode=mode,
                n=n,
                correct=correct,
                unanswered=sum(r["letter"] is None for r in rows),
                accuracy=accuracy,
                stderr=math.sqrt(accuracy * (1 - accuracy) / n),
                retrieved=sum(bool(r["decision"] and r["decision"]["retrieve"]) for r in rows),
                mean_iterations=sum(len(r["iterations"]) for r in rows) / n,
                seconds_per_question=sum(stages.values()),
                seconds_by_stage=stages,
            )
        )
    return summaries
