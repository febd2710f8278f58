"""Typed records of one self-reflective RAG run, every one JSON-serialisable.

A :class:`SelfRagTrace` holds the result of each stage: query processing, the
retrieval decision, the retrieved documents with their three critic scores,
every generation iteration with its utility, the raw and clean answer and the
extracted option letter. An unparseable or failed step is the shared
:class:`~core.contracts.Abstention` with a reason, never a made-up value.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from core.contracts import Abstention

__all__ = [
    "CriticReading",
    "Iteration",
    "Passage",
    "QueryProcessing",
    "RetrievalDecision",
    "ScoredDocument",
    "SelfRagTrace",
]


@dataclass(frozen=True)
class Passage:
    """One retrieved passage, whatever retriever produced it."""

    doc_id: str
    text: str
    title: str = ""
    source: str = ""
    score: float = 0.0

    def prompt_text(self, max_chars: int) -> str:
        """Title and text as shown to a model, cut to ``max_chars``."""
        body = f"{self.title}\n{self.text}" if self.title else self.text
        return body[:max_chars]


@dataclass(frozen=True)
class CriticReading:
    """What a critic read for one document: a ``{label: logprob}`` map per reflection group.

    Labels are the reflection tokens (``[Relevant]``, ``[Fully supported]``,
    ``[Utility:4]``, ...) whichever critic produced them; a judge maps its
    Yes/No and digit answers onto them.
    """

    relevance: dict[str, float] = field(default_factory=dict)
    support: dict[str, float] = field(default_factory=dict)
    utility: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class QueryProcessing:
    """Stage 1: the question as asked and the queries sent to retrieval."""

    original: str
    queries: list[str]
    applied: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RetrievalDecision:
    """Stage 2: P(retrieve), the threshold and what was decided (and why)."""

    mode: str
    p_retrieve: float | None
    threshold: float
    retrieve: bool
    reason: str
    logprobs: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class ScoredDocument:
    """Stages 3-4: a retrieved document with its critic scores (``None``: the critic saw no label)."""

    document: Passage
    relevance: float | None
    groundedness: float | None
    utility: float | None
    score: float
    kept: bool


@dataclass(frozen=True)
class Iteration:
    """Stages 5-6: one generated answer and its expected utility (1..5)."""

    number: int
    raw_answer: str
    expected_utility: float | None
    utility_logprobs: dict[str, float] = field(default_factory=dict)
    temperature: float = 0.0
    seconds: float = 0.0


@dataclass
class SelfRagTrace:
    """Everything one question went through; :meth:`to_json` gives the JSON record.

    ``retrieval_note`` says why evidence did or did not reach the generator (the
    decision, the relevance floor); ``budget_notes`` which stage budget ended a
    stage early.
    """

    question: str
    options: dict[str, str]
    critic: str
    generator: str
    query: QueryProcessing | None = None
    decision: RetrievalDecision | None = None
    documents: list[ScoredDocument] = field(default_factory=list)
    iterations: list[Iteration] = field(default_factory=list)
    best_iteration: int | None = None
    raw_answer: str = ""
    clean_answer: str = ""
    letter: str | None = None
    abstention: Abstention | None = None
    seconds: dict[str, float] = field(default_factory=dict)
    retrieval_note: str = ""
    budget_notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (nested dataclasses become dicts, the abstention too)."""
        out = dataclasses.asdict(self)
        out["abstention"] = self.abstention.model_dump() if self.abstention else None
        return out
