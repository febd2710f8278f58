"""Input files from paths, folders, zips and DailyMed zips of zips, streamed without extracting to disk.

:func:`iter_sources` yields one :class:`SourceItem` per candidate document:
either its bytes or the reason it was skipped. Inner zips are read into
memory one at a time (a DailyMed label zip is a few MB) and never written out.
Zip bombs are refused by member size and compression ratio.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from core.config.kb import KBSettings

__all__ = ["SourceItem", "iter_sources"]


@dataclass(frozen=True)
class SourceItem:
    """One document's bytes (``data``) or why it could not be read (``error``)."""

    name: str
    data: bytes | None = None
    error: str | None = None


def _zip_members(
    zf: zipfile.ZipFile, label: str, suffixes: tuple[str, ...], settings: KBSettings, depth: int
) -> Iterator[SourceItem]:
    limit = int(settings.max_zip_member_mb * 1024 * 1024)
    for info in sorted(zf.infolist(), key=lambda i: i.filename):
        name = f"{label}!{info.filename}"
        lower = info.filename.lower()
        is_zip = lower.endswith(".zip")
        if info.is_dir() or not (is_zip or lower.endswith(suffixes)):
            continue  # images and other label attachments
        if info.file_size > limit:
            yield SourceItem(name, error=f"{name}: {info.file_size} bytes uncompressed is over the member limit")
            continue
        if info.compress_size and info.file_size / info.compress_size > settings.max_zip_ratio:
            yield SourceItem(name, error=f"{name}: compression ratio over {settings.max_zip_ratio:g} (zip bomb?)")
            continue
        try:
            with zf.open(info) as fh:
                data = fh.read(limit + 1)
        except (zipfile.BadZipFile, OSError, RuntimeError, EOFError, NotImplementedError) as exc:
            yield SourceItem(name, error=f"{name}: unreadable zip member ({exc})")
            continue
        if len(data) > limit:
            yield SourceItem(name, error=f"{name}: larger than its header says (over the member limit)")
        elif is_zip:
            yield from _open_zip(data, name, suffixes, settings, depth + 1)
        else:
            yield SourceItem(name, data=data)


def _open_zip(
    data: bytes | Path, label: str, suffixes: tuple[str, ...], settings: KBSettings, depth: int
) -> Iterator[SourceItem]:
    if depth > settings.max_zip_depth:
        yield SourceItem(label, error=f"{label}: zip nested deeper than {settings.max_zip_depth} levels")
        return
    try:
        zf = zipfile.ZipFile(io.BytesIO(data) if isinstance(data, bytes) else data)
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        yield SourceItem(label, error=f"{label}: not a readable zip archive ({exc})")
        return
    with zf:
        yield from _zip_members(zf, label, suffixes, settings, depth)


def _read_file(path: Path, settings: KBSettings) -> SourceItem:
    limit = int(settings.max_file_mb * 1024 * 1024)
    try:
        size = path.stat().st_size
        if size > limit:
            return SourceItem(str(path), error=f"{path}: {size} bytes is over the {limit}-byte file limit")
        return SourceItem(str(path), data=path.read_bytes())
    except OSError as exc:
        return SourceItem(str(path), error=f"{path}: cannot read ({exc.strerror or exc})")


def iter_sources(paths: Sequence[Path | str], suffixes: tuple[str, ...], settings: KBSettings) -> Iterator[SourceItem]:
    """Every document under ``paths`` whose name ends with one of ``suffixes`` (folders recursively, zips too).

    A file named explicitly is always yielded (a wrong type then fails in its
    parser with a clear message); inside folders and zips other files are
    skipped silently.
    """
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                lower = child.name.lower()
                if lower.endswith(".zip"):
                    yield from _open_zip(child, str(child), suffixes, settings, 1)
                elif lower.endswith(suffixes):
                    yield _read_file(child, settings)
        elif path.suffix.lower() == ".zip":
            yield from _open_zip(path, str(path), suffixes, settings, 1)
        elif path.exists():
            yield _read_file(path, settings)
        else:
            yield SourceItem(str(path), error=f"{path}: no such file or folder")
