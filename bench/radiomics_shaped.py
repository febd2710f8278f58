"""Vectors shaped like the radiomics encoder's, at any count: the 1M-case search benchmark's second data kind.

The default image encoder (``core.imaging.radiomics``) projects 84 weighted radiomics features
into the 512-d index space with a fixed orthonormal matrix, so every stored vector lies in one
84-d subspace, and the demo bank's cases sit very close together (median cosine to the nearest
other case about 0.998 on the 5,000 demo scans). HNSW with 8-bit codes is harder there than on
the clustered synthetic vectors: the gaps between a query's true top five are a few thousandths
of a cosine. This module grows a stored bank (``vectors.npy`` of a built case index) to ``n``
vectors that keep its subspace and local structure:

* each new vector starts at a random bank case ``i``, moves a uniform fraction of the way toward
  one of ``i``'s ten nearest bank neighbours (staying on the bank's manifold), and takes a small
  isotropic jitter inside the subspace (``JITTER`` relative);
* each query is a stored vector plus a jitter of ``QUERY_JITTER`` relative (cosine about 0.999 to
  its source, about the distance between a demo case and its nearest other case: a new scan of a
  known look-alike).

Vectors are returned unit-norm float32, 512-d, as the index stores them.
"""

from __future__ import annotations

import glob
from pathlib import Path

import numpy as np

JITTER = 0.02  # relative isotropic jitter inside the subspace
NEIGHBOURS = 10
QUERY_JITTER = 0.05


def find_bank(root: Path) -> Path:
    """The ``vectors.npy`` of the newest built case index under ``root/indexes/cases`` (run ``core setup`` first)."""
    found = sorted(
        glob.glob(str(root / "indexes" / "cases" / "v-*" / "vectors.npy")), key=lambda p: Path(p).stat().st_mtime
    )
    if not found:
        raise SystemExit(f"no built case index under {root / 'indexes' / 'cases'}: run `python -m core setup` first")
    return Path(found[-1])


class Shaper:
    """Draws vectors on the manifold of a bank of stored unit vectors."""

    def __init__(self, bank: np.ndarray, rng: np.random.Generator) -> None:
        self.bank = np.asarray(bank, np.float32)
        self.rng = rng
        _, sing, vt = np.linalg.svd(self.bank, full_matrices=False)
        rank = int((sing > sing[0] * 1e-4).sum())
        self.basis = vt[:rank]  # rank x 512: the subspace the bank spans
        sims = self.bank @ self.bank.T
        np.fill_diagonal(sims, -np.inf)
        self.near = np.argpartition(-sims, NEIGHBOURS, axis=1)[:, :NEIGHBOURS]

    @property
    def rank(self) -> int:
        """Dimension of the bank's subspace (84 for the radiomics encoder)."""
        return len(self.basis)

    def _move(self, src: np.ndarray, reach: float) -> np.ndarray:
        pick = self.near[src, self.rng.integers(0, NEIGHBOURS, len(src))]
        u = self.rng.random((len(src), 1), dtype=np.float32) * reach
        x = self.bank[src] + u * (self.bank[pick] - self.bank[src])
        jitter = self.rng.standard_normal((len(src), self.rank), dtype=np.float32) @ self.basis
        x += jitter * (JITTER / np.sqrt(self.rank))
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)

    def cases(self, n: int, block: int = 100_000) -> np.ndarray:
        """``n`` stored-case vectors."""
        out = np.empty((n, self.bank.shape[1]), np.float32)
        for s in range(0, n, block):
            e = min(n, s + block)
            out[s:e] = self._move(self.rng.integers(0, len(self.bank), e - s), 1.0)
        return out

    def queries(self, stored: np.ndarray) -> np.ndarray:
        """One query per row of ``stored``: a new scan of that case's look-alike."""
        jitter = self.rng.standard_normal((len(stored), self.rank), dtype=np.float32) @ self.basis
        x = stored + jitter * (QUERY_JITTER / np.sqrt(self.rank))
        return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
