"""The behaviour every :class:`core.kb.protocols.Retriever` shares (haystack's ``testing/document_store.py`` style).

An implementation's test class subclasses :class:`RetrieverContract` and
provides a ``probe`` fixture: the retriever, built over small real data (real
FAISS, BM25 and embedder where it has them), one knowledge-base name it
serves, a query whose best hit is known, and the modes it supports. Every test
below then runs against it; :class:`LexiconContract` adds the drug lexicon of a
:class:`~core.kb.protocols.LexiconRetriever`.

    class TestMyRetriever(RetrieverContract):
        @pytest.fixture(scope="class")
        @classmethod
        def probe(cls) -> Probe:
            return Probe(MyRetriever(...), kb="guidelines", query="...", best=lambda h: h.doc_id == "...")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from core.errors import InvalidInputError
from core.kb.protocols import LexiconRetriever, Retriever
from core.kb.types import Hit, SearchMode

__all__ = ["LexiconContract", "Probe", "RetrieverContract"]


@dataclass(frozen=True)
class Probe:
    """What the contract needs to know about one implementation."""

    retriever: Retriever
    kb: str  # a knowledge base (or corpus, or space) the retriever serves, with data in it
    query: str  # a query whose best hit ``best`` recognises, in every mode of ``modes``
    best: Callable[[Hit], bool]
    modes: tuple[SearchMode, ...] = ("hybrid", "dense", "bm25")
    max_top_k: int | None = None  # the largest top_k accepted (``kb.max_top_k``); None: no upper limit
    drug: str = ""  # for LexiconContract: a drug name in the retriever's labels


class RetrieverContract:
    """Tests every retriever passes; subclass and provide the ``probe`` fixture."""

    @pytest.fixture(scope="class")
    @classmethod
    def probe(cls) -> Probe:
        raise NotImplementedError("a RetrieverContract subclass provides the probe fixture")

    def test_implements_the_protocol(self, probe: Probe) -> None:
        assert isinstance(probe.retriever, Retriever)

    def test_finds_the_known_passage_first_in_every_mode(self, probe: Probe) -> None:
        for mode in probe.modes:
            hits = probe.retriever.search(probe.query, probe.kb, 3, mode)
            assert hits and probe.best(hits[0]), (mode, [h.chunk_id for h in hits])

    def test_hits_are_ranked_best_first_and_at_most_top_k(self, probe: Probe) -> None:
        for mode in probe.modes:
            hits = probe.retriever.search(probe.query, probe.kb, 3, mode)
            assert 1 <= len(hits) <= 3 and all(isinstance(h, Hit) for h in hits)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True), mode
            assert len({h.chunk_id for h in hits}) == len(hits), "a chunk came back twice"
            assert all(h.text and h.chunk_id and h.doc_id for h in hits)

    def test_hits_are_of_the_knowledge_base_searched(self, probe: Probe) -> None:
        for mode in probe.modes:
            assert {h.kb for h in probe.retriever.search(probe.query, probe.kb, 3, mode)} == {probe.kb}, mode

    def test_a_smaller_top_k_is_a_prefix_of_a_larger_one(self, probe: Probe) -> None:
        for mode in probe.modes:
            one = probe.retriever.search(probe.query, probe.kb, 1, mode)
            three = probe.retriever.search(probe.query, probe.kb, 3, mode)
            assert [h.chunk_id for h in one] == [h.chunk_id for h in three[:1]], mode

    def test_the_same_query_gives_the_same_hits(self, probe: Probe) -> None:
        first = probe.retriever.search(probe.query, probe.kb, 3, probe.modes[0])
        again = probe.retriever.search(probe.query, probe.kb, 3, probe.modes[0])
        assert [(h.chunk_id, h.score) for h in first] == [(h.chunk_id, h.score) for h in again]

    def test_an_empty_query_gives_no_hits(self, probe: Probe) -> None:
        for query in ("", "   \n"):
            assert probe.retriever.search(query, probe.kb, 3, probe.modes[0]) == []

    def test_top_k_out_of_range_is_refused(self, probe: Probe) -> None:
        with pytest.raises(InvalidInputError):
            probe.retriever.search(probe.query, probe.kb, 0, probe.modes[0])
        if probe.max_top_k is not None:
            with pytest.raises(InvalidInputError):
                probe.retriever.search(probe.query, probe.kb, probe.max_top_k + 1, probe.modes[0])


class LexiconContract:
    """Tests a :class:`LexiconRetriever` passes besides :class:`RetrieverContract` (``probe.drug`` is set)."""

    def test_implements_the_lexicon_protocol(self, probe: Probe) -> None:
        assert isinstance(probe.retriever, LexiconRetriever)

    def test_the_lexicon_knows_the_drugs_of_the_labels(self, probe: Probe) -> None:
        assert isinstance(probe.retriever, LexiconRetriever)
        lexicon = probe.retriever.drug_lexicon()
        assert probe.drug in lexicon.names()
        assert [e.name for e in lexicon.find_in(f"Can {probe.drug} be given twice daily?")] == [probe.drug]
