"""Versioned artifacts on disk: build aside, commit with checksums, swap a symlink atomically, open with checks.

The similar-case index, the knowledge-base indexes and the corpora all live
in this shape (names per artifact; ``<link>`` is ``current``, ``kb_<kb>`` or
``corpus_<name>``)::

    <root>/<link> -> <prefix><version>/      symlink, swapped with os.replace
    <root>/<prefix><version>/manifest.json   format, version, what built it, size and sha256 of every file
    <root>/.<link>.<random>.tmp/             a build in progress (.<link>.resume.tmp/ when resumable)

A build writes its temporary folder, renames it into place and only then
repoints the symlink, so readers see the old version or the new one, never
a half-written one. A failed build removes its folder (a resumable one keeps
it to continue from) and the live version keeps serving; a full disk raises
:class:`~core.errors.DiskFullError` with a hint naming what still serves.
Opening a version checks its manifest format, every file's presence and size
and, when asked, its sha256; every failure is an
:class:`~core.errors.IndexStateError` carrying the artifact's rebuild hint.

    vdir = VersionedDir(root, "kb_user", KIND, prefix=".kb_user.v", what="Building kb_user", ...)
    with vdir.build() as b:          # .kb_user.<random>.tmp; removed on any error
        write_files(b.path)
        b.commit({"encoder_id": ...})  # manifest, rename, swap, old versions deleted
    folder, manifest = vdir.open(verify=True)
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import IndexStateError, disk_full_as_error

__all__ = ["MANIFEST", "ArtifactKind", "Build", "VersionedDir", "file_sha256", "write_faiss"]

MANIFEST = "manifest.json"
# Version ids: a content hash (the case index: the same inputs give the same version) or a time stamp.
_VERSION_ID = r"(?:[0-9a-f]{16}|\d{8}T\d{6}-[0-9a-f]{6})"


def _stamp() -> str:
    """A time-stamped version id: ``20261122T081500-3f2a9c``."""
    return f"{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:6]}"


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in 1 MiB blocks."""
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


@dataclass(frozen=True)
class ArtifactKind:
    """A family of versioned artifacts: its name in messages, manifest format and rebuild hint."""

    noun: str  # "Case index", "Index", "Corpus": starts every IndexStateError message
    format: int
    hint: str | None = None  # None: IndexStateError's own hint

    def error(self, message: str) -> IndexStateError:
        """An :class:`IndexStateError` with this kind's hint."""
        return IndexStateError(message, hint=self.hint)

    def read(self, folder: Path, *, verify: bool) -> dict[str, Any]:
        """The manifest of the version in ``folder`` after checking its files.

        Every listed file must exist with its recorded size; with ``verify`` its
        sha256 must match too. Manifests that record a bare sha256 per file
        (written before sizes were recorded) are read as well.
        """
        try:
            manifest = json.loads((folder / MANIFEST).read_text())
        except (OSError, ValueError) as exc:
            raise self.error(f"{self.noun} {folder.name}: missing or corrupt manifest ({exc})") from exc
        if not isinstance(manifest, dict) or manifest.get("format") != self.format:
            raise self.error(f"{self.noun} {folder.name}: unknown manifest format")
        files = manifest.get("files")
        if not isinstance(files, dict):
            raise self.error(f"{self.noun} {folder.name}: the manifest lists no files")
        for rel, entry in files.items():
            if not isinstance(entry, str | dict):
                raise self.error(f"{self.noun} {folder.name}: the manifest entry of {rel} is unreadable")
            size, digest = (None, entry) if isinstance(entry, str) else (entry.get("size"), entry.get("sha256"))
            path = folder / rel
            if not path.is_file() or (size is not None and path.stat().st_size != size):
                raise self.error(f"{self.noun} {folder.name}: {rel} is missing or has the wrong size")
            if verify and file_sha256(path) != digest:
                raise self.error(f"{self.noun} {folder.name}: {rel} does not match its manifest checksum")
        return manifest


