"""Multiple-choice benchmark files: the MIRAGE JSON format and Self-BioRAG's JSONL format.

MIRAGE (``benchmark.json``)::

    {"medqa": {"0001": {"question": "...", "options": {"A": "...", "B": "..."}, "answer": "B"}}}

Self-BioRAG (``data/benchmark/<name>_test.jsonl``), one object a line, the
options inside the input text and the answer given as the option's text::

    {"id": "...", "name": "med_qa", "instruction": "...",
     "instances": {"input": "QUESTION: ...\\nOption A: ...\\nOption B: ...\\n", "output": "<option text>"}}
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import InvalidInputError

__all__ = ["MCQItem", "load_benchmark", "load_mirage", "load_selfbiorag", "sample"]

_OPTION_RE = re.compile(r"^\s*Option\s+([A-Z])\s*[:.)]\s*(.*)$")


@dataclass(frozen=True)
class MCQItem:
    """One question: its dataset, id, text, options (letter -> text) and the correct letter."""

    dataset: str
    qid: str
    question: str
    options: dict[str, str]
    answer: str


def load_mirage(data: dict[str, Any]) -> dict[str, list[MCQItem]]:
    """Parse the MIRAGE layout ``{dataset: {id: {question, options, answer}}}`` (top-level ``_`` keys skipped)."""
    out: dict[str, list[MCQItem]] = {}
    for dataset, questions in data.items():
        if dataset.startswith("_"):
            continue  # comments such as "_comment": "DEMO DATA ..."
        if not isinstance(questions, dict):
            raise InvalidInputError(f"MIRAGE dataset {dataset!r} is not an object of questions")
        items = []
        for qid, q in questions.items():
            options = {str(k).upper(): str(v) for k, v in (q.get("options") or {}).items()}
            answer = str(q.get("answer", "")).strip().upper()
            if not q.get("question") or not options or answer not in options:
                raise InvalidInputError(f"MIRAGE question {dataset}/{qid} lacks a question, options or a valid answer")
            items.append(MCQItem(dataset, str(qid), str(q["question"]), options, answer))
        out[dataset] = items
    return out


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


def load_selfbiorag(lines: list[str]) -> dict[str, list[MCQItem]]:
    """Parse Self-BioRAG JSONL lines; the answer letter is the option whose text equals ``output``."""
    out: dict[str, list[MCQItem]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        row = json.loads(line)
        inst = row.get("instances") or {}
        question_lines, options = [], {}
        for text_line in str(inst.get("input", "")).splitlines():
            if match := _OPTION_RE.match(text_line):
                options[match.group(1)] = match.group(2).strip()
            elif not options:
                question_lines.append(text_line)
        question = "\n".join(question_lines).strip()
        question = question.removeprefix("QUESTION:").strip()
        answers = [k for k, v in options.items() if _norm(v) == _norm(str(inst.get("output", "")))]
        if not question or len(answers) != 1:
            raise InvalidInputError(f"Self-BioRAG line {number}: no question, or the output matches no single option")
        dataset = str(row.get("name") or "default")
        items = out.setdefault(dataset, [])
        items.append(
            MCQItem(dataset, str(row.get("qid") or f"{dataset}-{len(items):05d}"), question, options, answers[0])
        )
    return out


def load_benchmark(path: Path) -> dict[str, list[MCQItem]]:
    """Load either format: ``.jsonl`` is Self-BioRAG's, anything else MIRAGE's."""
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".jsonl":
            return load_selfbiorag(text.splitlines())
        return load_mirage(json.loads(text))
    except (OSError, ValueError) as exc:
        raise InvalidInputError(f"Cannot read benchmark {path}: {exc}") from exc


def sample(items: list[MCQItem], limit: int, seed: int) -> list[MCQItem]:
    """``limit`` items drawn with ``seed`` (all when ``limit`` is 0 or at least the size), in file order."""
    if not limit or limit >= len(items):
        return list(items)
    chosen = set(random.Random(seed).sample(range(len(items)), limit))
    return [item for i, item in enumerate(items) if i in chosen]
