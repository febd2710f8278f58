"""The knowledge-base facade: ingest, delete, stats, drug lexicon and search."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.embed import Embedder
from core.errors import InvalidInputError, NotFoundError
from core.kb.index.builder import kb_link
from core.kb.index.docstore import DocStore
from core.kb.index.ingest import IngestReport, apply_update, parse_files
from core.kb.index.reader import KBIndex
from core.kb.index.retriever import HybridRetriever
from core.kb.lexicon import DrugLexicon
from core.kb.parse.tokens import TokenCounter, make_token_counter
from core.kb.specs import KB_NAMES, kbs_for_kind
from core.kb.types import SPACE_PREFIX, Hit, SearchMode, is_kb_name
from core.progress import StageProgress

if TYPE_CHECKING:
    from core.settings import Settings

__all__ = ["KnowledgeBase"]


class KnowledgeBase:
    """Everything the app and the CLI do with knowledge bases.

    Search goes to ``retriever`` (a :class:`HybridRetriever` over the same
    ``index_dir``, built from ``settings`` unless one is passed in, so several
    users can share one set of open indexes and one embedder); the knowledge
    base adds ingestion, deletion, statistics and the drug lexicon.
    ``embedder`` and ``token_counter`` default to the ones ``settings.embed``
    selects; tests pass small real ones in.
    """

    def __init__(
        self,
        settings: Settings,
        embedder: Embedder | None = None,
        token_counter: TokenCounter | None = None,
        retriever: HybridRetriever | None = None,
    ) -> None:
        if retriever is not None and embedder is not None:
            raise ValueError("pass the embedder to the retriever, not beside it")
        self.settings = settings
        self.retriever = retriever if retriever is not None else HybridRetriever(settings, embedder)
        self._counter = token_counter

    @property
    def root(self) -> Path:
        """The folder holding every index (``settings.paths.index_dir``)."""
        return self.retriever.root

    @property
    def embedder(self) -> Embedder:
        """The passage and query embedder, the retriever's (built on first use)."""
        return self.retriever.embedder

    @property
    def token_counter(self) -> TokenCounter:
        """The embedding model's tokenizer (built on first use)."""
        if self._counter is None:
            self._counter = make_token_counter(self.settings.embed)
        return self._counter

    def index(self, kb: str) -> KBIndex:
        """The live index of ``kb`` (see :meth:`HybridRetriever.index`)."""
        return self.retriever.index(kb)

    def stored(self, kb: str) -> DocStore:
        """The document store of ``kb``'s live index version (:class:`~core.kb.protocols.GuidelineSources`)."""
        return self.index(kb).store

    def search(self, query: str, kb: str, top_k: int, mode: SearchMode = "hybrid") -> list[Hit]:
        """The ``top_k`` best chunks of ``kb`` for ``query``: the retriever's answer (:class:`Retriever`)."""
        return self.retriever.search(query, kb, top_k, mode)

    def close(self) -> None:
        """Close every index the retriever opened."""
        self.retriever.close()

    def ingest(
        self,
        paths: Sequence[Path | str],
        kind: str,
        kb: str,
        rebuild: bool = False,
        extra: dict[str, Any] | None = None,
        progress: StageProgress | None = None,
    ) -> IngestReport:
        """Parse ``paths`` (``kind`` ``guideline`` or ``spl``) into ``kb`` and swap in the new version.

        ``progress(stage, done, total)`` follows the files read and the passages embedded
        (:class:`core.progress.Eta` turns it into a bar with the time left).

        Bad files are listed in the report and skipped. With ``rebuild`` the
        new version holds only these documents. Nothing is written when no file
        parsed and ``rebuild`` is false.
        """
        allowed = kbs_for_kind(kind)
        if not is_kb_name(kb) or (kb not in allowed and not kb.startswith(SPACE_PREFIX)):
            raise InvalidInputError(f"{kind} documents go to {' or '.join(allowed)} or a document space, not {kb!r}")
        start = time.perf_counter()
        report = IngestReport(kb=kb)
        docs, report.errors = parse_files(paths, kind, kb, self.settings.kb, self.token_counter, progress)
        if docs or rebuild:
            report.total_chunks = apply_update(
                self.root, kb, self.embedder, self.token_counter, self.settings.kb, add=docs, fresh=rebuild,
                extra=extra, progress=progress,
            )  # fmt: skip
        report.docs = [d.doc_id for d in docs]
        report.chunks_added = sum(len(d.chunks) for d in docs)
        report.seconds = time.perf_counter() - start
        return report

    def ingest_guidelines(self, paths: Sequence[Path | str], kb: str = "guidelines") -> IngestReport:
        """Ingest Markdown, HTML and PDF guideline files, folders or zips."""
        return self.ingest(paths, "guideline", kb)

    def ingest_spl(self, paths: Sequence[Path | str], kb: str = "druglabels") -> IngestReport:
        """Ingest SPL XML files, folders, zips or DailyMed zips of zips."""
        return self.ingest(paths, "spl", kb)

    def delete(self, doc_id: str, kb: str = "user") -> int:
        """Remove one document from ``kb``; returns the chunks removed. :class:`NotFoundError` if absent."""
        index = self.index(kb)
        docs = {d[0]: d for d in index.store.docs()}
        if doc_id not in docs:
            raise NotFoundError(
                f"No document {doc_id!r} in kb_{kb}", hint="List documents with `python -m core kb stats --json`."
            )
        apply_update(self.root, kb, self.embedder, self.token_counter, self.settings.kb, remove=frozenset({doc_id}))
        return int(docs[doc_id][4])

    def drug_lexicon(self, kb: str = "druglabels") -> DrugLexicon:
        """Every proprietary, generic and ingredient name (and salt-free synonym) in ``kb``'s labels."""
        return DrugLexicon.from_rows(self.index(kb).store.names())

    def stats(self) -> dict[str, Any]:
        """Per knowledge base: whether it exists, its manifest summary and its documents."""
        out: dict[str, Any] = {}
        for kb in KB_NAMES:
            if not kb_link(self.root, kb).exists():
                out[kb] = {"exists": False}
                continue
            index = self.index(kb)
            m = index.manifest
            out[kb] = {
                "exists": True,
                "path": str(index.folder),
                "built_at": m["built_at"],
                "encoder_id": m["encoder_id"],
                "dim": m["dim"],
                "tokenizer_id": m["tokenizer_id"],
                "index_type": m["index_type"],
                "chunk_tokens": m["chunk_tokens"],
                "chunk_overlap": m["chunk_overlap"],
                "n_docs": m["n_docs"],
                "n_chunks": m["n_chunks"],
                "documents": [
                    {"doc_id": d[0], "source": d[1], "title": d[2], "n_chunks": d[4]} for d in index.store.docs()
                ],
            }
        return out
