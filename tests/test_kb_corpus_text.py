"""A corpus ingested from text alone: 10,000 generated chunks embedded by the configured encoder, resumed mid-way."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from core.kb.corpus.build import ingest_corpus
from core.kb.corpus.layout import corpus_link, query_embedder
from core.kb.corpus.serve import CorpusSearch
from core.runtime import Runtime
from core.selfrag.factory import make_retriever
from tests.conftest import make_settings

N = 10_000
# Demo data, not for clinical use: short sentences assembled from these words.
ORGANS = ["kidney", "liver", "lung", "heart", "thyroid", "pancreas", "colon", "skin", "bone", "retina"]
FINDINGS = ["inflammation", "fibrosis", "infarction", "nodules", "calcification", "oedema", "atrophy", "ulceration"]
DRUGS = ["metformin", "amoxicillin", "warfarin", "lisinopril", "prednisolone", "furosemide", "insulin", "heparin"]


class Crash(Exception):
    """Raised by the checkpoint hook to stop ingestion as a kill would."""


class CountingEmbedder:
    """The configured embedder, counting the passages it embeds (to see what a resumed run recomputes)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.passages = inner, 0
        self.model_id, self.dim = inner.model_id, inner.dim

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        self.passages += len(texts)
        return np.asarray(self.inner.embed_passages(texts))

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.inner.embed_queries(texts))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _corpus(path: Path) -> list[dict[str, str]]:
    rng = random.Random(7)
    rows = []
    for i in range(N):
        organ, finding, drug = rng.choice(ORGANS), rng.choice(FINDINGS), rng.choice(DRUGS)
        text = f"Case note {i}: {finding} of the {organ} seen on review; {drug} was started and dose {i % 97} mg noted."
        rows.append({"id": f"c{i:05d}", "title": f"{organ} {finding}", "text": text})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return rows


@pytest.mark.slow  # embeds 10,000 chunks with the test preset's encoder: about a minute on a busy 2-core machine
def test_ten_thousand_chunks_from_text_alone_resume_and_serve_self_rag(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    rows = _corpus(path)
    settings = make_settings(tmp_path, kb={"progress": False, "corpus": {"checkpoint_rows": 1000, "shard_rows": 4000}})
    emb = CountingEmbedder(query_embedder(settings, "notes"))

    def crash(done: int) -> None:
        if done >= 6000:
            raise Crash(done)

    with pytest.raises(Crash):
        ingest_corpus(settings, path, "notes", embedder=emb, on_checkpoint=crash)
    assert emb.passages == 6000 and not corpus_link(settings.paths.index_dir, "notes").exists()
    report = ingest_corpus(settings, path, "notes", embedder=emb)
    assert report.n_chunks == N and report.resumed_at_line == 6000
    assert emb.passages == N  # the resumed run embedded only the 4,000 chunks not yet done
    assert report.encoder_id == emb.model_id and report.dim == emb.dim

    search = CorpusSearch(settings, {"notes": emb})
    for i in (17, 5432, 9999):
        hits = search.search(rows[i]["text"], "corpus:notes", 5, "dense")
        assert rows[i]["id"] in [h.chunk_id for h in hits]
    # With a corpus ingested, Self-RAG retrieves from it by default (selfrag.corpus = auto), not the demo KBs.
    rt = Runtime(settings)
    docs = make_retriever(settings, rt.kb, rt.corpora).retrieve(rows[42]["text"], 5)
    assert rows[42]["id"] in [d.doc_id for d in docs] and all(d.source.startswith("corpus:") for d in docs)
