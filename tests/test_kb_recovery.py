"""Issue 26, class 8: a damaged knowledge base is recovered by the command its error hint names.

Eight bytes are overwritten in one file of a live index (every file of its manifest, at offsets
drawn from a seeded generator, and the manifest itself). Searching then refuses the index with an
:class:`IndexStateError` whose hint names a command; that command, run as a user runs it (the CLI
in a subprocess), must bring back an index that verifies and holds every document it held before.
On main before this change all of them failed with the same checksum error.

The demo sources are cut to one guideline and one label (``paths.assets_dir`` of a private copy)
so that a rebuild takes seconds; the in-process table covers every file, the CLI each command.
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path

import pytest

from core.artifacts import MANIFEST
from core.errors import IndexStateError
from core.kb.index.builder import kb_dir
from core.kb.index.reader import open_index
from core.settings import REPO_ROOT
from tests.conftest import make_settings, run_cli

GUIDE, LABEL = "tb_latent_infection_testing.md", "isoniazid.xml"


def _assets(root: Path) -> Path:
    folder = root / "assets"
    for sub, name in (("guidelines", GUIDE), ("labels", LABEL)):
        (folder / "kb" / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / "assets" / "kb" / sub / name, folder / "kb" / sub / name)
    return folder


def _settings(root: Path):  # type: ignore[no-untyped-def]
    return make_settings(root, paths={"assets_dir": root / "assets"}, kb={"progress": False})


@pytest.fixture(scope="module")
def small_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Demo KBs of one guideline and one label, plus a doctor's space holding one upload."""
    from core.kb import build_demo_kb
    from core.kb.base import KnowledgeBase
    from core.kb.spaces import DocumentSpaces

    root = tmp_path_factory.mktemp("kbrec")
    _assets(root)
    settings = _settings(root)
    kb = KnowledgeBase(settings)
    build_demo_kb(settings, base=kb)
    note = b"# Ward note\n\nDemo data, not for clinical use. Check liver tests monthly on isoniazid.\n"
    DocumentSpaces(kb).upload("u7", [("ward-note.md", note)])
    return root


def _copy(small_root: Path, tmp_path: Path) -> Path:
    shutil.copytree(small_root, tmp_path / "r", symlinks=True)
    return tmp_path / "r"


def _docs(root: Path, kb: str) -> list[str]:
    index = open_index(root / "indexes", kb, _settings(root).kb)
    try:
        return [d[0] for d in index.store.docs()]
    finally:
        index.close()


def _damage(root: Path, kb: str, rel: str, seed: int) -> None:
    """Overwrite 8 bytes of ``rel`` in the live version of ``kb`` with different bytes."""
    live = kb_dir(root / "indexes", kb).link_path.resolve()
    path = live / rel
    data = bytearray(path.read_bytes())
    rng = random.Random(seed)
    at = rng.randrange(0, max(1, len(data) - 8))
    for i in range(at, min(at + 8, len(data))):
        data[i] ^= rng.randrange(1, 256)
    path.write_bytes(bytes(data))


def _files(root: Path, kb: str) -> list[str]:
    live = kb_dir(root / "indexes", kb).link_path.resolve()
    return sorted(json.loads((live / MANIFEST).read_text())["files"])


def _hint_after_damage(root: Path, kb: str) -> str:
    with pytest.raises(IndexStateError) as refused:
        _docs(root, kb)
    return refused.value.hint


def _recover_every_file(root: Path, kbs: tuple[str, ...], seeds: range, only: tuple[str, ...] = ()) -> int:
    """Damage each file of ``kbs`` (or those named in ``only``) at each seed, run `kb build`; returns the count."""
    from core.kb import build_demo_kb

    before = {kb: _docs(root, kb) for kb in kbs}
    tried = 0
    for kb in before:
        for rel in [r for r in [*_files(root, kb), MANIFEST] if not only or r in only]:
            for seed in seeds:
                _damage(root, kb, rel, seed)
                if rel == MANIFEST and (kb_dir(root / "indexes", kb).link_path.resolve() / MANIFEST).exists():
                    try:  # a change that leaves the manifest valid JSON with the same values is no damage
                        _docs(root, kb)
                        continue
                    except IndexStateError:
                        pass
                assert "kb build" in _hint_after_damage(root, kb), (kb, rel)
                build_demo_kb(_settings(root))  # `kb build` without --force
                assert _docs(root, kb) == before[kb], (kb, rel, seed)
                tried += 1
    return tried


def test_damaged_files_are_recovered_by_the_demo_build(small_root: Path, tmp_path: Path) -> None:
    """The chunk store, the FAISS file and the manifest of kb_guidelines, 8 bytes each (the rest: the slow table)."""
    only = ("docstore.sqlite", "dense.faiss", MANIFEST)
    assert _recover_every_file(_copy(small_root, tmp_path), ("guidelines",), range(1), only) == 3


@pytest.mark.slow
def test_every_file_damaged_is_recovered_by_the_demo_build(small_root: Path, tmp_path: Path) -> None:
    """The table: every file of both demo KBs and the manifest, 8 bytes each at three seeded offsets."""
    assert _recover_every_file(_copy(small_root, tmp_path), ("guidelines", "druglabels"), range(3)) >= 50


@pytest.mark.slow  # about 35 s each on 2 busy cores (a model load and a rebuild per command)
@pytest.mark.parametrize("command", [("kb", "build"), ("kb", "build", "--force"), ("kb", "ingest-guidelines")])
def test_the_hint_command_recovers_a_damaged_demo_kb(small_root: Path, tmp_path: Path, command: tuple[str, ...]) -> None:
    root = _copy(small_root, tmp_path)
    before = _docs(root, "guidelines")
    _damage(root, "guidelines", "vectors.f32", 1)
    _damage(root, "guidelines", "docstore.sqlite", 2)
    hint = _hint_after_damage(root, "guidelines")
    assert "kb build" in hint and "ingest the documents again" in hint
    args = [*command, str(root / "assets" / "kb" / "guidelines" / GUIDE)] if "ingest" in command[1] else command
    done = run_cli(root, *args, env={"CASEBOOK_PATHS__ASSETS_DIR": str(root / "assets")})
    assert done.returncode == 0, done.stderr[-3000:]
    assert _docs(root, "guidelines") == before
    found = run_cli(root, "kb", "search", "latent tuberculosis testing", "--kb", "guidelines", "--json")
    assert found.returncode == 0 and json.loads(found.stdout), found.stderr[-3000:]


@pytest.mark.parametrize("rel", ["dense.faiss", "docstore.sqlite"])
def test_the_hint_command_recovers_a_damaged_document_space(small_root: Path, tmp_path: Path, rel: str) -> None:
    root = _copy(small_root, tmp_path)
    before = _docs(root, "user.u7")
    _damage(root, "user.u7", rel, 3)
    hint = _hint_after_damage(root, "user.u7")
    assert "kb docs reingest --owner u7" in hint
    command = hint.split("`")[1].split()[3:]  # the command as the hint writes it, after "python -m core"
    done = run_cli(root, *command)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _docs(root, "user.u7") == before
    assert os.path.isfile(kb_dir(root / "indexes", "user.u7").link_path / MANIFEST)
