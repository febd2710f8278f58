"""The chunk document store: one SQLite file per index version.

Chunk text and metadata live here, addressed by the chunk's position in the
vector index, so a search reads only the rows it returns and a corpus of tens
of millions of chunks is never loaded into memory. Readers open the file
read-only and immutable (no locks; a version is never written after it is
committed).
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

from core.kb.types import Chunk

__all__ = ["DocStore", "DocStoreWriter", "DocSummary"]

_SCHEMA = """
CREATE TABLE chunks (pos INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL, doc_id TEXT NOT NULL, data TEXT NOT NULL);
CREATE TABLE docs (doc_id TEXT PRIMARY KEY, source TEXT, title TEXT, sha256 TEXT, n_chunks INTEGER);
CREATE TABLE names (name TEXT NOT NULL, kind TEXT NOT NULL, doc_id TEXT NOT NULL);
"""
_INDEXES = (
    "CREATE INDEX IF NOT EXISTS names_name ON names(name); CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);"
)

DocSummary = tuple[str, str, str, str, int]  # doc_id, source, title, sha256, n_chunks


class DocStoreWriter:
    """Appends chunks, documents and drug names to a new store file."""

    def __init__(self, path: Path, *, durable: bool = False) -> None:
        """Create the store; ``durable`` reopens an existing file and makes every :meth:`commit` crash-safe.

        A durable writer (resumable corpus ingestion) journals its transactions,
        so an interruption loses only the rows since the last commit.
        """
        existing = durable and path.exists()
        self._db = sqlite3.connect(path)
        self._durable = durable
        pragmas = (
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
            if durable
            else "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
        )
        self._db.executescript(pragmas + ("" if existing else _SCHEMA))
        self.count = int(self._db.execute("SELECT COALESCE(MAX(pos) + 1, 0) FROM chunks").fetchone()[0])

    def commit(self) -> None:
        """Make the rows added so far permanent (they survive an interruption when ``durable``)."""
        self._db.commit()

    def truncate(self, count: int) -> None:
        """Drop every chunk at position ``count`` or later (rows written after the last checkpoint)."""
        self._db.execute("DELETE FROM chunks WHERE pos >= ?", (count,))
        self._db.commit()
        self.count = min(self.count, count)

    def add_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Append chunks; their positions continue from the last one."""
        rows = [
            (self.count + i, c.chunk_id, c.doc_id, json.dumps(c.to_json(), ensure_ascii=False))
            for i, c in enumerate(chunks)
        ]
        self._db.executemany("INSERT INTO chunks VALUES (?, ?, ?, ?)", rows)
        self.count += len(rows)

    def add_doc(self, doc: DocSummary, names: dict[str, str]) -> None:
        """Record one document and its drug names (name -> kind)."""
        self._db.execute("INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?, ?)", doc)
        self._db.executemany("INSERT INTO names VALUES (?, ?, ?)", [(n, k, doc[0]) for n, k in names.items()])

    def close(self) -> None:
        """Create the lookup indexes, commit and close."""
        self._db.executescript(_INDEXES)
        self._db.commit()
        if self._durable:  # fold the write-ahead log back in: readers open the file immutable
            self._db.execute("PRAGMA journal_mode=DELETE")
        self._db.close()


class DocStore:
    """Read-only access to a committed store."""

    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True, check_same_thread=False)
        self._lock = threading.Lock()  # one connection shared by the app's threads

    def get(self, positions: Sequence[int]) -> dict[int, Chunk]:
        """The chunks at ``positions`` (missing positions are absent from the result)."""
        out: dict[int, Chunk] = {}
        for start in range(0, len(positions), 500):
            part = [int(p) for p in positions[start : start + 500]]
            marks = ",".join("?" * len(part))
            with self._lock:
                rows = self._db.execute(f"SELECT pos, data FROM chunks WHERE pos IN ({marks})", part).fetchall()
            for pos, data in rows:
                out[pos] = Chunk.from_json(json.loads(data))
        return out

    def iter_chunks(self) -> Iterator[tuple[int, Chunk]]:
        """Every chunk in position order (streamed)."""
        for pos, data in self._db.execute("SELECT pos, data FROM chunks ORDER BY pos"):
            yield pos, Chunk.from_json(json.loads(data))

    def docs(self) -> list[DocSummary]:
        """Every document, ordered by id."""
        with self._lock:
            return list(self._db.execute("SELECT doc_id, source, title, sha256, n_chunks FROM docs ORDER BY doc_id"))

    def first_chunks(self) -> dict[str, Chunk]:
        """Each document's first chunk (its identity: title, issuer, year), by document id."""
        with self._lock:
            rows = self._db.execute(
                "SELECT doc_id, data FROM chunks WHERE pos IN (SELECT MIN(pos) FROM chunks GROUP BY doc_id)"
            ).fetchall()
        return {doc_id: Chunk.from_json(json.loads(data)) for doc_id, data in rows}

    def names(self, doc_id: str | None = None) -> list[tuple[str, str, str]]:
        """``(name, kind, doc_id)`` rows of the drug lexicon, optionally for one document."""
        with self._lock:
            if doc_id is None:
                return list(self._db.execute("SELECT name, kind, doc_id FROM names ORDER BY name"))
            return list(self._db.execute("SELECT name, kind, doc_id FROM names WHERE doc_id = ?", (doc_id,)))

    def close(self) -> None:
        """Close the connection."""
        self._db.close()
