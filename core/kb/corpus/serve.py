"""Serving ingested corpora: open a version, search it, fuse several, attach them to the pipelines.

    search = CorpusSearch(settings)                      # query encoders from settings
    hits = search.search("statin myopathy", kb="corpus:pubmed+textbooks", top_k=5)

A search embeds the query with the corpus's query encoder (checked against
the manifest: another model id or dimension raises
:class:`EncoderMismatchError`), takes ``kb.corpus.rerank`` candidates from
the FAISS shards, re-scores them exactly from the vectors on disk and reads
only the returned chunks from the document stores. Several corpora are
merged by reciprocal rank fusion (:func:`core.kb.index.fusion.rrf`), as MedRAG
merges its corpora.

``corpus:NAME`` (or ``corpus:A+B``) is how the pipelines name corpora:
:class:`WithCorpora` serves those names and passes every other knowledge base
to the retriever it wraps (guideline QA's mixed route), and
``selfrag.corpus = "A+B"`` resolves to ingested corpora in
:func:`core.selfrag.factory.make_retriever`.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from core.config.kb import KBSettings
from core.errors import ConfigError, EncoderMismatchError, InvalidInputError
from core.kb.corpus.ann import ShardedANN
from core.kb.corpus.layout import (
    CORPUS_PREFIX,
    KIND,
    corpus_link,
    corpus_names,
    parse_corpus_kb,
    query_embedder,
)
from core.kb.corpus.vectors import VectorFile
from core.kb.index.docstore import DocStore
from core.kb.index.fusion import rrf
from core.kb.lexicon import DrugLexicon
from core.kb.protocols import LexiconRetriever, Retriever, StoredDocuments, as_sources
from core.kb.types import Chunk, Hit, SearchMode

if TYPE_CHECKING:
    from core.embed import Embedder
    from core.settings import Settings

__all__ = ["CorpusIndex", "CorpusSearch", "WithCorpora"]

_SHIFT = 40
_MASK = (1 << _SHIFT) - 1


class CorpusIndex:
    """One opened corpus version: FAISS shards (memory-mapped), vectors and chunk text on disk."""

    def __init__(self, folder: Path, cfg: KBSettings) -> None:
        self.folder, self.cfg = folder, cfg
        self.manifest: dict[str, Any] = KIND.read(folder, verify=cfg.corpus.verify_checksums)
        m = self.manifest
        self.name: str = m["name"]
        self.dim, self.n_chunks, self.metric = int(m["dim"]), int(m["n_chunks"]), str(m["metric"])
        names = m["shard_files"]
        shards = m["shards"]
        self.offsets = [int(s["offset"]) for s in shards]
        self.stores = [DocStore(folder / s["dir"] / names["store"]) for s in shards]
        self.vectors = [
            VectorFile(folder / s["dir"] / names["vectors"], int(s["n"]), self.dim, m["vector_dtype"]) for s in shards
        ]
        try:
            paths = [folder / s["dir"] / names["ann"] for s in shards]
            self.ann = ShardedANN(paths, self.offsets, m["index_type"], cfg)
        except RuntimeError as exc:
            raise KIND.error(f"Corpus {self.name}: unreadable FAISS index ({exc})") from exc

    def _shard_of(self, pos: int) -> int:
        return int(np.searchsorted(self.offsets, pos, side="right")) - 1

    def exact_scores(self, query: np.ndarray, positions: list[int]) -> list[tuple[int, float]]:
        """Exact similarity of ``query`` with the stored vectors at ``positions``, best first."""
        by_shard: dict[int, list[int]] = {}
        for pos in sorted(set(positions)):
            by_shard.setdefault(self._shard_of(pos), []).append(pos)
        out: list[tuple[int, float]] = []
        for shard, group in by_shard.items():
            rows = self.vectors[shard].rows([p - self.offsets[shard] for p in group])
            out += zip(group, (rows @ query.reshape(-1)).tolist(), strict=True)
        out.sort(key=lambda x: (-x[1], x[0]))
        return out

    def search_vector(self, query: np.ndarray, n: int) -> list[tuple[int, float]]:
        """The ``n`` best ``(position, exact score)`` pairs for an embedded query."""
        q = np.asarray(query, dtype=np.float32).reshape(-1)
        if self.metric == "cosine":
            q = q / max(float(np.linalg.norm(q)), 1e-12)
        if self.ann.kind == "flat":
            return self.ann.search(q, n)
        candidates = self.ann.search(q, max(n, self.cfg.corpus.rerank))
        return self.exact_scores(q, [p for p, _ in candidates])[:n]

    def chunks(self, positions: list[int]) -> dict[int, Chunk]:
        """The chunks at ``positions`` (read from the shards' stores)."""
        out: dict[int, Chunk] = {}
        by_shard: dict[int, list[int]] = {}
        for pos in positions:
            by_shard.setdefault(self._shard_of(pos), []).append(pos)
        for shard, group in by_shard.items():
            base = self.offsets[shard]
            out.update({base + p: c for p, c in self.stores[shard].get([p - base for p in group]).items()})
        return out

    def close(self) -> None:
        """Release the stores and vector files (FAISS mappings go with the object)."""
        for store in self.stores:
            store.close()
        for vf in self.vectors:
            vf.close()


class CorpusSearch:
    """Searches ingested corpora by name (implements :class:`core.kb.Retriever` for ``corpus:`` names).

    ``embedders`` maps corpus names to query encoders; a name not in it gets
    :func:`query_embedder`. Versions are re-opened when a new one is swapped in.
    """

    def __init__(self, settings: Settings, embedders: dict[str, Embedder] | None = None) -> None:
        self.settings = settings
        self.root = settings.paths.resolve(settings.paths.index_dir)
        self._embedders: dict[str, Embedder] = dict(embedders or {})
        self._open: dict[str, tuple[str, CorpusIndex]] = {}
        self._lock = threading.Lock()

    def index(self, name: str) -> CorpusIndex:
        """The live version of corpus ``name``."""
        link = corpus_link(self.root, name)
        if not link.exists():
            known = ", ".join(corpus_names(self.root)) or "none"
            raise KIND.error(f"No corpus {name!r} under {self.root} (ingested: {known})")
        target = os.path.realpath(link)
        with self._lock:
            cached = self._open.get(name)
            if cached and cached[0] == target:
                return cached[1]
            index = CorpusIndex(Path(target), self.settings.kb)
            if cached:
                cached[1].close()
            self._open[name] = (target, index)
            return index

    def embedder(self, name: str) -> Embedder:
        """The query encoder of corpus ``name`` (built on first use)."""
        if name not in self._embedders:
            self._embedders[name] = query_embedder(self.settings, name)
        return self._embedders[name]

    def embed_query(self, query: str, name: str) -> np.ndarray:
        """``query`` embedded by ``name``'s encoder; :class:`EncoderMismatchError` if it is not the manifest's."""
        m = self.index(name).manifest
        emb = self.embedder(name)
        if emb.model_id != m["encoder_id"] or int(emb.dim) != int(m["dim"]):
            raise EncoderMismatchError(
                f"Corpus {name!r} was built for queries from {m['encoder_id']} ({m['dim']}-d) but its query "
                f"encoder is {emb.model_id} ({emb.dim}-d)"
            )
        return emb.embed_queries([query])[0]

    def search(self, query: str, kb: str, top_k: int, mode: SearchMode = "hybrid") -> list[Hit]:
        """The ``top_k`` best chunks of the corpora named by ``kb`` (``corpus:A`` or ``corpus:A+B``).

        Corpora are dense-only. ``score`` is the exact similarity for one corpus
        in ``dense`` mode and the RRF sum otherwise (several corpora, or
        ``hybrid`` so scores read like the knowledge bases' hybrid scores);
        ``dense_score`` is always the exact similarity.
        """
        cfg = self.settings.kb
        if mode == "bm25":
            raise ConfigError("Corpora have no BM25 index", hint="Search corpora in dense or hybrid mode.")
        if not 1 <= top_k <= cfg.max_top_k:
            raise InvalidInputError(f"top_k must be between 1 and {cfg.max_top_k}, not {top_k}")
        names = parse_corpus_kb(kb)
        if not query.strip():
            return []
        n = max(top_k, cfg.candidates) if len(names) > 1 or mode == "hybrid" else top_k
        rankings = [self.index(name).search_vector(self.embed_query(query, name), n) for name in names]
        ranked: list[tuple[int, int, float]]  # corpus index, position, score
        if len(names) == 1 and mode == "dense":
            ranked = [(0, p, s) for p, s in rankings[0][:top_k]]
        else:  # RRF over (corpus, position) keys packed into one int
            fused = rrf([[(i << _SHIFT) | p for p, _ in r] for i, r in enumerate(rankings)], cfg.rrf_k)[:top_k]
            ranked = [(key >> _SHIFT, key & _MASK, score) for key, score in fused]
        dense = [dict(r) for r in rankings]
        chunks = [self.index(name).chunks([p for i, p, _ in ranked if i == c]) for c, name in enumerate(names)]
        return [Hit.of(chunks[i][p], score, dense[i].get(p), None) for i, p, score in ranked if p in chunks[i]]

    def close(self) -> None:
        """Close every open corpus."""
        with self._lock:
            for _, index in self._open.values():
                index.close()
            self._open.clear()


class WithCorpora:
    """:class:`~core.kb.protocols.GuidelineSources` serving ``corpus:`` names from corpora and the rest from ``inner``."""

    def __init__(self, inner: Retriever, corpora: CorpusSearch) -> None:
        self.inner, self.corpora = inner, corpora

    def search(self, query: str, kb: str, top_k: int, mode: SearchMode = "hybrid") -> list[Hit]:
        """Search a corpus (``corpus:...``) or a knowledge base."""
        if kb.startswith(CORPUS_PREFIX):
            return self.corpora.search(query, kb, top_k, mode)
        return self.inner.search(query, kb, top_k, mode)

    def drug_lexicon(self, kb: str = "druglabels") -> DrugLexicon:
        """The drug names of ``inner`` (:class:`LexiconRetriever`); :class:`TypeError` when it holds none."""
        if not isinstance(self.inner, LexiconRetriever):
            raise TypeError(f"{type(self.inner).__name__} holds no drug lexicon")
        return self.inner.drug_lexicon(kb)

    def stored(self, kb: str) -> StoredDocuments | None:
        """None for a corpus (searched, never catalogued); the wrapped retriever's store for the rest."""
        if kb.startswith(CORPUS_PREFIX):
            return None
        return as_sources(self.inner).stored(kb)
