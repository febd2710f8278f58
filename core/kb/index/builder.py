"""One knowledge-base index on disk: its versioned folder (core.artifacts) and the builder that writes one.

Layout under ``<index_dir>``::

    kb_guidelines -> .kb_guidelines.v20261122T081500-3f2a   (symlink, swapped with os.replace)
    .kb_guidelines.v20261122T081500-3f2a/
        manifest.json    encoder id, dimension, tokenizer, chunk settings, counts, size and sha256 of every file
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
import sqlite3
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from core.artifacts import ArtifactKind, VersionedDir, write_faiss
from core.config.kb import KBSettings
from core.errors import IndexStateError
from core.kb.index.docstore import DocStoreWriter, DocSummary
from core.kb.index.lexical import Bm25
from core.kb.types import Chunk

__all__ = ["FORMAT_VERSION", "KIND", "IndexBuilder", "kb_dir", "kb_hint", "kb_link", "kb_lock"]

FORMAT_VERSION = 1
KIND = ArtifactKind(
    "Index",
    FORMAT_VERSION,
    hint="Rebuild it: `python -m core kb build` for the demo KBs, or ingest the documents again.",
)


def kb_hint(kb: str) -> str:
    """The command that rebuilds ``kb`` when it is damaged: the demo build, or a space's kept originals.

    Every command named here recovers a damaged version (core.kb.index.recover; tests/test_kb_recovery.py).
    """
    if kb == "user" or kb.startswith("user."):
        owner = "--owner <your key u<id>> --shared" if kb == "user" else f"--owner {kb.removeprefix('user.')}"
        return f"Rebuild it from the kept originals: `python -m core kb docs reingest {owner}`."
    return str(KIND.hint)


def kb_dir(root: Path, kb: str) -> VersionedDir:
    """The versions of knowledge base ``kb`` under ``root`` (``<index_dir>``)."""
    kind = KIND if kb_hint(kb) == KIND.hint else ArtifactKind(KIND.noun, KIND.format, hint=kb_hint(kb))
    return VersionedDir(
        root, f"kb_{kb}", kind, prefix=f".kb_{kb}.v", what=f"Building kb_{kb}",
        serving=f"the previous version of kb_{kb} still serves", unbuilt=f"kb_{kb} was not built",
    )  # fmt: skip


def kb_link(root: Path, kb: str) -> Path:
    """The symlink that names the live version of knowledge base ``kb``."""
    return kb_dir(root, kb).link_path


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


class IndexBuilder:
    """Writes a new index version chunk by chunk, then commits it atomically.

    Use as a context manager: an exception inside the block (or leaving it
    without a commit) removes the temporary folder and the live version stays
    untouched. A full disk in any step raises :class:`~core.errors.DiskFullError`.
    """

    def __init__(self, root: Path, kb: str, spec: dict[str, Any], settings: KBSettings) -> None:
        self.root, self.kb, self.spec, self.settings = root, kb, spec, settings
        self._build = kb_dir(root, kb).build()
        self.tmp = self._build.path
        with self._build.guard():
            try:
                self._store = DocStoreWriter(self.tmp / "docstore.sqlite")
                self._vectors = (self.tmp / "vectors.f32").open("wb")
            except BaseException:
                self._build.abort()
                raise
        self._texts: list[str] = []
        self.n_docs = 0

    @property
    def count(self) -> int:
        """Chunks added so far."""
        return self._store.count

    def __enter__(self) -> IndexBuilder:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None or not self._build.committed:
            self.abort()

    def add(self, chunks: Sequence[Chunk], vectors: np.ndarray, texts: Sequence[str] | None = None) -> None:
        """Append chunks with their vectors (same order, L2-normalised float32).

        ``texts`` overrides the BM25 text (default: each chunk's index text).
        """
        vecs = np.ascontiguousarray(vectors, dtype=np.float32)
        if vecs.shape != (len(chunks), self.spec["dim"]):
            raise IndexStateError(f"vectors of shape {vecs.shape} for {len(chunks)} chunks of dim {self.spec['dim']}")
        with self._build.guard():
            self._store.add_chunks(chunks)
            self._vectors.write(vecs.tobytes())
        self._texts.extend(
            texts if texts is not None else [c.index_text(self.settings.header_in_index) for c in chunks]
        )

    def add_document(self, doc: DocSummary, names: dict[str, str]) -> None:
        """Record a document's summary row and drug names."""
        with self._build.guard():
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
        with self._build.guard():
            try:
                n = self._finish()
            except BaseException:
                self.abort()
                raise
            return self._build.commit({
                "kb": self.kb,
                **self.spec,
                "index_type": "ivf" if n >= self.settings.ivf_min_chunks else ("flat" if n else "empty"),
                "n_chunks": n,
                "n_docs": self.n_docs,
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                **(extra or {}),
            })  # fmt: skip

    def _finish(self) -> int:
        """Close the store and vectors and write the dense and BM25 indexes; returns the chunk count."""
        self._store.close()
        self._vectors.close()
        n, dim = self._store.count, int(self.spec["dim"])
        if n:
            write_faiss(self._dense(n, dim), self.tmp / "dense.faiss")
            Bm25.build(self._texts, self.tmp / "bm25", self.settings.bm25_stemmer, False)
        self._texts = []
        return n

    def abort(self) -> None:
        """Close and delete the temporary folder."""
        with contextlib.suppress(sqlite3.Error, OSError):
            self._store.close()
        with contextlib.suppress(OSError):  # a full disk fails the flush again; the file is closed regardless
            self._vectors.close()
        self._build.abort()
