"""The three versioned artifacts, each built small from synthetic data by its real builder (for fault tests).

``KINDS`` maps a name to an :class:`Artifact`: how to prepare its inputs, build
a version of ``n`` rows under a base folder, find its :class:`VersionedDir`,
and probe the live version (opened with every checksum verified) with fixed
queries, so that a test can compare the answers before and after a fault.
Everything is real: numpy, FAISS, bm25s, SQLite; no part is faked.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from core.artifacts import VersionedDir
from core.cases.index import CaseIndex, IndexParams, build_index, case_dir
from core.kb.corpus.build import ingest_corpus
from core.kb.corpus.layout import corpus_dir
from core.kb.corpus.serve import CorpusIndex
from core.kb.index.builder import IndexBuilder, kb_dir
from core.kb.index.reader import open_index
from core.kb.types import Chunk
from core.settings import load_settings
from tests.conftest import make_settings

__all__ = ["FIRST", "KINDS", "SECOND", "Artifact", "synthetic_kb"]

FIRST, SECOND = 300, 2000  # rows of the live version, and of the build a fault interrupts


@dataclass(frozen=True)
class Artifact:
    """One artifact kind as the fault tests drive it (every path is under a base folder)."""

    vdir: Callable[[Path], VersionedDir]
    build: Callable[[Path, int], int]  # a version of n rows; returns the line a corpus ingestion resumed at
    probe: Callable[[Path], Any]  # the live version opened, checksums verified, answering fixed queries
    full_hint: Callable[[Path], str]  # the DiskFullError hint while a previous version serves
    prepare: Callable[[Path, int], None] = lambda base, n: None  # inputs written before a file-size limit
    resumes_at: int = 0  # where a build run again after an interrupted one starts


def _query(dim: int) -> np.ndarray:
    q = np.random.default_rng(12345).standard_normal(dim).astype(np.float32)
    return q / np.linalg.norm(q)


def _unit(n: int, dim: int) -> np.ndarray:
    v = np.random.default_rng(n).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


# -- the similar-case index ----------------------------------------------------------------------------
_CASE_DIM = 64


def _build_cases(base: Path, n: int) -> int:
    anatomy = ["lung" if i % 10 else "eye" for i in range(n)]
    region = [("apex" if i % 7 else "base") if a == "lung" else None for i, a in enumerate(anatomy)]
    params = IndexParams(hnsw_min_cases=500, hnsw_m=16, hnsw_ef_construction=40)
    ids = np.arange(1000, 1000 + n, dtype=np.int64)
    build_index(base / "cases", ids, anatomy, region, _unit(n, _CASE_DIM), encoder_id="synthetic",
                table_checksum=f"t{n}", params=params)  # fmt: skip
    return 0


def _probe_cases(base: Path) -> Any:
    index = CaseIndex(Path(os.path.realpath(base / "cases" / "current")))
    q = _query(_CASE_DIM)
    found = [index.search(q, a, None, 5, ef_search=64, rerank=4) for a in (None, "lung", "eye")]
    return index.manifest["count"], [(ids.tolist(), scores.tolist()) for ids, scores in found]


# -- a knowledge base ----------------------------------------------------------------------------------
_KB_DIM = 128


def synthetic_kb(root: Path, n: int) -> None:
    """Build knowledge base ``user`` under ``root`` from ``n`` synthetic chunks (real SQLite, FAISS and bm25s)."""
    cfg = load_settings("test", kb={"progress": False}).kb
    spec = {"encoder_id": "synthetic", "dim": _KB_DIM, "tokenizer_id": "none", "chunk_tokens": 240,
            "chunk_overlap": 50, "spl_section_tokens": 400, "header_in_index": True, "bm25_stemmer": "english"}  # fmt: skip
    vecs = _unit(n, _KB_DIM)
    chunks = [Chunk(chunk_id=f"c{i}", doc_id=f"d{i // 10}", kb="user", text=f"word{i % 97} common") for i in range(n)]
    with IndexBuilder(root, "user", spec, cfg) as builder:
        for start in range(0, n, 250):
            builder.add(chunks[start : start + 250], vecs[start : start + 250])
        builder.commit()


def _build_kb(base: Path, n: int) -> int:
    synthetic_kb(base / "kb", n)
    return 0


def _probe_kb(base: Path) -> Any:
    cfg = load_settings("test", kb={"progress": False, "verify_checksums": True}).kb
    index = open_index(base / "kb", "user", cfg)
    try:
        return index.n_chunks, index.dense_search(_query(_KB_DIM), 5), index.bm25_search("word5", 10)
    finally:
        index.close()


# -- a corpus ------------------------------------------------------------------------------------------
_CORPUS_DIM = 512
# vectors.f32 grows 512,000 bytes a checkpoint, its document store about 80 kB: a 700,000-byte limit
# stops the second checkpoint in the vectors, so an ingestion run again resumes at line 250.
CORPUS_KB: dict[str, Any] = {"progress": False, "corpus": {"checkpoint_rows": 250, "shard_rows": 1000}}


def _corpus_settings(base: Path, verify: bool = False) -> Any:
    kb = {**CORPUS_KB, "corpus": {**CORPUS_KB["corpus"], "verify_checksums": verify}}
    return make_settings(base, kb=kb)


def _prepare_corpus(base: Path, n: int) -> None:
    src = base / f"src{n}"
    if not src.is_dir():
        src.mkdir(parents=True)
        (src / "c.jsonl").write_text("".join(json.dumps({"id": f"v{i}", "text": f"row {i}"}) + "\n" for i in range(n)))
        np.save(src / "c.npy", _unit(n, _CORPUS_DIM))


def _build_corpus(base: Path, n: int) -> int:
    src = base / f"src{n}"
    report = ingest_corpus(_corpus_settings(base), src / "c.jsonl", "syn", embeddings=src / "c.npy",
                           encoder_id="synthetic")  # fmt: skip
    return report.resumed_at_line


def _probe_corpus(base: Path) -> Any:
    settings = _corpus_settings(base, verify=True)
    index = CorpusIndex(Path(os.path.realpath(corpus_dir(settings.paths.index_dir, "syn").link_path)), settings.kb)
    try:
        return index.n_chunks, index.search_vector(_query(_CORPUS_DIM), 5)
    finally:
        index.close()


def _corpus_root(base: Path) -> Path:
    return Path(_corpus_settings(base).paths.index_dir)


KINDS: dict[str, Artifact] = {
    "cases": Artifact(
        vdir=lambda base: case_dir(base / "cases"),
        build=_build_cases,
        probe=_probe_cases,
        full_hint=lambda base: f"Free space under {base / 'cases'}; the previous index still serves.",
    ),
    "kb": Artifact(
        vdir=lambda base: kb_dir(base / "kb", "user"),
        build=_build_kb,
        probe=_probe_kb,
        full_hint=lambda base: f"Free space under {base / 'kb'}; the previous version of kb_user still serves.",
    ),
    "corpus": Artifact(
        vdir=lambda base: corpus_dir(_corpus_root(base), "syn"),
        build=_build_corpus,
        probe=_probe_corpus,
        full_hint=lambda base: (
            f"Free space under {_corpus_root(base)} and run the same command again to resume from the last "
            f"checkpoint (or delete {_corpus_root(base) / '.corpus_syn.resume.tmp'} to give it up); "
            "the previous version still serves."
        ),
        prepare=_prepare_corpus,
        resumes_at=250,
    ),
}
