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
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from core.kb.lexicon import DrugLexicon
from core.kb.types import Hit, SearchMode

__all__ = ["LexiconRetriever", "Retriever"]


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