@dataclass(frozen=True)
class VersionedDir:
    """The versions of one artifact under ``root``, the live one named by the symlink ``root/link``.

    ``prefix`` starts every version folder's name; ``what``, ``serving`` and
    ``unbuilt`` word the :class:`DiskFullError` of a build ("<what>: no room
    left ...", hint "Free space under <root>; <serving or unbuilt>.").
    """

    root: Path
    link: str
    kind: ArtifactKind
    prefix: str
    what: str
    serving: str = "the previous version still serves"
    unbuilt: str = "nothing was swapped in"

    @property
    def link_path(self) -> Path:
        """The symlink naming the live version."""
        return self.root / self.link

    @property
    def resume_path(self) -> Path:
        """The folder of a resumable build (kept when it is interrupted, for the same command to continue)."""
        return self.root / f".{self.link}.resume.tmp"

    def exists(self) -> bool:
        """Whether a live version is named (the symlink resolves)."""
        return self.link_path.exists()

    def open(self, *, verify: bool) -> tuple[Path, dict[str, Any]]:
        """The live version's folder and checked manifest (see :meth:`ArtifactKind.read`)."""
        if not self.exists():
            raise self.kind.error(f"{self.kind.noun} {self.link}: nothing built under {self.root}")
        folder = Path(os.path.realpath(self.link_path))
        return folder, self.kind.read(folder, verify=verify)

    def check_spec(self, manifest: Mapping[str, Any], spec: Mapping[str, Any], *, hint: str | None = None) -> None:
        """Raise :class:`IndexStateError` when ``manifest`` records other values than ``spec`` for its keys.

        A version built with other settings is never silently reused.
        """
        diff = {k: (manifest.get(k), v) for k, v in spec.items() if manifest.get(k) != v}
        if diff:
            detail = "; ".join(f"{k}: index {a!r} vs now {b!r}" for k, (a, b) in diff.items())
            raise IndexStateError(
                f"{self.kind.noun} {self.link} was built with other settings ({detail})", hint=hint or self.kind.hint
            )

    def build(self, *, resumable: bool = False) -> Build:
        """Start a new version in a temporary folder (see :class:`Build`)."""
        return Build(self, resumable)

    def full_hint(self, *, resume_from: Path | None = None) -> str:
        """The :class:`DiskFullError` hint: where to free space, and whether the previous version serves."""
        state = self.serving if self.exists() else self.unbuilt
        if resume_from is None:
            return f"Free space under {self.root}; {state}."
        return (
            f"Free space under {self.root} and run the same command again to resume from the last checkpoint "
            f"(or delete {resume_from} to give it up); {state}."
        )

    def swap(self, target: Path) -> None:
        """Atomically point the link at ``target`` and delete this artifact's versions no longer named."""
        link = self.link_path
        if link.exists() and not link.is_symlink():  # a folder from before versioning: set aside, then deleted
            os.replace(link, self.root / f".{self.link}.legacy-{uuid.uuid4().hex[:6]}")
        tmp_link = self.root / f".{self.link}.link-{uuid.uuid4().hex[:6]}"
        os.symlink(target.name, tmp_link)
        os.replace(tmp_link, link)
        # Only this artifact's own versions: ".kb_user.*" would also match the space "user.u1" (".kb_user.u1.v...").
        own = re.compile(rf"{re.escape(self.prefix)}{_VERSION_ID}|\.{re.escape(self.link)}\.legacy-[0-9a-f]{{6}}")
        for old in self.root.iterdir():
            if old != target and own.fullmatch(old.name) and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)


class Build:
    """One version being written in a temporary folder (``path``); :meth:`commit` swaps it in.

    As a context manager: a full disk inside the block becomes
    :class:`DiskFullError`, and leaving the block without a commit (an error,
    or none at all) removes the folder, unless the build is resumable: then
    the folder stays for the same command to continue from (only
    :meth:`abort` removes it). Long-lived builders use :meth:`guard` around
    each write instead.
    """

    def __init__(self, vdir: VersionedDir, resumable: bool) -> None:
        self.vdir, self.resumable, self.committed = vdir, resumable, False
        self.path = vdir.resume_path if resumable else vdir.root / f".{vdir.link}.{uuid.uuid4().hex[:12]}.tmp"
        self._exit: contextlib.AbstractContextManager[None] | None = None
        with self.guard():
            vdir.root.mkdir(parents=True, exist_ok=True)
            self.path.mkdir(exist_ok=resumable)

    def guard(self) -> contextlib.AbstractContextManager[None]:
        """A block in which a full disk raises :class:`DiskFullError` (other errors pass unchanged)."""
        hint = self.vdir.full_hint(resume_from=self.path if self.resumable else None)
        return disk_full_as_error(self.vdir.root, self.vdir.what, hint)

    def __enter__(self) -> Build:
        self._exit = self.guard()
        self._exit.__enter__()
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool | None:
        if not self.committed and not self.resumable:
            self.abort()
        assert self._exit is not None
        return self._exit.__exit__(exc_type, exc, tb)

    def files(self) -> dict[str, dict[str, Any]]:
        """Size and sha256 of every file written so far, by path relative to the folder."""
        paths = sorted(p for p in self.path.rglob("*") if p.is_file() and p.name != MANIFEST)
        return {str(p.relative_to(self.path)): {"size": p.stat().st_size, "sha256": file_sha256(p)} for p in paths}

    def commit(self, manifest: Mapping[str, Any], *, version: Callable[[dict[str, Any]], str] | None = None) -> Path:
        """Write the manifest (plus format, files, version), rename the folder into place and swap the link.

        ``version`` computes the version id from the finished manifest (a content
        hash); the default is a time stamp with a random suffix. Returns the
        version's folder. Any failure removes the temporary folder.
        """
        with self.guard():
            try:
                full = {**manifest, "format": self.vdir.kind.format, "files": self.files()}
                full["version"] = version(full) if version else _stamp()
                (self.path / MANIFEST).write_text(json.dumps(full, indent=2, sort_keys=True))
                final = self.vdir.root / f"{self.vdir.prefix}{full['version']}"
                if final.exists():  # the same content built again
                    shutil.rmtree(final)
                os.replace(self.path, final)
            except BaseException:
                self.abort()
                raise
            self.committed = True
            self.vdir.swap(final)
        return final

    def abort(self) -> None:
        """Delete the temporary folder (files written in it must be closed first)."""
        shutil.rmtree(self.path, ignore_errors=True)
