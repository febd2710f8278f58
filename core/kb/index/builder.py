"""One knowledge-base index on disk: build aside, swap atomically, open with checks.

Layout under ``<index_dir>``::

    kb_guidelines -> .kb_guidelines.v20261122T081500-3f2a   (symlink, swapped with os.replace)
    .kb_guidelines.v20261122T081500-3f2a/
        manifest.json    encoder id, dimension, tokenizer, chunk settings, counts, sha256 of every file
        vectors.f32      raw float32 vectors, row = chunk position (re-used by incremental updates)
        dense.faiss      FAISS inner-product index (flat, or IVF-Flat above kb.ivf_min_chunks)
        bm25/            bm25s index over the same positions
        docstore.sqlite  chunk text and metadata (see core.kb.index.docstore)

A build writes a hidden temporary folder, renames it into place and only then
repoints the symlink, so readers see the old version or the new one, never a
half-written index. A failed build removes its folder and leaves the old
version serving; a full disk raises :class:`~core.errors.DiskFullError`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import sqlite3
import time
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.config.kb import KBSettings
from core.errors import IndexStateError, disk_full_as_error
from core.kb.index.docstore import DocStoreWriter, DocSummary
from core.kb.index.lexical import Bm25
from core.kb.types import Chunk

__all__ = [
    "FORMAT_VERSION",
    "MANIFEST",
    "IndexBuilder",
    "file_sha256",
    "kb_link",
    "kb_lock",
    "read_manifest",
    "swap_link",
    "write_faiss",
]

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
_REBUILD = "Rebuild it: `python -m core kb build` for the demo KBs, or ingest the documents again."


def kb_link(root: Path, kb: str) -> Path:
    """The symlink that names the live version of knowledge base ``kb``."""
    return root / f"kb_{kb}"


@contextlib.contextmanager
def kb_lock(root: Path, kb: str) -> Iterator[None]:
    """Hold the update lock of ``kb`` (an ``flock`` on ``locks/kb_<kb>.lock``: across threads and processes)."""
    import fcntl

    (root / "locks").mkdir(parents=True, exist_ok=True)
    with (root / "locks" / f"kb_{kb}.lock").open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MB blocks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_faiss(index: Any, path: Path) -> None:
    """Write a FAISS index to ``path`` through a Python file, so that a failed write raises ``OSError``.

    ``faiss.write_index(index, filename)`` ignores an error from its final ``fclose``: on a full
    disk the last buffered block is lost silently and a torn file would be checksummed and committed.
    """
    import faiss

    with path.open("wb") as fh:  # close() flushes and raises on failure
        faiss.write_index(index, faiss.PyCallbackIOWriter(fh.write))  # type: ignore[attr-defined]


def read_manifest(folder: Path) -> dict[str, Any]:
    """The manifest of an index version; :class:`IndexStateError` when missing or unreadable."""
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise IndexStateError(f"Index {folder.name}: missing or corrupt manifest ({exc})", hint=_REBUILD) from exc
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_VERSION:
        raise IndexStateError(f"Index {folder.name}: unknown manifest format", hint=_REBUILD)
    return manifest


class IndexBuilder:
    """Writes a new index version chunk by chunk, then commits it atomically.

    Use as a context manager: an exception inside the block removes the
    temporary folder and the live version stays untouched.
    """

    def __init__(self, root: Path, kb: str, spec: dict[str, Any], settings: KBSettings) -> None:
        self.root, self.kb, self.spec, self.settings = root, kb, spec, settings
        with self._disk_full():
            root.mkdir(parents=True, exist_ok=True)
            self.tmp = root / f".kb_{kb}.{uuid.uuid4().hex[:12]}.tmp"
            self.tmp.mkdir()
            try:
                self._store = DocStoreWriter(self.tmp / "docstore.sqlite")
                self._vectors = (self.tmp / "vectors.f32").open("wb")
            except BaseException:
                shutil.rmtree(self.tmp, ignore_errors=True)
                raise
        self._texts: list[str] = []
        self.n_docs = 0

    @contextlib.contextmanager
    def _disk_full(self) -> Iterator[None]:
        """Turn a full disk inside the block into :class:`~core.errors.DiskFullError`."""
        live = kb_link(self.root, self.kb).exists()
        previous = f"the previous version of kb_{self.kb} still serves" if live else f"kb_{self.kb} was not built"
        with disk_full_as_error(self.root, f"Building kb_{self.kb}", f"Free space under {self.root}; {previous}."):
            yield

    @property
    def count(self) -> int:
        """Chunks added so far."""
        return self._store.count

    def __enter__(self) -> IndexBuilder:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self.abort()

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray, texts: Sequence[str] | None = None) -> None:
        """Append chunks with their vectors (same order, L2-normalised float32).

        ``texts`` overrides the BM25 text (default: each chunk's index text).
        """
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if vecs.shape != (len(chunks), self.spec["dim"]):
            raise IndexStateError(f"vectors of shape {vecs.shape} for {len(chunks)} chunks of dim {self.spec['dim']}")
        with self._disk_full():
            self._store.add_chunks(chunks)
            self._vectors.write(vecs.tobytes())
        self._texts.extend(
            texts if texts is not None else [c.index_text(self.settings.header_in_index) for c in chunks]
        )

    def add_document(self, doc: DocSummary, names: dict[str, str]) -> None:
        """Record a document's summary row and drug names."""
        with self._disk_full():
            self._store.add_doc(doc, names)
        self.n_docs += 1

    def _dense(self, n: int, dim: int) -> Any:
        import faiss

        vecs = np.fromfile(self.tmp / "vectors.f32", dtype=np.float32).reshape(n, dim)
        index: Any
        if n >= self.settings.ivf_min_chunks:
            # FAISS wants >= 39 training points per list; small corpora get fewer lists.
            nlist = max(1, min(self.settings.ivf_nlist or int(np.sqrt(n)), n // 39))
            index = faiss.IndexIVFFlat(faiss.IndexFlatIP(dim), dim, nlist, faiss.METRIC_INNER_PRODUCT)
            rng = np.random.default_rng(0)
            sample = vecs[np.sort(rng.choice(n, size=min(n, nlist * 40), replace=False))]
            index.train(sample)
        else:
            index = faiss.IndexFlatIP(dim)
        for start in range(0, n, 65536):
            index.add(vecs[start : start + 65536])
        return index

    def commit(self, extra: dict[str, Any] | None = None) -> Path:
        """Finish the files, write the manifest, rename into place and swap the live symlink."""
        with self._disk_full():
            try:
                return self._commit(extra)
            except BaseException:
                self.abort()
                raise

    def _commit(self, extra: dict[str, Any] | None) -> Path:
        self._store.close()
        self._vectors.close()
        n, dim = self._store.count, int(self.spec["dim"])
        if n:
            write_faiss(self._dense(n, dim), self.tmp / "dense.faiss")
            Bm25.build(self._texts, self.tmp / "bm25", self.settings.bm25_stemmer, False)
        self._texts = []
        files = sorted(p for p in self.tmp.rglob("*") if p.is_file())
        manifest = {
            "format": FORMAT_VERSION,
            "kb": self.kb,
            **self.spec,
            "index_type": "ivf" if n >= self.settings.ivf_min_chunks else ("flat" if n else "empty"),
            "n_chunks": n,
            "n_docs": self.n_docs,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "files": {str(p.relative_to(self.tmp)): file_sha256(p) for p in files},
            **(extra or {}),
        }
        (self.tmp / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True))
        final = self.root / f".kb_{self.kb}.v{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"
        os.replace(self.tmp, final)
        swap_link(kb_link(self.root, self.kb), final)
        return final

    def abort(self) -> None:
        """Close and delete the temporary folder."""
        with contextlib.suppress(sqlite3.Error, OSError):
            self._store.close()
        with contextlib.suppress(OSError):  # a full disk fails the flush again; the file is closed regardless
            self._vectors.close()
        shutil.rmtree(self.tmp, ignore_errors=True)


def swap_link(link: Path, target: Path) -> None:
    """Atomically point ``link`` at ``target`` and delete versions no longer named."""
    if link.exists() and not link.is_symlink():
        os.replace(link, link.parent / f".{link.name}.legacy-{uuid.uuid4().hex[:6]}")
    tmp_link = link.parent / f".{link.name}.link-{uuid.uuid4().hex[:6]}"
    os.symlink(target.name, tmp_link)
    os.replace(tmp_link, link)
    # Only this KB's own versions: ".kb_user.*" would also match the space "user.u1" (".kb_user.u1.v...").
    own = re.compile(rf"\.{re.escape(link.name)}\.(v\d{{8}}T\d{{6}}-[0-9a-f]{{6}}|legacy-[0-9a-f]{{6}})")
    for old in link.parent.glob(f".{link.name}.*"):
        if old != target and own.fullmatch(old.name) and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
