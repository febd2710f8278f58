"""Faults: a failing model, a lost or corrupt index, a locked or dropped database, a full disk.

Each fault ends in the extractive answer, a rebuilt index, a retry or a clear
error; never a crash and never a half-saved record (rows are counted).

A full disk is made two ways: a small tmpfs (needs root) and, anywhere, a child
process under ``RLIMIT_FSIZE`` with SIGXFSZ ignored, whose writes past the limit
fail with EFBIG as they would with ENOSPC. With SIGXFSZ left to the kernel the
same write kills the child instead: a build that dies mid-write.

The faults of versioned artifacts (a full disk, a killed build, a damaged
version) run over all three kinds (``tests/artifact_kinds.py``): the similar-case
index, a knowledge base and a corpus.
"""

from __future__ import annotations

import json
import re
import shutil
import signal
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

from core.answer.service import ask_question, stream_answer
from core.artifacts import MANIFEST, VersionedDir
from core.cases import get_similar_cases
from core.cases.importer import import_cases
from core.cases.index import CaseIndex
from core.errors import DiskFullError, IndexStateError
from core.llm.factory import make_llm
from core.reports import DraftText, save_draft
from core.reports.writer import generate_report_draft
from core.runtime import Runtime, open_runtime
from core.store.db import Database
from core.store.models import AuditLog, Message, ReportDraft, User
from tests.artifact_kinds import FIRST, KINDS, SECOND
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
    current = (fresh.case_search.root / "current").resolve()
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
        (fresh.case_search.root / "current").unlink()
        (fresh.case_search.root / "current").symlink_to("v-does-not-exist")
    rt = open_runtime(fresh.settings)
    assert [c.caseId for c in get_similar_cases(rt, sid).cases] == expected
    assert rt.case_search.index.version == fresh.case_search.index.version
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
    old = rt.case_search.index
    _import_one_case(rt, tmp_path)
    with pytest.raises(DiskFullError) as full:
        rt.case_search.refresh()
    assert isinstance(full.value.__cause__, OSError)  # ENOSPC, or numpy's short write of vectors.npy
    assert str(tiny_disk / "cases") in full.value.hint and "previous index still serves" in full.value.hint
    assert rt.case_search.index.version == old.version
    assert get_similar_cases(rt, sid) == before
    _assert_previous_case_index_serves(tiny_disk / "cases", old, old.vectors[0])
    rt.db.dispose()


_CASE_INDEX_CHILD = """
from core.runtime import open_runtime
from tests.conftest import make_settings

def work():
    rt = open_runtime(make_settings(Path(sys.argv[2])))
    limit()
    rt.case_search.refresh()
"""


def test_file_size_limit_during_a_case_index_build_keeps_the_previous_index(fresh: Runtime, tmp_path: Path) -> None:
    old = fresh.case_search.index
    _import_one_case(fresh, tmp_path)
    root = fresh.settings.paths.data_dir.parent
    got = _under_file_size_limit(_CASE_INDEX_CHILD, 1 << 20, str(root))  # vectors.npy of the demo is larger
    assert got["error"] == "DiskFullError", got
    assert got["cause"].startswith("OSError: ") and "requested and" in got["cause"]  # numpy's short write
    assert got["hint"] == f"Free space under {fresh.case_search.root}; the previous index still serves."
    _assert_previous_case_index_serves(fresh.case_search.root, old, old.vectors[3])
    rt = open_runtime(fresh.settings)  # with room again, the next open rebuilds over the imported case
    assert rt.case_search.index.version != old.version and rt.case_search.index.manifest["count"] == old.manifest["count"] + 1
    rt.db.dispose()


