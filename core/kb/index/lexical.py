"""BM25 (bm25s) over chunk text, with one tokenizer shared by indexing and querying."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from core.errors import ConfigError

__all__ = ["Bm25", "bm25_tokens"]


@lru_cache(maxsize=2)
def _stemmer(name: str) -> Any:
    if name == "none":
        return None
    try:
        import Stemmer
    except ImportError as exc:
        raise ConfigError(
            "BM25 stemming needs PyStemmer", hint="pip install PyStemmer==3.0.0, or set kb.bm25_stemmer=none"
        ) from exc
    return Stemmer.Stemmer(name)


def bm25_tokens(texts: Sequence[str], stemmer: str, progress: bool = False) -> list[list[str]]:
    """Lowercase word tokens, English stopwords removed, stemmed."""
    import bm25s

    out = bm25s.tokenize(
        list(texts), stopwords="en", stemmer=_stemmer(stemmer), return_ids=False, show_progress=progress
    )
    return [list(t) for t in out]


class Bm25:
    """A saved bm25s index, memory-mapped for reading."""

    def __init__(self, folder: Path, stemmer: str) -> None:
        import bm25s

        self._index = bm25s.BM25.load(str(folder), mmap=True, show_progress=False)
        self._stemmer = stemmer

    @staticmethod
    def build(texts: Sequence[str], folder: Path, stemmer: str, progress: bool) -> None:
        """Index ``texts`` (position i = chunk i) and save under ``folder``."""
        import bm25s

        logging.getLogger("bm25s").setLevel(logging.WARNING)  # bm25s sets its own logger to DEBUG
        index = bm25s.BM25()
        index.index(bm25_tokens(texts, stemmer, progress), show_progress=progress)
        index.save(str(folder))

    def search(self, query: str, n: int, total: int) -> list[tuple[int, float]]:
        """Up to ``n`` ``(position, score)`` pairs with a positive score, best first."""
        tokens = bm25_tokens([query], self._stemmer)[0]
        if not tokens or total == 0:
            return []
        docs, scores = self._index.retrieve([tokens], k=min(n, total), show_progress=False, n_threads=1)
        pairs = zip(np.asarray(docs[0]).tolist(), np.asarray(scores[0]).tolist(), strict=True)
        return [(int(d), float(s)) for d, s in pairs if s > 0]
