"""Faults: a failing model, a lost or corrupt index, a locked or dropped database, a full disk.

Each fault ends in the extractive answer, a rebuilt index, a retry or a clear
error; never a crash and never a half-saved record (rows are counted).

A full disk is made two ways: a small tmpfs (needs root) and, anywhere, a child
process under ``RLIMIT_FSIZE`` with SIGXFSZ ignored, whose writes past the limit
fail with EFBIG as they would with ENOSPC.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import OperationalError

from core.answer.draft_writer import generate_report_draft
from core.answer.drafts import DraftText, save_draft
from core.answer.service import ask_question, stream_answer
from core.cases import get_similar_cases
from core.cases.importer import import_cases
from core.cases.index import CaseIndex
from core.errors import DiskFullError
from core.kb.corpus.build import ingest_corpus
from core.kb.corpus.layout import corpus_link
from core.kb.corpus.serve import CorpusIndex
from core.kb.index.builder import IndexBuilder, kb_link
from core.kb.index.reader import open_index
from core.kb.types import Chunk
from core.llm.factory import make_llm
from core.runtime import Runtime, open_runtime
from core.settings import load_settings
from core.store.db import Database
from core.store.models import AuditLog, Message, ReportDraft, User
from tests.backends import PgCluster, writable_runtime
from tests.conftest import make_settings, scan_of
from tests.llm_server import FakeLLMServer


def _doctor(rt: Runtime) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)


def _rows(rt: Runtime, model: type) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


# -- the language model ------------------------------------------------------------------------------
FAULTS = ["503", "500", "malformed", "timeout", "cut"]


def _inject(server: FakeLLMServer, fault: str) -> None:
    if fault in ("503", "500"):
        server.fail_status(int(fault), times=5)
    elif fault == "malformed":
        server.fail_malformed(times=5)
    elif fault == "timeout":
        server.fail_slow(3.0, times=5)
    else:
        server.fail_cut(after_chunks=2, times=5)


@pytest.fixture()
def llm_rt(fresh: Runtime, llm_server: FakeLLMServer) -> Iterator[Runtime]:
    settings = make_settings(
        fresh.settings.paths.data_dir.parent, llm=llm_server.llm_overrides("openai"), ask={"llm_budget_s": 1.0}
    )
    rt = open_runtime(settings)
    yield rt
    rt.db.dispose()


@pytest.mark.parametrize("fault", FAULTS)
def test_model_fault_falls_back_and_saves_one_whole_exchange(
    llm_rt: Runtime, llm_server: FakeLLMServer, fault: str
) -> None:
    _inject(llm_server, fault)
    sid, doc = scan_of(llm_rt, "priya.nair"), _doctor(llm_rt)
    msgs, audits = _rows(llm_rt, Message), _rows(llm_rt, AuditLog)
    res = ask_question(llm_rt, sid, "What do similar cases show?", doc, make_llm(llm_rt.settings))
    assert res.path == "extractive" and res.reason and res.answer == res.instant and res.answer.citedCaseIds
    assert _rows(llm_rt, Message) == msgs + 2 and _rows(llm_rt, AuditLog) == audits + 1
    with llm_rt.db.read_only() as s:
        last = s.scalars(select(AuditLog).order_by(AuditLog.id.desc()).limit(1)).one()
    assert last.outcome == "extractive:fallback" and last.backend and last.prompt_hash


@pytest.mark.parametrize("fault", FAULTS)
def test_stream_fault_ends_with_the_extractive_answer(llm_rt: Runtime, llm_server: FakeLLMServer, fault: str) -> None:
    _inject(llm_server, fault)
    sid, doc = scan_of(llm_rt, "imran.khan"), _doctor(llm_rt)
    msgs = _rows(llm_rt, Message)
    events = list(stream_answer(llm_rt, sid, "How severe are similar cases?", doc, make_llm(llm_rt.settings)))
    assert events[0].kind == "instant" and events[-1].kind == "final"
    final = events[-1].result
    assert final is not None and final.path == "extractive" and final.answer == final.instant
    assert _rows(llm_rt, Message) == msgs + 2


@pytest.mark.parametrize("fault", FAULTS)
def test_draft_fault_gives_the_extractive_draft_and_writes_nothing(
    llm_rt: Runtime, llm_server: FakeLLMServer, fault: str
) -> None:
    _inject(llm_server, fault)
    drafts = _rows(llm_rt, ReportDraft)
    draft = generate_report_draft(llm_rt, scan_of(llm_rt, "rahul.mehta"), make_llm(llm_rt.settings))
    assert draft.path == "extractive" and draft.findings and draft.impression
    assert _rows(llm_rt, ReportDraft) == drafts


# -- the similar-case index --------------------------------------------------------------------------
@pytest.mark.parametrize("damage", ["delete_version", "delete_manifest", "truncate_vectors", "garbage_ids", "dangling"])
def test_damaged_index_is_detected_and_rebuilt(fresh: Runtime, damage: str) -> None:
    sid = scan_of(fresh, "rahul.mehta")
    expected = [c.caseId for c in get_similar_cases(fresh, sid).cases]
    current = (fresh.search.root / "current").resolve()
    if damage == "delete_version":
        shutil.rmtree(current)
    elif damage == "delete_manifest":
        (current / "manifest.json").unlink()
    elif damage == "truncate_vectors":
        with (current / "vectors.npy").open("r+b") as f:
            f.truncate(1000)
    elif damage == "garbage_ids":
        (current / "ids.npy").write_bytes(b"\x93NUMPY garbage")
    else:
        (fresh.search.root / "current").unlink()
        (fresh.search.root / "current").symlink_to("v-does-not-exist")
    rt = open_runtime(fresh.settings)
    assert [c.caseId for c in get_similar_cases(rt, sid).cases] == expected
    assert rt.search.index.version == fresh.search.index.version
    rt.db.dispose()


# -- a full disk ------------------------------------------------------------------------------------
REPO = Path(__file__).resolve().parents[1]
_CHILD = """
import json, resource, signal, sys
from pathlib import Path
from core.errors import DiskFullError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the writer instead of failing the write

