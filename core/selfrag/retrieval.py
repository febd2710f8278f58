"""Stages 1 and 3: query augmentations (YAML) and where the passages come from.

Self-RAG searches through the one :class:`core.kb.protocols.Retriever`
protocol. :class:`KBRetriever` says which knowledge bases (or ``corpus:``
names) of which retriever it searches, in which mode, and turns the merged
hits into :class:`Passage` s (the title with its section path, ``kb:source``
as the source); :class:`StaticRetriever` is a :class:`Retriever` over fixed
passages (tests, benchmarks, evidence shipped with a dataset), searched through
a :class:`KBRetriever` like any other.

Augmentations file (none by default)::

    augmentations:
      - {type: prefix, text: "In adults, "}
      - {type: suffix, text: " (clinical guideline)"}
      - {type: replace, pattern: "\\\\bTB\\\\b", with: "tuberculosis"}
      - {type: expand, terms: {MDR-TB: multidrug-resistant tuberculosis}}   # adds a second query
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import ConfigError, InvalidInputError
from core.selfrag.types import Passage, QueryProcessing

if TYPE_CHECKING:
    from core.kb.protocols import Retriever
    from core.kb.types import Hit, SearchMode

__all__ = ["KBRetriever", "QueryProcessor", "StaticRetriever", "retrieve_all"]


def passage_of(hit: Hit) -> Passage:
    """A hit as the pipeline shows it: title and section path as the title, ``kb:source`` as the source."""
    return Passage(
        doc_id=hit.chunk_id,
        text=hit.text,
        title=" > ".join(p for p in (hit.title, *hit.section_path) if p),
        source=f"{hit.kb}:{hit.source}",
        score=hit.score,
    )


class KBRetriever:
    """Searches each named knowledge base of ``search`` and merges the hits by score (ties keep KB order)."""

    def __init__(self, search: Retriever, kbs: Sequence[str], mode: SearchMode) -> None:
        self.search = search
        self.kbs = list(kbs)
        self.mode = mode

    def retrieve(self, query: str, k: int) -> list[Passage]:
        """Top ``k`` over all configured knowledge bases."""
        hits = [hit for kb in self.kbs for hit in self.search.search(query, kb=kb, top_k=k, mode=self.mode)]
        hits.sort(key=lambda h: h.score, reverse=True)
        return [passage_of(h) for h in hits[:k]]


class StaticRetriever:
    """A :class:`Retriever` over fixed passages, ranked by word overlap with the query, whatever ``kb`` and mode.

    A hit's ``chunk_id`` and ``doc_id`` are the passage's ``doc_id``, its score the
    number of lower-cased words it shares with the query.
    """

    def __init__(self, passages: Sequence[Passage]) -> None:
        self.passages = list(passages)

    def search(self, query: str, kb: str, top_k: int, mode: SearchMode = "hybrid") -> list[Hit]:
        """The ``top_k`` passages sharing the most words with ``query``, as hits of ``kb``."""
        from core.kb.types import Hit  # here: importing core.selfrag loads no core.kb module

        if top_k < 1:
            raise InvalidInputError(f"top_k must be at least 1, not {top_k}")
        if not query.strip():
            return []
        words = set(re.findall(r"\w+", query.lower()))

        def overlap(p: Passage) -> int:
            return len(words & set(re.findall(r"\w+", f"{p.title} {p.text}".lower())))

        ranked = sorted(self.passages, key=overlap, reverse=True)
        return [
            Hit(chunk_id=p.doc_id, doc_id=p.doc_id, kb=kb, text=p.text, source=p.source, title=p.title,
                score=float(overlap(p)))
            for p in ranked[:top_k]
        ]  # fmt: skip


def retrieve_all(retriever: KBRetriever, queries: Sequence[str], k: int) -> list[Passage]:
    """Retrieve ``k`` per query and merge, first occurrence of each document id kept."""
    seen: dict[str, Passage] = {}
    for query in queries:
        for doc in retriever.retrieve(query, k):
            seen.setdefault(doc.doc_id, doc)
    return list(seen.values())


class QueryProcessor:
    """Stage 1: applies the configured augmentations (none: the query passes through unchanged)."""

    def __init__(self, augmentations: Sequence[dict[str, Any]] = ()) -> None:
        for aug in augmentations:
            if aug.get("type") not in {"prefix", "suffix", "replace", "expand"}:
                raise ConfigError(f"Unknown query augmentation {aug!r}", hint="Use prefix, suffix, replace or expand.")
        self.augmentations = list(augmentations)

    @classmethod
    def from_yaml(cls, path: Path | None) -> QueryProcessor:
        """Load ``augmentations:`` from a YAML file; ``None`` gives the pass-through processor."""
        if path is None:
            return cls()
        import yaml

        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"Cannot read query augmentations {path}: {exc}") from exc
        return cls(list(data.get("augmentations") or []))

    def process(self, query: str) -> QueryProcessing:
        """The retrieval queries for ``query`` and the names of the augmentations applied."""
        main = query
        extra: list[str] = []
        applied: list[str] = []
        for aug in self.augmentations:
            kind = aug["type"]
            if kind == "prefix":
                main = f"{aug['text']}{main}"
            elif kind == "suffix":
                main = f"{main}{aug['text']}"
            elif kind == "replace":
                main = re.sub(aug["pattern"], aug["with"], main)
            else:
                for term, expansion in (aug.get("terms") or {}).items():
                    if re.search(rf"\b{re.escape(term)}\b", main, flags=re.IGNORECASE):
                        extra.append(re.sub(rf"\b{re.escape(term)}\b", expansion, main, flags=re.IGNORECASE))
            applied.append(kind)
        return QueryProcessing(original=query, queries=[main, *extra], applied=applied)
