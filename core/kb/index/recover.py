"""Open the live version of a knowledge base for an update, recovering what a damaged version still holds.

A damaged version (a file that no longer matches its manifest checksum or size, an unreadable
FAISS or BM25 file) is refused when it is read for a search. The commands its error hint names
(``kb build``, ``kb build --force``, ``kb ingest-guidelines|ingest-spl``, ``kb docs reingest``)
all write a new version through :func:`core.kb.index.ingest.apply_update`, which opens the live
one with :func:`open_for_update` instead of refusing:

- the chunk store (``docstore.sqlite``) intact: every chunk, document and drug name is kept
  and its vectors are embedded again from the stored text (the vectors or indexes may be the
  damaged part, so none of them is reused);
- the chunk store or the manifest damaged too: nothing of the old version is trusted; the new
  version holds what the command adds (the demo sources, the kept originals of a space, the
  files named), and the documents that could not be kept are logged by id and source.

Either way the damaged version is replaced by the swap, never repaired in place.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.artifacts import MANIFEST, file_sha256
from core.config.kb import KBSettings
from core.errors import IndexStateError
from core.kb.index.builder import kb_dir
from core.kb.index.docstore import DocStore
from core.kb.index.reader import KBIndex, open_index

__all__ = ["Salvaged", "open_for_update"]

log = logging.getLogger(__name__)
_STORE = "docstore.sqlite"


@dataclass
class Salvaged:
    """What survives of a damaged version: its manifest and its intact chunk store (no vectors)."""

    manifest: dict[str, Any]
    store: DocStore
    damaged: list[str] = field(default_factory=list)

    def close(self) -> None:
        """Close the chunk store."""
        self.store.close()


def _damaged_files(folder: Path, manifest: dict[str, Any]) -> list[str]:
    """The files listed in ``manifest`` that are missing or no longer match their size or sha256."""
    bad = []
    for rel, entry in (manifest.get("files") or {}).items():
        size, digest = (None, entry) if isinstance(entry, str) else (entry.get("size"), entry.get("sha256"))
        path = folder / rel
        if not path.is_file() or (size is not None and path.stat().st_size != size) or file_sha256(path) != digest:
            bad.append(rel)
    return bad


def _listed_docs(path: Path) -> list[tuple[str, str]]:
    """``(doc_id, source)`` of the documents a damaged store still lists, for the log (empty when unreadable)."""
    with contextlib.suppress(sqlite3.Error, OSError):
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return [(str(a), str(b)) for a, b in db.execute("SELECT doc_id, source FROM docs")]
        finally:
            db.close()
    return []


def open_for_update(root: Path, kb: str, settings: KBSettings) -> KBIndex | Salvaged | None:
    """The live version of ``kb`` to build the next one from.

    A healthy version opens as a :class:`KBIndex`; a damaged one as :class:`Salvaged` (its chunk
    store intact: re-embed its text) or ``None`` (nothing trustworthy: start empty). No live
    version at all is ``None`` too.
    """
    versions = kb_dir(root, kb)
    if not versions.exists():
        return None
    try:
        return open_index(root, kb, settings)
    except IndexStateError as exc:
        refused = exc
    folder = Path(os.path.realpath(versions.link_path))
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        damaged = _damaged_files(folder, manifest) if isinstance(manifest, dict) else [MANIFEST]
    except (OSError, ValueError):
        manifest, damaged = None, [MANIFEST]
    if isinstance(manifest, dict) and _STORE not in damaged and (folder / _STORE).is_file():
        log.warning("kb_%s was damaged (%s: %s); rebuilding it from its intact chunk store, re-embedded",
                    kb, ", ".join(damaged) or "unreadable", refused)  # fmt: skip
        return Salvaged(manifest, DocStore(folder / _STORE), damaged)
    lost = _listed_docs(folder / _STORE)
    log.warning("kb_%s was damaged beyond its chunk store (%s); starting it again from what this command adds. "
                "Documents it held, to ingest again if not among them: %s",
                kb, refused, ", ".join(f"{d} ({s})" for d, s in lost) or "unknown")  # fmt: skip
    return None
