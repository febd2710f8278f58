"""Faults: a failing model, a lost or corrupt index, a locked or dropped database, a full disk.

Each fault ends in the extractive answer, a rebuilt index, a retry or a clear
error; never a crash and never a half-saved record (rows are counted).
"""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import OperationalError

from core.answer.drafts import DraftText, generate_report_draft, save_draft
from core.answer.service import ask_question, stream_answer
from core.cases import get_similar_cases
from core.cases.importer import import_cases
from core.llm.factory import make_llm
from core.runtime import Runtime, open_runtime
from core.store.db import Database
from core.store.models import AuditLog, Message, ReportDraft, User
from tests.backends import PgCluster, pg_cluster, pg_tpl, writable_runtime  # noqa: F401
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


@pytest.fixture()
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A 15 MB tmpfs: room for one index version of the demo (10.3 MB) but not two."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if (
        shutil.which("mount") is None
        or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=15m", "tmpfs", str(mnt)], capture_output=True).returncode
    ):
        pytest.skip("cannot mount a tmpfs here (needs root); the ENOSPC path is then untested")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)], check=False)


def test_disk_full_during_ingestion_keeps_the_previous_index(fresh: Runtime, tiny_disk: Path, tmp_path: Path) -> None:
    settings = make_settings(fresh.settings.paths.data_dir.parent, paths={"index_dir": tiny_disk})
    rt = open_runtime(settings)
    sid = scan_of(rt, "rahul.mehta")
    before = get_similar_cases(rt, sid)
    version = rt.search.index.version
    row = '{"case_id": "NEW-9", "anatomy": "lung", "region": null, "diagnosis": "COPD with emphysema", "embedding": %s}'
    (tmp_path / "one.jsonl").write_text(row % ([0.1] * 512) + "\n")
    import_cases(rt.db, tmp_path / "one.jsonl", max_mb=10)
    with pytest.raises(OSError):  # numpy reports the short write ("N requested and M written"), not ENOSPC
        rt.search.refresh()
    assert rt.search.index.version == version
    assert get_similar_cases(rt, sid) == before
    assert not list((tiny_disk / "cases").glob(".build-*"))  # the half-written version was removed
    assert (tiny_disk / "cases" / "current").resolve().name == f"v-{version}"
    rt.db.dispose()


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
    pg_cluster: PgCluster,  # noqa: F811
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
