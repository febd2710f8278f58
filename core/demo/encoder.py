"""A deterministic stand-in for the upstream imaging model's 512-d embedding.

Real scans get their embedding from an imaging model upstream of Casebook. The
demo has no images, so it simulates that model:

1. embed a short clinical description of the case (modality, region,
   diagnosis, severity, key findings) with the text embedder;
2. subtract the mean description vector of the demo catalogue (text embedders
   give every medical sentence a cosine near 0.9; centring spreads them out);
3. project 384-d -> 512-d with a fixed Gaussian matrix (seed in settings) and
   L2-normalise;
4. add per-case Gaussian noise of relative size ``noise`` (seeded by the case
   index) and normalise again, so that cases of one description differ as
   real scans would.

Cases of the same diagnosis, region and severity therefore land near each
other, related diagnoses nearer than unrelated ones. The encoder id recorded in
index manifests names this recipe and its parameters.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from core.embed import Embedder
from core.store.models import EMBEDDING_DIM

__all__ = ["DemoImagingEncoder"]


class DemoImagingEncoder:
    """Maps case descriptions to unit 512-d vectors, deterministically."""

    def __init__(self, embedder: Embedder, catalogue_texts: Sequence[str], *, seed: int, noise: float) -> None:
        self._embedder = embedder
        self._noise = noise
        self._seed = seed
        self._cache: dict[str, np.ndarray] = {}
        base = self._embed_unique(list(dict.fromkeys(catalogue_texts)))
        self._mean = base.mean(axis=0)
        rng = np.random.default_rng(seed)
        self._proj = rng.standard_normal((embedder.dim, EMBEDDING_DIM)).astype(np.float32)
        self.encoder_id = f"demo-imaging-sim-v1(text={embedder.model_id},seed={seed},noise={noise})"

    def _embed_unique(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in texts if t not in self._cache]
        if missing:
            for text, vec in zip(missing, self._embedder.embed_passages(missing), strict=True):
                self._cache[text] = vec
        return np.stack([self._cache[t] for t in texts])

    def clean(self, texts: Sequence[str]) -> np.ndarray:
        """Noise-free 512-d unit vectors for ``texts`` (the centre of each description)."""
        vecs = (self._embed_unique(list(texts)) - self._mean) @ self._proj
        return _normalise(vecs)

    def encode(self, texts: Sequence[str], noise_keys: Sequence[int]) -> np.ndarray:
        """512-d unit vectors with reproducible per-item noise keyed by ``noise_keys``."""
        clean = self.clean(texts)
        noise = np.stack(
            [np.random.default_rng([self._seed, int(k)]).standard_normal(EMBEDDING_DIM) for k in noise_keys]
        ).astype(np.float32)
        noisy = clean + self._noise * noise / np.sqrt(EMBEDDING_DIM)
        return _normalise(noisy)


def _normalise(vecs: np.ndarray) -> np.ndarray:
    out = np.asarray(vecs, dtype=np.float32)
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
