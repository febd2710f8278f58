"""The work folder of an unfinished corpus ingestion: the ids seen so far and the shard being written.

Both are durable at every checkpoint of :mod:`core.kb.corpus.build`, so an
interrupted ingestion resumes from its last checkpoint: the id set
(``ids.sqlite``: id, position, line) catches duplicate ids across the whole
corpus, and :meth:`OpenShard.rewind` drops the rows written after the
checkpoint.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

from core.kb.corpus.layout import shard_files
from core.kb.corpus.records import CorpusRecord
from core.kb.corpus.vectors import VectorWriter
from core.kb.index.docstore import DocStoreWriter

__all__ = ["OpenShard", "SeenIds"]


class SeenIds:
    """Every id seen so far with its position and line (duplicate check across the whole corpus)."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(path)
        self._db.executescript(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
            "CREATE TABLE IF NOT EXISTS ids (id TEXT PRIMARY KEY, pos INTEGER, line INTEGER) WITHOUT ROWID;"
        )

    def duplicates(self, records: Sequence[CorpusRecord]) -> dict[int, int]:
        """``{index in records: line where the id first appeared}`` for ids seen before (or earlier in the batch)."""
        first: dict[str, int] = {}
        out: dict[int, int] = {}
        for i, rec in enumerate(records):
            if rec.id in first:
                out[i] = first[rec.id]
            else:
                first[rec.id] = rec.line
        ids = list(first)
        for start in range(0, len(ids), 500):
            part = ids[start : start + 500]
            rows = self._db.execute(f"SELECT id, line FROM ids WHERE id IN ({','.join('?' * len(part))})", part)
            for rid, line in rows:
                out[next(i for i, r in enumerate(records) if r.id == rid)] = int(line)
        return out

    def add(self, records: Sequence[CorpusRecord], first_pos: int) -> None:
        """Record the ids of rows written at ``first_pos`` onwards."""
        self._db.executemany(
            "INSERT OR IGNORE INTO ids VALUES (?, ?, ?)", [(r.id, first_pos + i, r.line) for i, r in enumerate(records)]
        )

    def commit(self) -> None:
        """Commit the ids added."""
        self._db.commit()

    def truncate(self, count: int) -> None:
        """Forget ids at positions ``count`` or later."""
        self._db.execute("DELETE FROM ids WHERE pos >= ?", (count,))
        self._db.commit()

    def close(self) -> None:
        """Close the connection."""
        self._db.close()


class OpenShard:
    """The open shard being written: durable document store plus raw vector file."""

    def __init__(self, folder: Path, dim: int, dtype: str) -> None:
        folder.mkdir(exist_ok=True)
        store, vectors, _ = shard_files(dtype)
        self.store = DocStoreWriter(folder / store, durable=True)
        self.vectors = VectorWriter(folder / vectors, dim, dtype)

    def rewind(self, count: int) -> None:
        """Drop rows written after the last checkpoint."""
        self.store.truncate(count)
        self.vectors.truncate(count)

    def close(self) -> None:
        """Finish both files (the store is closed even when the vectors fail to flush)."""
        try:
            self.vectors.close()
        finally:
            self.store.close()
