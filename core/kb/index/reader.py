"""Open a committed index version read-only and answer dense and BM25 queries."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from core.config.kb import KBSettings
from core.errors import IndexStateError, MissingIndexError
from core.kb.index.builder import KIND, kb_dir
from core.kb.index.docstore import DocStore
from core.kb.index.lexical import Bm25

__all__ = ["KBIndex", "open_index"]


class KBIndex:
    """A loaded index version: FAISS vectors in memory, BM25 memory-mapped, chunk text in SQLite."""

    def __init__(self, folder: Path, settings: KBSettings) -> None:
        self.folder = folder
        self.manifest = KIND.read(folder, verify=settings.verify_checksums)
        self.kb: str = self.manifest["kb"]
        self.n_chunks: int = int(self.manifest["n_chunks"])
        self.dim: int = int(self.manifest["dim"])
        self.store = DocStore(folder / "docstore.sqlite")
        self._vectors = (
            np.memmap(folder / "vectors.f32", dtype=np.float32, mode="r", shape=(self.n_chunks, self.dim))
            if self.n_chunks
            else np.zeros((0, self.dim), dtype=np.float32)
        )
        self._dense: Any = None
        self._bm25: Bm25 | None = None
        if self.n_chunks:
            import faiss

            try:
                self._dense = faiss.read_index(str(folder / "dense.faiss"))
                self._bm25 = Bm25(folder / "bm25", self.manifest["bm25_stemmer"])
            except (RuntimeError, OSError, ValueError, KeyError) as exc:
                raise KIND.error(f"Index kb_{self.kb}: unreadable ({exc})") from exc
            if self._dense.ntotal != self.n_chunks:
                raise KIND.error(f"Index kb_{self.kb}: vector count differs from the manifest")
            if hasattr(self._dense, "nprobe"):
                self._dense.nprobe = settings.ivf_nprobe

    def vectors_at(self, positions: list[int]) -> np.ndarray:
        """Stored vectors at ``positions`` (a copy, in the given order)."""
        return np.array(self._vectors[positions], dtype=np.float32).reshape(len(positions), self.dim)

    def dense_search(self, query_vec: np.ndarray, n: int) -> list[tuple[int, float]]:
        """Up to ``n`` ``(position, cosine)`` pairs, best first (FAISS ``-1`` padding dropped)."""
        if self._dense is None:
            return []
        scores, ids = self._dense.search(query_vec.reshape(1, -1).astype(np.float32), min(n, self.n_chunks))
        return [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]

    def dense_scores(self, query_vec: np.ndarray, positions: list[int]) -> dict[int, float]:
        """Exact cosine of the query with the stored vectors at ``positions``."""
        if not positions:
            return {}
        order = sorted(set(positions))
        sims = np.asarray(self._vectors[order]) @ query_vec.reshape(-1)
        return {p: float(s) for p, s in zip(order, sims.tolist(), strict=True)}

    def bm25_search(self, query: str, n: int) -> list[tuple[int, float]]:
        """Up to ``n`` ``(position, BM25 score)`` pairs with a positive score, best first."""
        if self._bm25 is None:
            return []
        return self._bm25.search(query, n, self.n_chunks)

    def close(self) -> None:
        """Release the document store."""
        self.store.close()


def open_index(root: Path, kb: str, settings: KBSettings) -> KBIndex:
    """Open the live version of ``kb``; :class:`MissingIndexError` when it does not exist, else
    :class:`IndexStateError` when it is damaged."""
    versions = kb_dir(root, kb)
    if not versions.exists():
        raise MissingIndexError(
            f"Knowledge base {kb!r} has no index under {root}",
            hint="Build the demo KBs with `python -m core kb build`, or ingest documents with "
            "`python -m core kb ingest-guidelines|ingest-spl PATH`.",
        )
    try:
        return KBIndex(Path(os.path.realpath(versions.link_path)), settings)
    except IndexStateError as exc:  # the hint names the command that rebuilds this KB (a space: its originals)
        raise IndexStateError(str(exc), hint=versions.kind.hint) from exc