def limit():
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))

%s
try:
    work()
except DiskFullError as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc), "hint": exc.hint,
                      "cause": f"{type(exc.__cause__).__name__}: {exc.__cause__}"}))
else:
    print(json.dumps({"error": None}))
"""


def _under_file_size_limit(work: str, limit: int, *args: str) -> dict[str, Any]:
    """Run ``work()`` (source defining it) in a child whose files cannot grow past ``limit`` bytes.

    ``work`` calls ``limit()`` once its set-up is done. Returns what the child reports about the
    :class:`DiskFullError` it caught (``error`` is ``None`` when nothing was raised).
    """
    done = subprocess.run(
        [sys.executable, "-c", _CHILD % work, str(limit), *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture()
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 15 MB tmpfs: room for one index version of the demo (10.3 MB) but not two."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if (
        shutil.which("mount") is None
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=15m", "tmpfs", str(mnt)], capture_output=True).returncode
    ):
        pytest.skip("cannot mount a tmpfs here (needs root); the RLIMIT_FSIZE tests cover a full disk instead")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def _import_one_case(rt: Runtime, folder: Path) -> None:
    row = '{"case_id": "NEW-9", "anatomy": "lung", "region": null, "diagnosis": "COPD with emphysema", "embedding": %s}'
    (folder / "one.jsonl").write_text(row % ([0.1] * 512) + "\n")
    import_cases(rt.db, folder / "one.jsonl", max_mb=10)


def _assert_previous_case_index_serves(root: Path, old: CaseIndex, query: np.ndarray) -> None:
    """Nothing half-built is left, ``current`` names the old version, and that version, verified, answers as before."""
    assert sorted(p.name for p in root.iterdir()) == ["current", f"v-{old.version}"]
    on_disk = CaseIndex((root / "current").resolve())  # every file checked against its sha256
    assert on_disk.version == old.version
    for anatomy in (None, "lung"):
        got = on_disk.search(query, anatomy, None, 5, ef_search=64, rerank=4)
        want = old.search(query, anatomy, None, 5, ef_search=64, rerank=4)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


def test_disk_full_during_ingestion_keeps_the_previous_index(fresh: Runtime, tiny_disk: Path, tmp_path: Path) -> None:
    settings = make_settings(fresh.settings.paths.data_dir.parent, paths={"index_dir": tiny_disk})
    rt = open_runtime(settings)
    sid = scan_of(rt, "rahul.mehta")
    before = get_similar_cases(rt, sid)
    old = rt.search.index
    _import_one_case(rt, tmp_path)
    with pytest.raises(DiskFullError) as full:
        rt.search.refresh()
    assert isinstance(full.value.__cause__, OSError)  # ENOSPC, or numpy's short write of vectors.npy
    assert str(tiny_disk / "cases") in full.value.hint and "previous index still serves" in full.value.hint
    assert rt.search.index.version == old.version
    assert get_similar_cases(rt, sid) == before
    _assert_previous_case_index_serves(tiny_disk / "cases", old, old.vectors[0])
    rt.db.dispose()


_CASE_INDEX_CHILD = """
from core.runtime import open_runtime
from tests.conftest import make_settings

