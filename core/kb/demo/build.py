"""The demo knowledge bases, built from ``<assets_dir>/<kb.demo_subdir>/{guidelines,labels}``.

:func:`ensure_demo_kb` is idempotent: it fingerprints the source files and
every setting that shapes the index and rebuilds only what changed, so a
repeat call costs a few file hashes.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.artifacts import file_sha256
from core.errors import CasebookError
from core.kb.index.builder import FORMAT_VERSION, KIND, kb_link
from core.kb.index.ingest import PARSER_VERSION, PARSERS
from core.kb.specs import KB_SPECS

if TYPE_CHECKING:
    from core.kb.base import KnowledgeBase
    from core.kb.index.ingest import IngestReport
    from core.settings import Settings

__all__ = ["DEMO_SOURCES", "build_demo_kb", "demo_fingerprint", "ensure_demo_kb"]

log = logging.getLogger(__name__)

# Settings whose change makes a demo index stale.
_SHAPING = {"chunk_tokens", "chunk_overlap", "spl_section_tokens", "header_in_index", "bm25_stemmer",
            "ivf_min_chunks", "ivf_nlist"}  # fmt: skip

# kb name -> (sub-folder of the demo assets, document kind, file suffixes), for every KB with a demo source
DEMO_SOURCES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    s.name: (s.demo, s.kinds[0], PARSERS[s.kinds[0]][1]) for s in KB_SPECS if s.demo
}


def _demo_files(settings: Settings, kb: str) -> list[Path]:
    folder = settings.paths.resolve(settings.paths.assets_dir) / settings.kb.demo_subdir / DEMO_SOURCES[kb][0]
    suffixes = DEMO_SOURCES[kb][2]
    return (
        sorted(p for p in folder.glob("*") if p.is_file() and p.suffix.lower() in suffixes) if folder.is_dir() else []
    )


def demo_fingerprint(settings: Settings, kb: str) -> str:
    """Hash of the demo sources of ``kb`` and of the settings that shape its index."""
    payload: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "parser": PARSER_VERSION,
        "files": {p.name: file_sha256(p) for p in _demo_files(settings, kb)},
        # `options` only when set (an import-path backend's), so fingerprints from before that field stay valid.
        "embed": settings.embed.model_dump(
            mode="json", exclude={"threads", "batch_size"} | (set() if settings.embed.options else {"options"})
        ),
        "kb": settings.kb.model_dump(mode="json", include=_SHAPING),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _is_current(settings: Settings, kb: str, fingerprint: str) -> bool:
    root = settings.paths.resolve(settings.paths.index_dir)
    link = kb_link(root, kb)
    if not link.exists():
        return False
    try:
        # Checksums too (when kb.verify_checksums): a damaged version is never "current", so `kb build` rebuilds it.
        manifest = KIND.read(link.resolve(), verify=settings.kb.verify_checksums)
        return manifest.get("demo_fingerprint") == fingerprint
    except CasebookError:
        return False


def _demo_ids(settings: Settings, kb: str, files: list[Path]) -> frozenset[str]:
    """The documents of the live ``kb`` that came from the demo build (its manifest says; older ones by source)."""
    root = settings.paths.resolve(settings.paths.index_dir)
    link = kb_link(root, kb)
    if not link.exists():
        return frozenset()
    from core.kb.index.recover import open_for_update

    index = open_for_update(root, kb, settings.kb)  # a damaged version: what it still lists, or nothing
    if index is None:
        return frozenset()
    try:
        listed = index.manifest.get("demo_docs")
        if listed is not None:
            return frozenset(str(d) for d in listed)
        names = {str(p) for p in files} | {p.name for p in files}
        return frozenset(d[0] for d in index.store.docs() if d[1] in names or Path(d[1]).name in names)
    finally:
        index.close()


def build_demo_kb(settings: Settings, force: bool = False, base: KnowledgeBase | None = None) -> list[IngestReport]:
    """Rebuild the demo documents of each demo KB whose sources or settings changed (all with ``force``).

    Demo content is rebuilt beside anything else in the KB: documents a user ingested into
    ``guidelines`` or ``druglabels`` are kept (re-embedded if the embedding settings changed),
    and document spaces are never touched.
    """
    import time

    from core.kb.base import KnowledgeBase
    from core.kb.index.ingest import IngestReport, apply_update, parse_files

    reports = []
    for kb, (_, kind, _) in DEMO_SOURCES.items():
        files = _demo_files(settings, kb)
        if not files:
            log.warning("no demo sources for kb_%s under %s", kb, settings.paths.assets_dir)
            continue
        fingerprint = demo_fingerprint(settings, kb)
        if not force and _is_current(settings, kb, fingerprint):
            continue
        start = time.perf_counter()
        base = base or KnowledgeBase(settings)
        report = IngestReport(kb=kb)
        old_demo = _demo_ids(settings, kb, files)
        docs, report.errors = parse_files(files, kind, kb, settings.kb, base.token_counter)
        report.total_chunks = apply_update(
            base.root, kb, base.embedder, base.token_counter, settings.kb, add=docs, remove=old_demo, reembed=True,
            extra={"demo_fingerprint": fingerprint, "demo_docs": [d.doc_id for d in docs]},
        )  # fmt: skip
        report.docs = [d.doc_id for d in docs]
        report.chunks_added = sum(len(d.chunks) for d in docs)
        report.seconds = time.perf_counter() - start
        for err in report.errors:
            log.warning("demo kb_%s: skipped %s: %s", kb, err.source, err.error)
        reports.append(report)
    return reports


def ensure_demo_kb(settings: Settings) -> None:
    """Build or refresh the demo knowledge bases when missing or stale (fast when up to date)."""
    build_demo_kb(settings)
