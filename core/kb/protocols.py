"""The retrieval seams: the one :class:`Retriever` protocol, and the lexicon a retriever may carry.

Everything that searches implements :class:`Retriever`: the knowledge bases'
:class:`~core.kb.index.retriever.HybridRetriever` and the
:class:`~core.kb.base.KnowledgeBase` around it, the corpora's
:class:`~core.kb.corpus.serve.CorpusSearch`, :class:`~core.kb.corpus.serve.WithCorpora`
(corpora beside a retriever), and Self-RAG's
:class:`~core.selfrag.retrieval.StaticRetriever` (fixed passages). Guideline QA,
Self-RAG and the retrieval evaluation depend on this protocol only;
``tests/contracts/retriever.py`` is the behaviour every implementation shares.

:class:`LexiconRetriever` is a retriever that also knows the drug names in its
labels (the knowledge base, and corpora attached to one). Guideline QA is given
its :class:`~core.kb.lexicon.DrugLexicon` (``Runtime.lexicon``); nothing probes a
retriever for a ``drug_lexicon`` method.

:class:`GuidelineSources` is what Guideline QA needs from its sources (issue 24, item 8):
search, and the stored documents behind a knowledge-base name, which it reads for the label
catalogue (sections and titles), the words the documents use (scope by coverage) and the drug
names of uploaded labels. The pipeline asks ``sources.stored(kb)``; nothing probes a retriever
for an ``index`` method:

* :class:`~core.kb.base.KnowledgeBase` serves every knowledge base and document space it built;
* :class:`~core.kb.corpus.serve.WithCorpora` serves the other names through the retriever it
  wraps, and a ``corpus:`` name has no store (``None``): corpora are searched, never catalogued;
* :class:`SearchOnly` wraps a retriever that keeps no stores (fixed passages, an in-memory
  retriever in a test): no name has one.

``tests/contracts/guideline_sources.py`` is the behaviour every implementation shares.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

from core.kb.lexicon import DrugLexicon
from core.kb.types import Chunk, Hit, SearchMode

__all__ = ["GuidelineSources", "LexiconRetriever", "Retriever", "SearchOnly", "StoredDocuments", "as_sources"]


@runtime_checkable
class Retriever(Protocol):
    """Anything that returns ranked :class:`Hit` objects for a query in one knowledge base."""

    def search(self, query: str, kb: str, top_k: int, mode: SearchMode = "hybrid") -> list[Hit]:
        """The ``top_k`` best chunks of knowledge base ``kb`` for ``query``, best first.

        An empty query gives no hits; ``top_k`` outside ``1..kb.max_top_k``
        raises :class:`~core.errors.InvalidInputError`.
        """
        ...


@runtime_checkable
class LexiconRetriever(Retriever, Protocol):
    """A :class:`Retriever` that also holds the drug names of the labels it searches."""

    def drug_lexicon(self, kb: str = "druglabels") -> DrugLexicon:
        """Every proprietary, generic and ingredient name in ``kb``'s labels."""
        ...


class StoredDocuments(Protocol):
    """The read side of one knowledge base's document store that Guideline QA uses."""

    def docs(self) -> Sequence[tuple[str, str, str, str, int]]:
        """``(doc_id, source, title, sha256, n_chunks)`` of every document, ordered by id."""
        ...

    def iter_chunks(self) -> Iterable[tuple[int, Chunk]]:
        """Every chunk with its position, in position order."""
        ...

    def names(self) -> list[tuple[str, str, str]]:
        """``(name, kind, doc_id)``: the drug names of the labels stored here."""
        ...


@runtime_checkable
class GuidelineSources(Retriever, Protocol):
    """A retriever that also says which stored documents stand behind a knowledge-base name."""

    def stored(self, kb: str) -> StoredDocuments | None:
        """The documents of ``kb``'s live index version, or None where ``kb`` keeps no store.

        A new index version (an ingest, a rebuild) gives a new object, so the object's identity
        is a cache key. A name that could have a store but is not built raises
        :class:`~core.errors.IndexStateError` (or :class:`~core.errors.InvalidInputError` for a
        name that is not a knowledge base).
        """
        ...


class SearchOnly:
    """:class:`GuidelineSources` over a retriever that keeps no stored documents."""

    def __init__(self, retriever: Retriever) -> None:
        self.retriever = retriever

    def search(self, query: str, kb: str, top_k: int, mode: SearchMode = "hybrid") -> list[Hit]:
        """The wrapped retriever's answer."""
        return self.retriever.search(query, kb, top_k, mode)

    def stored(self, kb: str) -> StoredDocuments | None:
        """None: nothing behind any name is stored."""
        return None


def as_sources(retriever: Retriever | GuidelineSources) -> GuidelineSources:
    """``retriever`` itself when it declares its stores, else :class:`SearchOnly` around it."""
    return retriever if isinstance(retriever, GuidelineSources) else SearchOnly(retriever)
