"""Ingestion: parse files (skipping bad ones with a per-file error), embed new chunks, swap in a new version.

Updates are incremental: the new version copies the live version's chunks and
vectors (no re-embedding), drops replaced or deleted documents, appends the
new ones and rebuilds BM25. Everything happens in a temporary folder; the
live index changes only at the final atomic swap.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from core.config.kb import KBSettings
from core.embed import Embedder
from core.errors import DocumentError, IndexStateError
from core.kb.index.builder import IndexBuilder, kb_dir, kb_lock
from core.kb.index.recover import Salvaged, open_for_update
from core.kb.parse.guidelines import parse_guideline
from core.kb.parse.registry import GUIDELINE_SUFFIXES
from core.kb.parse.sandbox import parse_isolated
from core.kb.parse.sources import SourceItem, iter_sources
from core.kb.parse.spl import parse_spl
from core.kb.parse.tokens import TokenCounter
from core.kb.specs import kb_spec
from core.kb.types import Document, FileError
from core.progress import StageProgress

__all__ = [
    "PARSERS",
    "PARSER_VERSION",
    "SPEC_KEYS",
    "IngestReport",
    "apply_update",
    "index_spec",
    "parse_files",
    "upload_suffixes",
]

log = logging.getLogger(__name__)

SPEC_KEYS = ("encoder_id", "dim", "tokenizer_id", "chunk_tokens", "chunk_overlap", "spl_section_tokens",
             "header_in_index", "bm25_stemmer")  # fmt: skip

_CARRIED = ("demo_fingerprint", "demo_docs")  # manifest keys that survive an update

# Bump when parsing or chunking changes what an index holds: demo KBs built by older code are rebuilt.
# 4: guideline table rows (Markdown, HTML) stay lines of their own in chunks.
PARSER_VERSION = 4

Parser = Callable[[bytes, str, str, KBSettings, TokenCounter], Document]
PARSERS: dict[str, tuple[Parser, tuple[str, ...]]] = {
    "guideline": (parse_guideline, GUIDELINE_SUFFIXES),
    "spl": (parse_spl, (".xml",)),
}


def upload_suffixes(kb: str) -> tuple[str, ...]:
    """File suffixes the parsers of ``kb``'s document kinds read (``.md``, ..., ``.xml``), in registry order."""
    return tuple(s for kind in kb_spec(kb).kinds for s in PARSERS[kind][1])


