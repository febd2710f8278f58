"""Retrieval-quality evaluation: questions with an expected document section -> recall@k and MRR per mode.

The evaluation file is a JSON list of items::

    {"id": "...", "query": "...", "kb": "guidelines", "expected": {"doc": "...", "section": "..."}}
    {"id": "...", "query": "...", "kb": "druglabels", "expected": {"drug": "metformin", "section": "34070-3"}}

A guideline hit matches when its document (file stem, doc id or title) and a
heading on its section path match; a label hit matches when the drug is one of
its names and its LOINC code is the expected one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any

from core.kb.protocols import Retriever
from core.kb.types import Hit, SearchMode

__all__ = ["EvalItem", "ModeScore", "as_table", "evaluate", "hit_matches", "load_eval"]


@dataclass(frozen=True)
class EvalItem:
    """One question and where its answer lives."""

    id: str
    query: str
    kb: str
    expected: dict[str, str]


@dataclass(frozen=True)
class ModeScore:
    """Recall@k and MRR@depth of one search mode, with the ids of the misses."""

    mode: str
    recall_at_k: float
    mrr: float
    n: int
    misses: tuple[str, ...]


def load_eval(path: Path) -> list[EvalItem]:
    """Read an evaluation file."""
    items = json.loads(path.read_text())
    if isinstance(items, dict):
        items = items.get("items", [])
    return [EvalItem(str(i["id"]), i["query"], i["kb"], {k: str(v) for k, v in i["expected"].items()}) for i in items]


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def hit_matches(hit: Hit, expected: dict[str, str]) -> bool:
    """Whether ``hit`` is the expected document section."""
    if "drug" in expected:
        drug = expected["drug"].strip().lower()
        names = {*hit.drug_names, hit.title.lower()}
        return drug in names and hit.section_code == expected.get("section")
    doc = _norm(expected.get("doc", ""))
    candidates = {_norm(PurePath(hit.source).stem), _norm(hit.title), _norm(hit.doc_id.rsplit("-", 1)[0])}
    candidates.add(_norm(PurePath(hit.chunk_id.split("#")[0]).stem))
    if doc and doc not in candidates:
        return False
    section = _norm(expected.get("section", ""))
    return not section or any(section == _norm(p) for p in hit.section_path)


def evaluate(
    retriever: Retriever, items: Sequence[EvalItem], modes: Sequence[SearchMode], k: int, depth: int
) -> dict[str, dict[str, ModeScore]]:
    """Scores per knowledge base (and ``all``) per mode: recall@k and MRR over the first ``depth`` hits."""
    out: dict[str, dict[str, ModeScore]] = {}
    groups: dict[str, list[EvalItem]] = {"all": list(items)}
    for item in items:
        groups.setdefault(item.kb, []).append(item)
    ranks: dict[tuple[str, str], int | None] = {}
    for mode in modes:
        for item in items:
            hits = retriever.search(item.query, item.kb, depth, mode)
            ranks[(mode, item.id)] = next((r for r, h in enumerate(hits, 1) if hit_matches(h, item.expected)), None)
    for group, members in groups.items():
        out[group] = {}
        for mode in modes:
            rs = [ranks[(mode, i.id)] for i in members]
            n = max(1, len(rs))
            out[group][mode] = ModeScore(
                mode=mode,
                recall_at_k=sum(1 for r in rs if r is not None and r <= k) / n,
                mrr=sum(1.0 / r for r in rs if r is not None) / n,
                n=len(rs),
                misses=tuple(i.id for i, r in zip(members, rs, strict=True) if r is None or r > k),
            )
    return out


def as_table(scores: dict[str, dict[str, ModeScore]], label: str) -> list[dict[str, Any]]:
    """Rows ``{embedder, kb, mode, n, recall@k, mrr}`` for reports."""
    return [
        {"embedder": label, "kb": kb, "mode": m, "n": s.n, "recall": round(s.recall_at_k, 3), "mrr": round(s.mrr, 3)}
        for kb, modes in scores.items()
        for m, s in modes.items()
    ]
