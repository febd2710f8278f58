"""Stages 1 and 3: query augmentations (YAML) and the retriever seam.

:class:`Retriever` is the one-method protocol the pipeline depends on:
``retrieve(query, k) -> list[Document]``. :class:`KBRetriever` adapts the
knowledge bases (:class:`core.kb.Retriever`); a corpus attached by name later
(a PubMed-style corpus behind a byte-offset document store) plugs in by
implementing the same method, and :class:`StaticRetriever` serves fixed
documents (tests, benchmarks, evidence shipped with a dataset).

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
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from core.errors import ConfigError
from core.selfrag.types import Document, QueryProcessing

if TYPE_CHECKING:
    from core.kb.types import Retriever as KBSearch
    from core.kb.types import SearchMode

__all__ = ["KBRetriever", "QueryProcessor", "Retriever", "StaticRetriever", "retrieve_all"]


@runtime_checkable
class Retriever(Protocol):
    """Anything that returns the ``k`` best documents for a query, best first."""

    def retrieve(self, query: str, k: int) -> list[Document]:
        """The ``k`` best documents for ``query``."""
        ...


class KBRetriever:
    """Searches each named knowledge base and merges the hits by score (ties keep KB order)."""

    def __init__(self, search: KBSearch, kbs: Sequence[str], mode: SearchMode) -> None:
        self.search = search
        self.kbs = list(kbs)
        self.mode = mode

    def retrieve(self, query: str, k: int) -> list[Document]:
        """Top ``k`` over all configured knowledge bases."""
        hits = [hit for kb in self.kbs for hit in self.search.search(query, kb=kb, top_k=k, mode=self.mode)]
        hits.sort(key=lambda h: h.score, reverse=True)
        return [
            Document(
                doc_id=h.chunk_id,
                text=h.text,
                title=" > ".join(p for p in (h.title, *h.section_path) if p),
                source=f"{h.kb}:{h.source}",
                score=h.score,
            )
            for h in hits[:k]
        ]


class StaticRetriever:
    """Fixed documents ranked by word overlap with the query (tests and dataset-supplied evidence)."""

    def __init__(self, documents: Sequence[Document]) -> None:
        self.documents = list(documents)

    def retrieve(self, query: str, k: int) -> list[Document]:
        """The ``k`` documents sharing the most lower-cased words with ``query``."""
        words = set(re.findall(r"\w+", query.lower()))

        def overlap(doc: Document) -> int:
            return len(words & set(re.findall(r"\w+", f"{doc.title} {doc.text}".lower())))

        ranked = sorted(self.documents, key=overlap, reverse=True)
        return [Document(d.doc_id, d.text, d.title, d.source, float(overlap(d))) for d in ranked[:k]]


def retrieve_all(retriever: Retriever, queries: Sequence[str], k: int) -> list[Document]:
    """Retrieve ``k`` per query and merge, first occurrence of each document id kept."""
    seen: dict[str, Document] = {}
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