@dataclass
class IngestReport:
    """What one ingestion did: documents added, chunks, skipped files with reasons, time."""

    kb: str
    docs: list[str] = field(default_factory=list)
    chunks_added: int = 0
    total_chunks: int = 0
    errors: list[FileError] = field(default_factory=list)
    seconds: float = 0.0
    flagged: list[str] = field(default_factory=list)  # uploads: instruction-like text kept out of answers

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form for the CLI."""
        return {
            "kb": self.kb,
            "docs_added": len(self.docs),
            "doc_ids": self.docs,
            "chunks_added": self.chunks_added,
            "total_chunks": self.total_chunks,
            "skipped": [{"source": e.source, "error": e.error} for e in self.errors],
            "flagged": self.flagged,
            "seconds": round(self.seconds, 3),
        }


def index_spec(embedder: Embedder, counter: TokenCounter, settings: KBSettings) -> dict[str, Any]:
    """The manifest fields that must match for an index to be re-used."""
    return {
        "encoder_id": embedder.model_id,
        "dim": int(embedder.dim),
        "tokenizer_id": counter.tokenizer_id,
        "chunk_tokens": settings.chunk_tokens,
        "chunk_overlap": settings.chunk_overlap,
        "spl_section_tokens": settings.spl_section_tokens,
        "header_in_index": settings.header_in_index,
        "bm25_stemmer": settings.bm25_stemmer,
    }


def parse_files(
    paths: Sequence[Path | str],
    kind: str,
    kb: str,
    settings: KBSettings,
    counter: TokenCounter,
    progress: StageProgress | None = None,
) -> tuple[list[Document], list[FileError]]:
    """Parse every document under ``paths``; bad files become :class:`FileError` entries, never exceptions.

    ``progress("parse", done, total)`` follows each file (core.progress)."""
    parser, suffixes = PARSERS[kind]
    docs: dict[str, Document] = {}
    errors: list[FileError] = []
    readable: list[SourceItem] = []
    for item in iter_sources(paths, suffixes, settings):
        if item.data is None:
            errors.append(FileError(item.name, item.error or "unreadable"))
        else:
            readable.append(item)
    parsed = parse_isolated(readable, parser, kb, settings, counter) if settings.parse_isolation else (
        _parse_here(item, parser, kb, settings, counter) for item in readable
    )  # fmt: skip
    if progress is not None:
        progress("parse", 0, len(readable))
    for n, (item, doc, error) in enumerate(tqdm(parsed, total=len(readable), desc=f"parse {kind}", unit="file",
                                                disable=not settings.progress), 1):  # fmt: skip
        if progress is not None:
            progress("parse", n, len(readable))
        if doc is None:
            errors.append(FileError(item.name, error or "unreadable"))
            log.warning("skipped %s", error)
        else:
            docs[doc.doc_id] = doc  # a later file with the same id (newer label version) wins
    return list(docs.values()), errors


def _parse_here(
    item: SourceItem, parser: Parser, kb: str, settings: KBSettings, counter: TokenCounter
) -> tuple[SourceItem, Document | None, str | None]:
    """Parse in this process (``kb.parse_isolation`` off)."""
    assert item.data is not None
    try:
        return item, parser(item.data, item.name, kb, settings, counter), None
    except DocumentError as exc:
        return item, None, str(exc)


def apply_update(
    root: Path,
    kb: str,
    embedder: Embedder,
    counter: TokenCounter,
    settings: KBSettings,
    add: Sequence[Document] = (),
    remove: frozenset[str] = frozenset(),
    fresh: bool = False,
    extra: dict[str, Any] | None = None,
    reembed: bool = False,
    progress: StageProgress | None = None,
    revise: Mapping[str, Mapping[str, Any]] | None = None,
) -> int:
    """Write a new version of ``kb``: the live one minus ``remove`` and replaced ids, plus ``add``.

    ``fresh`` ignores the live version. The demo markers of the live manifest (``demo_fingerprint``,
    ``demo_docs``) are carried over unless ``extra`` sets them. With ``reembed`` a live version built
    with other embedding settings is kept by re-embedding its chunks' text (the demo rebuild beside user
    documents); without it that is an :class:`IndexStateError`. ``progress("embed", done, total)`` follows
    each batch of new passages. ``revise`` (doc id -> chunk fields such as ``title``, ``organisation``,
    ``year``) rewrites those fields of a kept document's chunks and its title row in the same new
    version, keeping its vectors (a corrected identity, core.kb.docidentity). Returns the new chunk count.
    """
    with kb_lock(root, kb):  # read-modify-swap: a concurrent update waits, so none is lost
        return _apply_update(root, kb, embedder, counter, settings, add, remove, fresh, extra, reembed, progress,
                             revise or {})  # fmt: skip


def _apply_update(
    root: Path,
    kb: str,
    embedder: Embedder,
    counter: TokenCounter,
    settings: KBSettings,
    add: Sequence[Document],
    remove: frozenset[str],
    fresh: bool,
    extra: dict[str, Any] | None,
    reembed: bool,
    progress: StageProgress | None,
    revise: Mapping[str, Mapping[str, Any]],
) -> int:
    spec = index_spec(embedder, counter, settings)
    drop = set(remove) | {d.doc_id for d in add}
    # A damaged live version is recovered, not refused: this is the command its error hint names.
    old = None if fresh else open_for_update(root, kb, settings)
    stale = isinstance(old, Salvaged)  # its vectors are not trusted: embed its chunks' text again
    if old is not None:
        extra = {**{k: old.manifest[k] for k in _CARRIED if k in old.manifest}, **(extra or {})}
        try:
            kb_dir(root, kb).check_spec(
                old.manifest,
                {k: spec[k] for k in SPEC_KEYS},
                hint="Rebuild it (`python -m core kb build`, or ingest again with --rebuild).",
            )
        except IndexStateError:
            if not reembed:
                old.close()
                raise
            stale = True

    def vectors(batch: list[Any]) -> Any:
        if stale:  # built by other embedding settings: embed the kept text again
            return embedder.embed_passages([c.index_text(settings.header_in_index) for _, c in batch])
        return old.vectors_at([p for p, _ in batch])  # type: ignore[union-attr]

    with IndexBuilder(root, kb, spec, settings) as builder:
        if old is not None:
            batch: list[Any] = []
            for pos, chunk in old.store.iter_chunks():
                if chunk.doc_id not in drop:
                    fields = revise.get(chunk.doc_id)
                    batch.append((pos, dataclasses.replace(chunk, **fields) if fields else chunk))
                if len(batch) >= (settings.embed_batch if stale else 4096):
                    builder.add([c for _, c in batch], vectors(batch))
                    batch = []
            if batch:
                builder.add([c for _, c in batch], vectors(batch))
            for doc in old.store.docs():
                if doc[0] not in drop:
                    title = revise.get(doc[0], {}).get("title", doc[2])
                    builder.add_document((doc[0], doc[1], title, doc[3], doc[4]),
                                         {n: k for n, k, _ in old.store.names(doc[0])})  # fmt: skip
            old.close()
        chunks = [c for d in add for c in d.chunks]
        bar = tqdm(total=len(chunks), desc=f"embed kb_{kb}", unit="chunk", disable=not settings.progress)
        if progress is not None:
            progress("embed", 0, len(chunks))
        for start in range(0, len(chunks), settings.embed_batch):
            part = chunks[start : start + settings.embed_batch]
            builder.add(part, embedder.embed_passages([c.index_text(settings.header_in_index) for c in part]))
            bar.update(len(part))
            if progress is not None:
                progress("embed", start + len(part), len(chunks))
        bar.close()
        for d in add:
            builder.add_document((d.doc_id, d.source, d.title, d.sha256, len(d.chunks)), d.names)
        builder.commit(extra)
        return builder.count
