"""A doctor's own document spaces: upload, list, delete and re-ingest, kept apart from the curated KBs.

Each doctor has a private space, knowledge base ``user.u<user id>`` (:func:`owner_key`),
and every doctor may also use the shared space ``user``. A space is an ordinary knowledge
base under ``paths.index_dir`` (same index format, same hybrid search), so answers fuse
its hits like any other; the demo build (``kb build``, ``core setup``, ``make run``) never
touches it. The uploaded originals are kept under ``<data_dir>/documents/<space>/`` so a
space can be re-ingested after a parser or model change without asking for the files again.

Uploads are checked against ``ui.max_upload_mb`` before anything is parsed, parsed in the
bounded worker (:mod:`core.kb.parse.sandbox`), shown by title and original file name (never a
temporary path), and serialised per space by the KB update lock.

Guideline QA calls :func:`doctor_spaces` to add the asking doctor's spaces to the curated
KBs of an in-domain question; ``scope="mine"`` searches the doctor's spaces only.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from core.errors import AccessDeniedError, InvalidInputError, NotFoundError
from core.kb.docrecord import with_identity
from core.kb.index.builder import kb_link
from core.kb.index.ingest import IngestReport, apply_update, parse_files, upload_suffixes
from core.kb.provenance import instruction_sentences, read_provenance, write_provenance
from core.kb.types import SPACE_PREFIX, Document, FileError

if TYPE_CHECKING:
    from core.kb.base import KnowledgeBase
    from core.progress import StageProgress
    from core.settings import Settings

__all__ = ["SHARED_SPACE", "UPLOAD_TYPES", "DocumentSpaces", "SpaceDocument", "doctor_spaces", "owner_key", "space_of"]

SHARED_SPACE = "user"
_KINDS = {".xml": "spl", ".zip": "spl"}  # everything else is a guideline document
# What an upload may be: every file type the parsers of a space's document kinds read, and zips of them.
UPLOAD_TYPES: tuple[str, ...] = (*(s.lstrip(".") for s in upload_suffixes(SHARED_SPACE)), "zip")


def owner_key(user_id: int) -> str:
    """The owner key of a signed-in doctor: ``u<user id>`` (an id, never a name)."""
    return f"u{int(user_id)}"


def space_of(owner: str) -> str:
    """The private space of ``owner`` (see :func:`owner_key`): ``user.<slug>``, hashed when the slug had to change."""
    slug = re.sub(r"[^a-z0-9_-]+", "-", owner.lower()).strip("-")[:48]
    if slug != owner or not slug:
        slug = f"{slug or 'doctor'}-{hashlib.sha256(owner.encode()).hexdigest()[:6]}"
    return SPACE_PREFIX + slug


def doctor_spaces(settings: Settings, owner: str, include_shared: bool = True) -> list[str]:
    """The spaces of ``owner`` that hold an index (own first, then shared): what QA should also search."""
    root = settings.paths.resolve(settings.paths.index_dir)
    names = [space_of(owner)] + ([SHARED_SPACE] if include_shared else [])
    return [kb for kb in names if kb_link(root, kb).exists()]


@dataclass(frozen=True)
class SpaceDocument:
    """One document as the UI lists it."""

    space: str
    shared: bool
    doc_id: str
    title: str
    file_name: str
    n_chunks: int
    uploader: str | None = None  # owner key of who uploaded it (core.kb.provenance)
    approved_by: str | None = None  # for the shared space: who approved sharing it
    flagged: int = 0  # instruction-like sentences kept out of answers
    issuer: str | None = None  # as extracted (core.kb.parse.identity) or corrected (core.kb.docidentity)
    year: int | None = None


def _safe_name(name: str) -> str:
    base = PurePath(name.replace("\\", "/")).name
    return re.sub(r"[^A-Za-z0-9._ -]+", "_", base)[:120] or "document"


class DocumentSpaces:
    """Per-doctor and shared document spaces on top of a :class:`~core.kb.base.KnowledgeBase`."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.settings = kb.settings
        self.files_root = self.settings.paths.resolve(self.settings.paths.data_dir) / "documents"

    def _space(self, owner: str, shared: bool) -> str:
        if not owner:
            raise AccessDeniedError("Sign in to use document spaces")
        return SHARED_SPACE if shared else space_of(owner)

    def upload(
        self,
        owner: str,
        files: Sequence[tuple[str, bytes]],
        shared: bool = False,
        progress: StageProgress | None = None,
    ) -> IngestReport:
        """Add ``(file name, bytes)`` documents to the doctor's own space (``progress``: core.progress).

        Files over ``ui.max_upload_mb`` are refused before parsing; bad files are listed in the
        report by their own name. The originals are kept for re-ingestion. Nothing is uploaded
        straight into the shared space: sharing is a request a second doctor approves
        (:class:`core.kb.provenance.Sharing`), so ``shared`` is refused.
        """
        if shared:
            raise AccessDeniedError(
                "Documents are not uploaded straight into the shared space",
                hint="Add it to your documents, then ask to share it; a second doctor approves the request.",
            )
        space = self._space(owner, False)
        limit = self.settings.ui.max_upload_mb * 1024 * 1024
        report = IngestReport(kb=space)
        folder = self.files_root / space
        folder.mkdir(parents=True, exist_ok=True)
        by_kind: dict[str, list[tuple[Path, str]]] = {}
        for name, data in files:
            shown = _safe_name(name)
            if len(data) > limit:
                report.errors.append(
                    FileError(shown, f"{shown}: larger than the {self.settings.ui.max_upload_mb} MB limit")
                )
                continue
            path = folder / hashlib.sha256(data).hexdigest()[:16] / shown  # the file keeps its own name
            path.parent.mkdir(exist_ok=True)
            path.write_bytes(data)
            by_kind.setdefault(self.kind_of(path), []).append((path, shown))
        for kind, items in by_kind.items():
            self.ingest_named(space, kind, items, report, uploader=owner, progress=progress)
        return report

    @staticmethod
    def kind_of(path: Path) -> str:
        """The document kind a kept original is parsed as (``spl`` for XML and zips, else ``guideline``)."""
        return _KINDS.get(path.suffix.lower(), "guideline")

    def ingest_named(
        self,
        space: str,
        kind: str,
        items: list[tuple[Path, str]],
        report: IngestReport,
        *,
        uploader: str | None = None,
        approved_by: str | None = None,
        progress: StageProgress | None = None,
        identities: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """Parse ``(path, name shown)`` files of ``kind`` into KB ``space``; sources are stored as the shown names.

        Instruction-like sentences are kept out of the indexed text and counted; who uploaded (and, for
        the shared space, who approved) is recorded in the space's provenance (core.kb.provenance).
        ``identities`` (doc id -> corrected title, issuer, year) is applied and kept (core.kb.docidentity).
        """
        shown = {str(p): name for p, name in items}
        docs, errors = parse_files(
            [p for p, _ in items], kind, space, self.settings.kb, self.kb.token_counter, progress
        )
        report.errors += [FileError(_shown_of(e.source, shown), e.error.replace(e.source, _shown_of(e.source, shown)))
                          for e in errors]  # fmt: skip
        docs = [_renamed(d, shown) for d in docs]
        flags = {d.doc_id: _without_instructions(d) for d in docs}
        ids = identities or {}
        docs = [with_identity(flags[d.doc_id][0], ids.get(d.doc_id)) for d in docs]
        for d in docs:
            kept = {"identity": ids[d.doc_id]} if ids.get(d.doc_id) else {}
            write_provenance(self.files_root / space, d.doc_id, uploader=uploader, approved_by=approved_by,
                             flagged=flags[d.doc_id][1], **kept)  # fmt: skip
            if flags[d.doc_id][1]:
                report.flagged.append(
                    f"{d.source}: {flags[d.doc_id][1]} instruction-like sentence(s) kept out of answers"
                )
        if docs:
            report.total_chunks = apply_update(
                self.kb.root, space, self.kb.embedder, self.kb.token_counter, self.settings.kb, add=docs,
                progress=progress,
            )  # fmt: skip
        report.docs += [d.doc_id for d in docs]
        report.chunks_added += sum(len(d.chunks) for d in docs)

    def documents(self, owner: str, include_shared: bool = True) -> list[SpaceDocument]:
        """The doctor's documents (then the shared ones), by title."""
        out: list[SpaceDocument] = []
        for space in doctor_spaces(self.settings, owner, include_shared):
            known = read_provenance(self.files_root / space)
            store = self.kb.index(space).store
            first = store.first_chunks()
            for doc_id, source, title, _sha, n in store.docs():
                p, c = known.get(doc_id, {}), first.get(doc_id)
                out.append(SpaceDocument(space, space == SHARED_SPACE, doc_id, title or source, source, int(n),
                                         p.get("uploader"), p.get("approved_by"), int(p.get("flagged", 0)),
                                         c.organisation if c else None, c.year if c else None))  # fmt: skip
        return out

    def delete(self, owner: str, doc_id: str, shared: bool = False) -> int:
        """Remove one document (and its kept original) from the doctor's space or the shared one."""
        space = self._space(owner, shared)
        if not kb_link(self.kb.root, space).exists():
            raise NotFoundError(f"No document {doc_id!r} in your documents")
        docs = {d[0]: d for d in self.kb.index(space).store.docs()}
        if doc_id not in docs:
            raise NotFoundError(f"No document {doc_id!r} in your documents", hint="Reload the list and try again.")
        apply_update(self.kb.root, space, self.kb.embedder, self.kb.token_counter, self.settings.kb,
                     remove=frozenset({doc_id}))  # fmt: skip
        kept = self.files_root / space / str(docs[doc_id][3])[:16]
        if kept.is_dir():
            shutil.rmtree(kept, ignore_errors=True)
        return int(docs[doc_id][4])

    def reingest(self, owner: str, shared: bool = False, progress: StageProgress | None = None) -> IngestReport:
        """Parse the kept originals of a space again and rebuild it (after a parser or embedding change)."""
        space = self._space(owner, shared)
        folder = self.files_root / space
        originals = sorted(p for p in folder.glob("*/*") if p.is_file()) if folder.is_dir() else []
        if not originals:
            raise InvalidInputError("There are no kept documents to re-ingest in this space")
        report = IngestReport(kb=space)
        by_kind: dict[str, list[tuple[Path, str]]] = {}
        for path in originals:
            by_kind.setdefault(self.kind_of(path), []).append((path, path.name))
        docs: list[Document] = []
        for kind, items in by_kind.items():
            shown = {str(p): name for p, name in items}
            parsed, errors = parse_files(
                [p for p, _ in items], kind, space, self.settings.kb, self.kb.token_counter, progress
            )
            corrected = read_provenance(folder)  # an identity the owner corrected (core.kb.docidentity) stays
            docs += [with_identity(_without_instructions(_renamed(d, shown))[0], corrected.get(d.doc_id, {}).get("identity"))
                     for d in parsed]  # fmt: skip
            report.errors += [FileError(_shown_of(e.source, shown), e.error) for e in errors]
        report.total_chunks = apply_update(self.kb.root, space, self.kb.embedder, self.kb.token_counter,
                                           self.settings.kb, add=docs, fresh=True, progress=progress)  # fmt: skip
        report.docs = [d.doc_id for d in docs]
        report.chunks_added = sum(len(d.chunks) for d in docs)
        return report


def _without_instructions(doc: Document) -> tuple[Document, int]:
    """The document with instruction-like sentences taken out of its chunks' text, and how many there were."""
    chunks, flagged = [], 0
    for c in doc.chunks:
        found = instruction_sentences(c.text)
        text = c.text
        for sentence in found:
            text = text.replace(sentence, " ")
        flagged += len(found)
        chunks.append(dataclasses.replace(c, text=re.sub(r"[ \t]{2,}", " ", text).strip()) if found else c)
    return (Document(doc.doc_id, doc.source, doc.title, doc.sha256, chunks, doc.names) if flagged else doc), flagged


def _shown_of(source: str, shown: dict[str, str]) -> str:
    head = source.split("!", 1)[0]  # a zip member is "archive.zip!member.xml"
    return source.replace(head, shown.get(head, PurePath(head).name), 1)


def _renamed(doc: Document, shown: dict[str, str]) -> Document:
    """The document with its stored source set to the original file name, never the kept path."""
    source = _shown_of(doc.source, shown)
    title = doc.title
    if title == PurePath(doc.source).stem:  # a title that fell back to the kept file's name
        title = PurePath(source).stem
    chunks = [dataclasses.replace(c, source=source if c.source == doc.source else c.source, title=title)
              for c in doc.chunks]  # fmt: skip
    return Document(doc.doc_id, source, title, doc.sha256, chunks, doc.names)
