"""What an import reads: files, folders (recursively) and zip archives, checked against the limits first.

Zip members are read by index with a byte cap, never extracted by name (no path
traversal), and their declared sizes are summed before anything is read, so a
zip bomb is refused from its directory. The display name of a file is its path
relative to what the user gave; it appears in error messages to that user only,
never in logs or the audit row (folder names often carry patient names).
"""

from __future__ import annotations

import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.config.imaging import ImagingSettings
from core.errors import ImageRejectedError

__all__ = ["Source", "check_limits", "collect_sources"]

_SKIP = {".DS_Store", "DICOMDIR", "Thumbs.db"}


@dataclass(frozen=True)
class Source:
    """One file to import: a display name, its size and a reader."""

    name: str
    size: int
    read: Callable[[], bytes]


def _file_source(path: Path, name: str) -> Source:
    return Source(name, path.stat().st_size, path.read_bytes)


def _zip_sources(path: Path, limits: ImagingSettings) -> list[Source]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise ImageRejectedError(f"{path.name}: not a readable zip archive ({exc})") from exc
    cap = limits.max_file_mb * 1024 * 1024
    out = []
    for info in zf.infolist():
        if info.is_dir() or Path(info.filename).name in _SKIP or Path(info.filename).name.startswith("."):
            continue

        def read(info: zipfile.ZipInfo = info) -> bytes:
            with zf.open(info) as fh:  # read at most cap + 1 bytes: a member lying about its size is caught
                data = fh.read(cap + 1)
            if len(data) > cap:
                raise ImageRejectedError(f"{path.name}:{info.filename}: over the {limits.max_file_mb} MB file limit")
            return data

        out.append(Source(f"{path.name}:{info.filename}", info.file_size, read))
    return out


def collect_sources(paths: list[Path], limits: ImagingSettings) -> list[Source]:
    """Every file under ``paths`` (zip archives opened), refused as a whole when over a limit."""
    sources: list[Source] = []
    for path in paths:
        if not path.exists():
            raise ImageRejectedError(f"{path}: no such file or folder", hint="Check the path; nothing was imported.")
        if path.is_dir():
            for f in sorted(p for p in path.rglob("*") if p.is_file()):
                if f.name in _SKIP or f.name.startswith("."):
                    continue
                if f.suffix.lower() == ".zip":
                    sources.extend(_zip_sources(f, limits))
                else:
                    sources.append(_file_source(f, str(f.relative_to(path))))
        elif path.suffix.lower() == ".zip":
            sources.extend(_zip_sources(path, limits))
        else:
            sources.append(_file_source(path, path.name))
    check_limits(sources, limits)
    return sources


def check_limits(sources: list[Source], limits: ImagingSettings) -> None:
    """Refuse ``sources`` as a whole when empty or over a file-count, file-size or study-size limit."""
    if not sources:
        raise ImageRejectedError("No files to import", hint="Give DICOM files, a folder of them or a zip archive.")
    if len(sources) > limits.max_files:
        raise ImageRejectedError(f"{len(sources)} files is over the {limits.max_files}-file limit of one import")
    too_big = [s for s in sources if s.size > limits.max_file_mb * 1024 * 1024]
    if too_big:
        raise ImageRejectedError(f"{too_big[0].name}: over the {limits.max_file_mb} MB file limit")
    total = sum(s.size for s in sources)
    if total > limits.max_study_mb * 1024 * 1024:
        raise ImageRejectedError(
            f"The import holds {total / 1e6:.0f} MB (uncompressed), over the {limits.max_study_mb} MB study limit",
            hint="Split the study into smaller imports or raise imaging.max_study_mb; nothing was imported.",
        )