def work():
    rt = open_runtime(make_settings(Path(sys.argv[2])))
    limit()
    rt.search.refresh()
"""


def test_file_size_limit_during_a_case_index_build_keeps_the_previous_index(fresh: Runtime, tmp_path: Path) -> None:
    old = fresh.search.index
    _import_one_case(fresh, tmp_path)
    root = fresh.settings.paths.data_dir.parent
    got = _under_file_size_limit(_CASE_INDEX_CHILD, 1 << 20, str(root))  # vectors.npy of the demo is larger
    assert got["error"] == "DiskFullError", got
    assert got["cause"].startswith("OSError: ") and "requested and" in got["cause"]  # numpy's short write
    assert got["hint"] == f"Free space under {fresh.search.root}; the previous index still serves."
    _assert_previous_case_index_serves(fresh.search.root, old, old.vectors[3])
    rt = open_runtime(fresh.settings)  # with room again, the next open rebuilds over the imported case
    assert rt.search.index.version != old.version and rt.search.index.manifest["count"] == old.manifest["count"] + 1
    rt.db.dispose()


_KB_DIM = 128


def synthetic_kb(root: Path, n: int) -> None:
    """Build knowledge base ``user`` under ``root`` from ``n`` synthetic chunks (real SQLite, FAISS and bm25s)."""
    cfg = load_settings("test", kb={"progress": False}).kb
    spec = {"encoder_id": "synthetic", "dim": _KB_DIM, "tokenizer_id": "none", "chunk_tokens": 240,
            "chunk_overlap": 50, "spl_section_tokens": 400, "header_in_index": True, "bm25_stemmer": "english"}  # fmt: skip
    vecs = np.random.default_rng(n).standard_normal((n, _KB_DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    chunks = [Chunk(chunk_id=f"c{i}", doc_id=f"d{i // 10}", kb="user", text=f"word{i % 97} common") for i in range(n)]
    with IndexBuilder(root, "user", spec, cfg) as builder:
        for start in range(0, n, 250):
            builder.add(chunks[start : start + 250], vecs[start : start + 250])
        builder.commit()


_KB_CHILD = """
from tests.test_reliability_faults import synthetic_kb

def work():
    limit()
    synthetic_kb(Path(sys.argv[2]), int(sys.argv[3]))
