"""Hybrid retrieval: dense FAISS + BM25, fused by reciprocal rank fusion."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from core.embed import Embedder, make_embedder
from core.errors import IndexStateError, InvalidInputError
from core.kb.index.builder import kb_link
from core.kb.index.fusion import rrf
from core.kb.index.reader import KBIndex, open_index
from core.kb.types import KB_NAMES, Hit, SearchMode, is_kb_name

if TYPE_CHECKING:
    from core.settings import Settings

__all__ = ["HybridRetriever"]

_MODES = ("hybrid", "dense", "bm25")


class HybridRetriever:
    """Searches the ``guidelines``, ``druglabels`` and ``user`` indexes (implements :class:`Retriever`).

    The embedder is built from ``settings.embed`` on first use unless one is
    passed in. Indexes are opened lazily and re-opened when a newer version
    is swapped in. Searching an index built by another encoder raises
    :class:`IndexStateError`.
    """

    def __init__(self, settings: Settings, embedder: Embedder | None = None) -> None:
        self.settings = settings
        self.root: Path = settings.paths.resolve(settings.paths.index_dir)
        self._embedder = embedder
        self._open: dict[str, tuple[str, KBIndex]] = {}
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        """The query/passage embedder (built on first use)."""
        if self._embedder is None:
            self._embedder = make_embedder(self.settings.embed)
        return self._embedder

    def index(self, kb: str) -> KBIndex:
        """The live index of ``kb``, re-opened if a new version was swapped in."""
        if not is_kb_name(kb):
            raise InvalidInputError(
                f"Unknown knowledge base {kb!r}", hint=f"Use one of: {', '.join(KB_NAMES)}, or a document space."
            )
        link = kb_link(self.root, kb)
        target = os.path.realpath(link) if link.exists() else ""
        with self._lock:
            cached = self._open.get(kb)
            if cached and cached[0] == target:
                return cached[1]
            index = open_index(self.root, kb, self.settings.kb)
            if cached:
                cached[1].close()
            self._open[kb] = (target, index)
            return index

    def _check_encoder(self, index: KBIndex) -> None:
        m = index.manifest
        emb = self.embedder
        if m["encoder_id"] != emb.model_id or int(m["dim"]) != int(emb.dim):
            raise IndexStateError(
                f"Index kb_{index.kb} was built with {m['encoder_id']} ({m['dim']}-d) but the current embedder is "
                f"{emb.model_id} ({emb.dim}-d)",
                hint="Rebuild the index (`python -m core kb build`) or switch embed.backend back.",
            )

    def search(self, query: str, kb: str, top_k: int, mode: SearchMode = "hybrid") -> list[Hit]:
        """The ``top_k`` best chunks of ``kb`` for ``query`` (see :class:`Hit` for the scores)."""
        cfg = self.settings.kb
        if mode not in _MODES:
            raise InvalidInputError(f"Unknown search mode {mode!r}", hint="Use hybrid, dense or bm25.")
        if not 1 <= top_k <= cfg.max_top_k:
            raise InvalidInputError(f"top_k must be between 1 and {cfg.max_top_k}, not {top_k}")
        if not query.strip():
            return []
        index = self.index(kb)
        if index.n_chunks == 0:
            return []
        n = max(cfg.candidates, top_k)
        dense: list[tuple[int, float]] = []
        lexical: list[tuple[int, float]] = []
        qvec = None
        if mode != "bm25":
            self._check_encoder(index)
            qvec = self.embedder.embed_queries([query])[0]
            import faiss

            faiss.omp_set_num_threads(cfg.faiss_threads)
            dense = index.dense_search(qvec, n if mode == "hybrid" else top_k)
        if mode != "dense":
            lexical = index.bm25_search(query, n if mode == "hybrid" else top_k)
        if mode == "dense":
            ranked = dense
        elif mode == "bm25":
            ranked = lexical
        else:
            ranked = rrf([[p for p, _ in dense], [p for p, _ in lexical]], cfg.rrf_k)
        ranked = ranked[:top_k]
        positions = [p for p, _ in ranked]
        dense_by = dict(dense)
        if qvec is not None:
            dense_by.update(index.dense_scores(qvec, [p for p in positions if p not in dense_by]))
        bm25_by = dict(lexical)
        chunks = index.store.get(positions)
        return [Hit.of(chunks[p], score, dense_by.get(p), bm25_by.get(p)) for p, score in ranked if p in chunks]

    def close(self) -> None:
        """Close every open index."""
        with self._lock:
            for _, index in self._open.values():
                index.close()
            self._open.clear()
