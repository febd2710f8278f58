"""The behaviour every :class:`core.kb.protocols.GuidelineSources` shares: search, and the stores behind names.

An implementation's test class subclasses :class:`SourcesContract` and provides a ``sources``
fixture: the implementation over small real data, the names it keeps a store for (with a query
that finds something there), the names it only searches, and a name that could have a store but
was never built.

    class TestMySources(SourcesContract):
        @pytest.fixture(scope="class")
        @classmethod
        def sources(cls) -> SourcesProbe:
            return SourcesProbe(MySources(...), stored={"druglabels": "metformin"}, searched=("corpus:x",))
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from core.errors import IndexStateError, InvalidInputError
from core.kb.protocols import GuidelineSources
from core.kb.specs import ROUTED_KBS

__all__ = ["SourcesContract", "SourcesProbe"]


@dataclass(frozen=True)
class SourcesProbe:
    """What the contract needs to know about one implementation."""

    sources: GuidelineSources
    stored: dict[str, str] = field(default_factory=dict)  # name with a store -> a query with hits there
    searched: tuple[str, ...] = ()  # names served by search only: no store
    unbuilt: str | None = None  # a name that would have a store, never built (None: the implementation has none)


class SourcesContract:
    """Tests every implementation passes; subclass and provide the ``sources`` fixture."""

    @pytest.fixture(scope="class")
    @classmethod
    def sources(cls) -> SourcesProbe:
        raise NotImplementedError("a SourcesContract subclass provides the sources fixture")

    def test_implements_the_protocol(self, sources: SourcesProbe) -> None:
        assert isinstance(sources.sources, GuidelineSources)

    def test_a_stored_name_holds_the_documents_its_search_returns(self, sources: SourcesProbe) -> None:
        for kb, query in sources.stored.items():
            store = sources.sources.stored(kb)
            assert store is not None, kb
            docs = {row[0] for row in store.docs()}
            hits = sources.sources.search(query, kb, 5)
            assert hits and {h.doc_id for h in hits} <= docs, (kb, [h.doc_id for h in hits], docs)
            chunk_docs = {c.doc_id for _, c in store.iter_chunks()}
            assert chunk_docs == docs, kb  # every document has chunks, every chunk a document
            assert {doc for _, _, doc in store.names()} <= docs, kb

    def test_the_same_version_is_the_same_object(self, sources: SourcesProbe) -> None:
        """The object's identity is Guideline QA's cache key: unchanged while the index is unchanged."""
        for kb in sources.stored:
            assert sources.sources.stored(kb) is sources.sources.stored(kb), kb

    def test_a_searched_name_has_no_store_but_is_searched(self, sources: SourcesProbe) -> None:
        for kb in sources.searched:
            assert sources.sources.stored(kb) is None, kb

    def test_a_name_never_built_is_a_typed_error(self, sources: SourcesProbe) -> None:
        if sources.unbuilt is not None:
            with pytest.raises((IndexStateError, InvalidInputError)):
                sources.sources.stored(sources.unbuilt)
        else:  # an implementation that keeps no store says so for any name, built or not
            assert not sources.stored
            assert all(sources.sources.stored(kb) is None for kb in (*ROUTED_KBS, "user.nobody", "not a name"))