"""


@pytest.mark.parametrize("fails_in", ["vectors", "faiss"])
def test_file_size_limit_during_a_kb_build_keeps_the_previous_version(tmp_path: Path, fails_in: str) -> None:
    cfg = load_settings("test", kb={"progress": False}).kb
    synthetic_kb(tmp_path, 500)
    live = kb_link(tmp_path, "user").resolve()
    old = open_index(tmp_path, "user", cfg)
    query = old.vectors_at([7])[0]
    dense, lexical = old.dense_search(query, 5), old.bm25_search("word5", 10)
    old.close()
    n = 2000
    # vectors.f32 fails half-way through add(), or fits exactly so that dense.faiss is the first file too large
    limit = n * _KB_DIM * 4 // (2 if fails_in == "vectors" else 1)
    got = _under_file_size_limit(_KB_CHILD, limit, str(tmp_path), str(n))
    assert got["error"] == "DiskFullError", got
    assert got["cause"] == "OSError: [Errno 27] File too large"  # EFBIG: from FAISS's writer too, not lost on close
    assert got["hint"] == f"Free space under {tmp_path}; the previous version of kb_user still serves."
    assert kb_link(tmp_path, "user").resolve() == live
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["kb_user", live.name])  # no .tmp folder left
    index = open_index(tmp_path, "user", cfg)  # checksums verified
    assert index.manifest["n_chunks"] == 500
    assert index.dense_search(query, 5) == dense and index.bm25_search("word5", 10) == lexical
    index.close()


_CORPUS_CHILD = """
from core.kb.corpus.build import ingest_corpus
from tests.conftest import make_settings

def work():
    settings = make_settings(Path(sys.argv[2]), kb=json.loads(sys.argv[4]))
    src = Path(sys.argv[3])
    limit()
    ingest_corpus(settings, src / "c.jsonl", "syn", embeddings=src / "c.npy", encoder_id="synthetic")
