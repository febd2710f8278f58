"""VersionedDir on a real file system: build aside, commit, swap, clean up, open with checks."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from core.artifacts import MANIFEST, ArtifactKind, VersionedDir, file_sha256
from core.errors import DiskFullError, IndexStateError

KIND = ArtifactKind("Thing", 3, hint="Build the thing again.")


def _vdir(root: Path, name: str = "a") -> VersionedDir:
    return VersionedDir(root, f"thing_{name}", KIND, prefix=f".thing_{name}.v", what=f"Building thing_{name}")


def _build(vdir: VersionedDir, text: str) -> Path:
    with vdir.build() as b:
        (b.path / "sub").mkdir()
        (b.path / "sub" / "data.txt").write_text(text)
        return b.commit({"spec": text})


def test_file_sha256_matches_hashlib_across_blocks(tmp_path: Path) -> None:
    path = tmp_path / "x.bin"
    path.write_bytes(b"x" * (9 << 20) + b"tail")  # nine whole 1 MiB blocks and a short one
    assert file_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest()


def test_commit_records_files_and_swaps_the_link_removing_old_versions(tmp_path: Path) -> None:
    vdir = _vdir(tmp_path)
    first = _build(vdir, "one")
    second = _build(vdir, "two")
    assert not first.exists() and vdir.link_path.resolve() == second
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["thing_a", second.name])  # no tmp, no link-tmp
    manifest = json.loads((second / MANIFEST).read_text())
    assert manifest["format"] == 3 and manifest["spec"] == "two" and second.name == f".thing_a.v{manifest['version']}"
    data = second / "sub" / "data.txt"
    assert manifest["files"] == {"sub/data.txt": {"size": 3, "sha256": file_sha256(data)}}
    folder, opened = vdir.open(verify=True)
    assert folder == second and opened == manifest


def test_an_error_inside_the_build_removes_it_and_the_live_version_serves(tmp_path: Path) -> None:
    vdir = _vdir(tmp_path)
    live = _build(vdir, "one")
    with pytest.raises(ValueError), vdir.build() as b:
        (b.path / "half").write_text("x")
        raise ValueError("parser failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["thing_a", live.name])
    with vdir.build():  # left without a commit: removed too
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["thing_a", live.name])


def test_a_full_disk_becomes_disk_full_error_and_a_resumable_build_keeps_its_folder(tmp_path: Path) -> None:
    vdir = _vdir(tmp_path)
    with pytest.raises(DiskFullError) as full, vdir.build():
        raise OSError(27, "File too large")
    assert full.value.hint == f"Free space under {tmp_path}; nothing was swapped in."
    live = _build(vdir, "one")
    with pytest.raises(DiskFullError) as full, vdir.build(resumable=True) as b:
        (b.path / "state.json").write_text("{}")
        raise OSError(28, "No space left on device")
    assert str(b.path) in full.value.hint and full.value.hint.endswith("the previous version still serves.")
    assert (b.path / "state.json").is_file() and vdir.link_path.resolve() == live
    with vdir.build(resumable=True) as again:  # the same folder, continued
        assert (again.path / "state.json").is_file()
        again.abort()
    assert not b.path.exists()


def test_only_this_artifacts_versions_are_cleaned_and_a_legacy_folder_is_replaced(tmp_path: Path) -> None:
    other = _vdir(tmp_path, "a.u1")  # a name whose versions start like thing_a's
    kept = _build(other, "other")
    (tmp_path / "thing_a").mkdir()  # a plain folder where the link belongs
    vdir = _vdir(tmp_path)
    live = _build(vdir, "mine")
    assert vdir.link_path.is_symlink() and vdir.link_path.resolve() == live
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["thing_a", live.name, "thing_a.u1", kept.name])


def test_open_checks_presence_size_and_checksum(tmp_path: Path) -> None:
    vdir = _vdir(tmp_path)
    with pytest.raises(IndexStateError, match="nothing built") as err:
        vdir.open(verify=True)
    assert err.value.hint == "Build the thing again."
    live = _build(vdir, "abc")
    data = live / "sub" / "data.txt"
    data.write_text("abd")  # same size, other bytes
    vdir.open(verify=False)
    with pytest.raises(IndexStateError, match="does not match its manifest checksum"):
        vdir.open(verify=True)
    data.write_text("ab")
    with pytest.raises(IndexStateError, match="missing or has the wrong size"):
        vdir.open(verify=False)
    data.unlink()
    with pytest.raises(IndexStateError, match="missing or has the wrong size"):
        vdir.open(verify=False)
    (live / MANIFEST).write_text("{not json")
    with pytest.raises(IndexStateError, match="missing or corrupt manifest"):
        vdir.open(verify=False)
    (live / MANIFEST).write_text(json.dumps({"format": 2, "files": {}}))
    with pytest.raises(IndexStateError, match="unknown manifest format"):
        vdir.open(verify=False)
    (live / MANIFEST).write_text(json.dumps({"format": 3, "files": {"sub/data.txt": 7}}))
    with pytest.raises(IndexStateError, match=r"entry of sub/data\.txt is unreadable"):
        vdir.open(verify=False)
    (live / MANIFEST).write_text(json.dumps({"format": 3}))
    with pytest.raises(IndexStateError, match="lists no files"):
        vdir.open(verify=False)


def test_manifests_with_a_bare_sha256_per_file_are_read(tmp_path: Path) -> None:
    folder = tmp_path / "old"
    folder.mkdir()
    (folder / "x.bin").write_bytes(b"12345")
    (folder / MANIFEST).write_text(json.dumps({"format": 3, "files": {"x.bin": file_sha256(folder / "x.bin")}}))
    assert KIND.read(folder, verify=True)["files"]["x.bin"]
    (folder / "x.bin").write_bytes(b"12346")
    with pytest.raises(IndexStateError, match="checksum"):
        KIND.read(folder, verify=True)


def test_content_versions_rebuild_in_place_and_check_spec_names_the_difference(tmp_path: Path) -> None:
    vdir = _vdir(tmp_path)
    with vdir.build() as b:
        (b.path / "f").write_text("same")
        first = b.commit({"k": 1}, version=lambda m: "0123456789abcdef")
    with vdir.build() as b:
        (b.path / "f").write_text("same")
        second = b.commit({"k": 1}, version=lambda m: "0123456789abcdef")
    assert first == second and os.readlink(vdir.link_path) == first.name
    manifest = vdir.open(verify=True)[1]
    vdir.check_spec(manifest, {"k": 1})
    with pytest.raises(IndexStateError, match=r"thing_a was built with other settings \(k: index 1 vs now 2\)"):
        vdir.check_spec(manifest, {"k": 2})
