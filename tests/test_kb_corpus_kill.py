"""A corpus ingestion killed with SIGKILL mid-run resumes with ``--resume``: no chunk lost, none twice.

The ingestion is the real command (``python -m core kb ingest-corpus``) in a subprocess; the test
waits for its first checkpoints on disk, kills it with SIGKILL (no handler, no clean-up runs),
then runs the same command with ``--resume`` and compares the result with an uninterrupted run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core.errors import InvalidInputError
from core.kb.corpus.build import ingest_corpus
from core.kb.corpus.layout import corpus_link
from core.kb.index.docstore import DocStore
from core.settings import REPO_ROOT
from tests.test_kb_corpus import corpus_settings, write_corpus

ROWS = 12_000
CHECKPOINT = 500


def cli(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "core", "--set", f"kb.corpus.checkpoint_rows={CHECKPOINT}",
            "--set", "kb.corpus.shard_rows=5000", "--set", "kb.progress=false", "kb", "ingest-corpus", *args]  # fmt: skip


def env_for(root: Path) -> dict[str, str]:
    return {**os.environ, "CASEBOOK_PRESET": "test", "CASEBOOK_PATHS__DATA_DIR": str(root / "data"),
            "CASEBOOK_PATHS__INDEX_DIR": str(root / "indexes")}  # fmt: skip


def chunk_ids(index_dir: Path, name: str) -> list[str]:
    folder = corpus_link(index_dir, name).resolve()
    ids: list[str] = []
    for shard in sorted(folder.glob("shard_*")):
        store = DocStore(shard / "docstore.sqlite")
        ids += [c.chunk_id for _, c in store.iter_chunks()]
        store.close()
    return ids


def vectors(index_dir: Path, name: str) -> bytes:
    folder = corpus_link(index_dir, name).resolve()
    return b"".join((s / "vectors.f32").read_bytes() for s in sorted(folder.glob("shard_*")))


def test_sigkill_then_resume_loses_and_repeats_nothing(tmp_path: Path) -> None:
    path, npy = write_corpus(tmp_path / "src", ROWS, "medrag")
    root = tmp_path / "killed"
    args = [str(path), "--name", "pm", "--embeddings", str(npy), "--encoder-id", "test/hash-32", "--json"]
    state_file = root / "indexes" / ".corpus_pm.resume.tmp" / "state.json"
    proc = subprocess.Popen(cli(root, *args), env=env_for(root), cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 240
    done = 0
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            done = json.loads(state_file.read_text())["count"]
        except (OSError, ValueError, KeyError):
            done = 0
        if done >= 2 * CHECKPOINT:
            break
        time.sleep(0.002)
    assert proc.poll() is None, "the ingestion finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    killed_at = json.loads(state_file.read_text())["count"]
    assert CHECKPOINT <= killed_at < ROWS and killed_at % CHECKPOINT == 0  # checkpoints every 500 rows
    assert not corpus_link(root / "indexes", "pm").exists()  # nothing half-built serves

    again = subprocess.run(cli(root, *args, "--resume"), env=env_for(root), cwd=REPO_ROOT,
                           capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert again.returncode == 0, again.stderr[-2000:]
    report = json.loads(again.stdout)
    assert report["resumed_at_line"] == killed_at and report["n_chunks"] == ROWS

    whole = corpus_settings(tmp_path / "whole", checkpoint_rows=CHECKPOINT, shard_rows=5000)
    ingest_corpus(whole, path, "pm", embeddings=npy, encoder_id="test/hash-32")
    ids = chunk_ids(root / "indexes", "pm")
    assert len(ids) == len(set(ids)) == ROWS  # none twice, none lost
    assert ids == chunk_ids(whole.paths.index_dir, "pm")
    assert vectors(root / "indexes", "pm") == vectors(whole.paths.index_dir, "pm")  # each row beside its chunk


def test_resume_without_an_interrupted_run_is_refused(tmp_path: Path) -> None:
    path, npy = write_corpus(tmp_path / "src", 50, "text")
    settings = corpus_settings(tmp_path)
    with pytest.raises(InvalidInputError, match="resume"):
        ingest_corpus(settings, path, "c", embeddings=npy, encoder_id="test/hash-32", resume=True)
    with pytest.raises(InvalidInputError, match="contradict"):
        ingest_corpus(settings, path, "c", embeddings=npy, encoder_id="test/hash-32", resume=True, restart=True)