# -- every versioned artifact: the case index, a knowledge base, a corpus --------------------------------
_KILLED_CHILD = """
import resource, signal, sys
from pathlib import Path
from tests.artifact_kinds import KINDS
signal.signal(signal.SIGXFSZ, signal.SIG_DFL)  # Python ignores it; the kernel now kills the writer mid-write
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), resource.RLIM_INFINITY))
KINDS[sys.argv[2]].build(Path(sys.argv[3]), int(sys.argv[4]))
"""
_ARTIFACT_CHILD = """
from tests.artifact_kinds import KINDS

def work():
    limit()
    KINDS[sys.argv[2]].build(Path(sys.argv[3]), int(sys.argv[4]))
"""
# The file a build of SECOND rows runs out of room in, and the error that tells: numpy's short write of
# the case vectors, EFBIG from the knowledge base's vectors or from FAISS's writer (not lost on close),
# EFBIG from the corpus's vectors at its second checkpoint.
_LIMITS = [
    ("cases", "vectors.npy", SECOND * 64 * 4 // 2, r"OSError: \d+ requested and \d+ written"),
    ("kb", "vectors.f32", SECOND * 128 * 4 // 2, r"OSError: \[Errno 27\] File too large"),
    ("kb", "dense.faiss", SECOND * 128 * 4, r"OSError: \[Errno 27\] File too large"),
    ("corpus", "shard_000/vectors.f32", 700_000, r"OSError: \[Errno 27\] File too large"),
]


@pytest.fixture(params=list(KINDS))
def built(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path, Any]:
    """An artifact kind with a live version of FIRST rows under ``tmp_path``, and its probe's answers."""
    art = KINDS[request.param]
    art.prepare(tmp_path, FIRST)
    art.build(tmp_path, FIRST)
    return request.param, tmp_path, art.probe(tmp_path)


def _left(vdir: VersionedDir, live: Path) -> list[str]:
    """What lies beside the link and the live version."""
    return sorted(p.name for p in vdir.root.iterdir() if p.name not in (vdir.link, live.name))


@pytest.mark.parametrize("fault", ["full disk", "killed"])
@pytest.mark.parametrize(("kind", "dies_in", "limit", "cause"), _LIMITS, ids=[f"{k}-{w}" for k, w, _, _ in _LIMITS])
def test_a_build_out_of_room_or_killed_keeps_the_previous_version(
    tmp_path: Path, kind: str, dies_in: str, limit: int, cause: str, fault: str
) -> None:
    """A full disk ends in DiskFullError; a build killed mid-write (SIGXFSZ) ends with nothing; either way
    the previous version serves, verified, with the same answers, and the next build swaps in (a corpus
    resumes from its last checkpoint)."""
    art = KINDS[kind]
    art.prepare(tmp_path, FIRST)
    art.build(tmp_path, FIRST)
    vdir = art.vdir(tmp_path)
    live, before = vdir.link_path.resolve(), art.probe(tmp_path)
    art.prepare(tmp_path, SECOND)
    args = (str(limit), kind, str(tmp_path), str(SECOND))
    if fault == "full disk":
        got = _under_file_size_limit(_ARTIFACT_CHILD, limit, *args[1:])
        assert got["error"] == "DiskFullError", got
        assert re.fullmatch(cause, got["cause"]) and got["hint"] == art.full_hint(tmp_path)
    else:
        done = subprocess.run([sys.executable, "-c", _KILLED_CHILD, *args], cwd=REPO, capture_output=True, timeout=300)
        assert done.returncode == -signal.SIGXFSZ, done.stderr[-4000:]
    assert vdir.link_path.resolve() == live and art.probe(tmp_path) == before
    left = _left(vdir, live)
    if kind == "corpus":  # kept to resume from
        assert left == [".corpus_syn.resume.tmp"]
    elif fault == "killed":  # nothing ran to remove it; it is never mistaken for a version
        assert len(left) == 1 and re.fullmatch(rf"\.{vdir.link}\.[0-9a-f]{{12}}\.tmp", left[0]), left
    else:
        assert left == []
    if fault == "killed":  # it died writing the named file: a FAISS file exists only once the vectors were whole
        work = vdir.root / left[0]
        assert (work / dies_in).is_file() and not (work / MANIFEST).exists()
        assert bool(list(work.rglob("*.faiss"))) == dies_in.endswith(".faiss"), sorted(work.rglob("*"))
    assert art.build(tmp_path, SECOND) == art.resumes_at  # with room again
    assert vdir.link_path.resolve() != live and not live.exists()
    assert art.probe(tmp_path)[0] == SECOND


_DAMAGES = {
    "delete_manifest": "missing or corrupt manifest",
    "unknown_format": "unknown manifest format",
    "torn_file": "missing or has the wrong size",
    "bad_checksum": "does not match its manifest checksum",
    "delete_version": "",
    "dangling_link": "",
}


@pytest.mark.parametrize("damage", list(_DAMAGES))
def test_a_damaged_version_is_refused_and_a_rebuild_answers_as_before(
    built: tuple[str, Path, Any], damage: str
) -> None:
    kind, base, before = built
    art = KINDS[kind]
    vdir = art.vdir(base)
    live = vdir.link_path.resolve()
    manifest = json.loads((live / MANIFEST).read_text())
    largest = max(manifest["files"], key=lambda rel: (live / rel).stat().st_size)
    if damage == "delete_manifest":
        (live / MANIFEST).unlink()
    elif damage == "unknown_format":
        (live / MANIFEST).write_text(json.dumps({**manifest, "format": 99}))
    elif damage == "torn_file":
        with (live / largest).open("r+b") as f:
            f.truncate((live / largest).stat().st_size // 2)
    elif damage == "bad_checksum":
        data = bytearray((live / largest).read_bytes())
        data[len(data) // 2] ^= 0xFF
        (live / largest).write_bytes(bytes(data))
    elif damage == "delete_version":
        shutil.rmtree(live)
    else:
        vdir.link_path.unlink()
        vdir.link_path.symlink_to(live.name + "-gone")
    with pytest.raises(IndexStateError, match=_DAMAGES[damage] or None) as refused:
        art.probe(base)
    if _DAMAGES[damage]:
        assert refused.value.hint == (vdir.kind.hint or IndexStateError.hint)
    art.build(base, FIRST)
    assert art.probe(base) == before
    assert _left(vdir, vdir.link_path.resolve()) == []


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