"""


def _corpus_source(folder: Path, n: int, dim: int = 512) -> np.ndarray:
    folder.mkdir()
    vecs = np.random.default_rng(n).standard_normal((n, dim)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    (folder / "c.jsonl").write_text("".join(json.dumps({"id": f"v{i}", "text": f"row {i}"}) + "\n" for i in range(n)))
    np.save(folder / "c.npy", vecs)
    return vecs


def test_file_size_limit_during_corpus_ingestion_keeps_the_previous_version_and_resumes(tmp_path: Path) -> None:
    kb = {"progress": False, "corpus": {"checkpoint_rows": 250, "shard_rows": 1000}}
    settings = make_settings(tmp_path, kb=kb)
    root = settings.paths.index_dir
    first = _corpus_source(tmp_path / "v1", 300)
    ingest_corpus(
        settings, tmp_path / "v1" / "c.jsonl", "syn", embeddings=tmp_path / "v1" / "c.npy", encoder_id="synthetic"
    )
    live = corpus_link(root, "syn").resolve()
    old = CorpusIndex(live, settings.kb)
    found = old.search_vector(first[42], 5)
    old.close()
    second = _corpus_source(tmp_path / "v2", 2000)
    # vectors.f32 (512,000 bytes a checkpoint) outgrows the limit at the second checkpoint, before its
    # document store (about 80 kB a checkpoint) does
    got = _under_file_size_limit(_CORPUS_CHILD, 700_000, str(tmp_path), str(tmp_path / "v2"), json.dumps(kb))
    assert got["error"] == "DiskFullError", got
    assert got["cause"].startswith("OSError: [Errno 27]")
    assert str(root) in got["hint"] and "resume" in got["hint"] and "previous version still serves" in got["hint"]
    assert corpus_link(root, "syn").resolve() == live
    index = CorpusIndex(live, settings.kb)
    assert index.search_vector(first[42], 5) == found and index.manifest["n_chunks"] == 300
    index.close()
    # with room again, the same command resumes from the last checkpoint and swaps the new version in
    report = ingest_corpus(
        settings, tmp_path / "v2" / "c.jsonl", "syn", embeddings=tmp_path / "v2" / "c.npy", encoder_id="synthetic"
    )
    assert report.resumed_at_line == 250 and report.n_chunks == 2000
    index = CorpusIndex(corpus_link(root, "syn").resolve(), settings.kb)
    assert index.search_vector(second[1500], 1)[0][0] == 1500
    index.close()


# -- the database -------------------------------------------------------------------------------------
def test_sqlite_lock_is_retried_then_a_clear_error(fresh: Runtime) -> None:
    db = Database(fresh.settings.database_url, busy_timeout_s=0.3)
    sid, doc = scan_of(fresh, "li.wei"), _doctor(fresh)
    drafts = _rows(fresh, ReportDraft)
    holder = sqlite3.connect(
        fresh.settings.database_url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False
    )
    holder.execute("BEGIN IMMEDIATE")  # another writer holds the lock
    timer = threading.Timer(0.1, holder.execute, args=("COMMIT",))
    timer.start()
    save_draft(db, sid, doc, DraftText("F.", "I.", ""))  # released within the busy timeout: retried, saved
    timer.join()
    holder.execute("BEGIN IMMEDIATE")
    started = time.monotonic()
    with pytest.raises(OperationalError, match="database is locked"):
        save_draft(db, sid, doc, DraftText("F2.", "I2.", ""))
    assert time.monotonic() - started < 5
    holder.execute("COMMIT")
    holder.close()
    assert _rows(fresh, ReportDraft) == drafts + 1
    save_draft(db, sid, doc, DraftText("F3.", "I3.", ""))
    assert _rows(fresh, ReportDraft) == drafts + 2
    db.dispose()


@pytest.mark.postgres
def test_postgres_dropped_connections(
    pg_cluster: PgCluster,
    request: pytest.FixtureRequest,
    demo_root: Path,
    tmp_path: Path,
) -> None:
    rt = writable_runtime("postgres", request, demo_root, tmp_path)
    name = rt.db.engine.url.database
    assert name
    sid, doc = scan_of(rt, "li.wei"), _doctor(rt)
    drafts = _rows(rt, ReportDraft)
    assert pg_cluster.terminate_others(name) >= 1  # every pooled connection dies while idle
    save_draft(rt.db, sid, doc, DraftText("F.", "I.", ""))  # pool_pre_ping replaces them
    assert get_similar_cases(rt, sid).cases
    with pytest.raises(OperationalError), rt.db.session() as s:  # killed mid-transaction: a clear error
        s.add(ReportDraft(scan_id=sid, author_id=doc, findings="half", impression="half"))
        s.flush()
        pg_cluster.terminate_others(name)
        s.execute(text("SELECT 1"))
    assert _rows(rt, ReportDraft) == drafts + 1  # the half-written draft is not there
    with rt.db.read_only() as s:
        assert s.scalar(select(func.count()).where(ReportDraft.findings == "half")) == 0
    save_draft(rt.db, sid, doc, DraftText("F2.", "I2.", ""))
    assert _rows(rt, ReportDraft) == drafts + 2
    rt.db.dispose()


# -- the audit log of AI calls ----------------------------------------------------------------------------
def test_every_ask_is_audited_without_phi(llm_rt: Runtime, llm_server: FakeLLMServer) -> None:
    llm = make_llm(llm_rt.settings)
    llm_server.fail_status(503, times=5)
    for user in ("rahul.mehta", "imran.khan", "li.wei"):
        ask_question(llm_rt, scan_of(llm_rt, user), "What do similar cases show?", _doctor(llm_rt), llm)
    with llm_rt.db.read_only() as s:
        audits = s.scalars(select(AuditLog).where(AuditLog.action == "ask")).all()
        people = s.execute(select(User.display_name, User.username)).all()
    assert len(audits) == 3
    for a in audits:
        assert a.actor_id and a.scan_ref and a.scan_ref.startswith("scan_") and a.backend and a.outcome
        assert a.prompt_hash and len(a.prompt_hash) == 64
        blob = f"{a.detail} {a.outcome} {a.backend}"
        assert not any(name in blob or username in blob for name, username in people)


def test_ai_draft_generation_is_audited(llm_rt: Runtime) -> None:
    audits = _rows(llm_rt, AuditLog)
    generate_report_draft(llm_rt, scan_of(llm_rt, "rahul.mehta"), make_llm(llm_rt.settings))
    assert _rows(llm_rt, AuditLog) == audits + 1
