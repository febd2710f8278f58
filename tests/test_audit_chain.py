"""The audit log: append-only, hash-chained, free of free text; on SQLite and PostgreSQL (issue 15, item 2)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError

from core import audit
from core.answer.records import audit as legacy_audit
from core.errors import ImmutableRecordError
from core.runtime import Runtime
from core.store.models import AuditLog
from tests.rec_workers import run_children


def _rows(rt: Runtime) -> list[AuditLog]:
    with rt.db.read_only() as s:
        return list(s.scalars(select(AuditLog).order_by(AuditLog.seq)).all())


def test_rows_chain_and_verify(rw: Runtime) -> None:
    first = audit.record(rw.db, audit.SCAN_READ, 1, "scan_abc")
    second = audit.record(rw.db, audit.DRAFT_SAVE, 1, "scan_abc", draft_id=4, version=2)
    assert second == first + 1
    rows = _rows(rw)
    assert rows[-1].prev_hash == rows[-2].row_hash and rows[-1].detail == {"draft_id": 4, "version": 2}
    result = audit.verify(rw.db)
    assert result.ok and result.checked == len(rows) and result.head_seq == second
    assert result.head_hash == rows[-1].row_hash


def test_free_text_never_lands_in_a_row(rw: Runtime) -> None:
    question = "Is Mrs Example (born 1960-03-14) going to die of this?"
    body = 'HTTP 500: see <a href="http://evil.example/x">status</a> for Jane Roe'
    audit.record(rw.db, audit.ASK, 1, "scan with spaces", outcome=body, question=question, error=body, n=3)
    legacy_audit(rw.db, actor_id=1, action="ask", scan_ref="scan_1", backend="groq", prompt_hash=None,
                 outcome="llm", detail={"reason": question})  # fmt: skip
    stored = " ".join(f"{r.scan_ref} {r.outcome} {r.backend} {r.detail}" for r in _rows(rw))
    for secret in ("Example", "1960", "die", "evil.example", "Jane", "spaces"):
        assert secret not in stored
    last = _rows(rw)[-2]
    assert last.detail["question"].startswith("sha256:") and last.detail["n"] == 3
    assert last.scan_ref is not None and last.scan_ref.startswith("h:")
    assert audit.verify(rw.db).ok


def test_event_names_are_checked(rw: Runtime) -> None:
    with pytest.raises(ValueError, match="event"):
        audit.record(rw.db, "Free text as an event name", 1)


def test_updates_deletes_and_truncation_are_refused(rw: Runtime, backend: str) -> None:
    audit.record(rw.db, audit.LOGIN, 1)
    n = len(_rows(rw))
    with pytest.raises(ImmutableRecordError), rw.db.session() as s:
        s.execute(text("UPDATE audit_log SET outcome = 'forged'"))
    with pytest.raises(ImmutableRecordError), rw.db.session() as s:
        s.execute(text("DELETE FROM audit_log"))
    with pytest.raises(DBAPIError), rw.db.engine.begin() as c:
        c.execute(text("DELETE FROM audit_log WHERE seq = 1"))
    if backend == "postgres":
        with pytest.raises(ImmutableRecordError), rw.db.session() as s:
            s.execute(text("TRUNCATE audit_log"))
    assert len(_rows(rw)) == n and audit.verify(rw.db).ok


def _without_guard(rt: Runtime, backend: str, statement: str) -> None:
    """Run ``statement`` the way only someone who can drop the triggers could."""
    with rt.db.engine.begin() as c:
        if backend == "postgres":
            c.execute(text("ALTER TABLE audit_log DISABLE TRIGGER audit_log_append_only"))
            c.execute(text(statement))
            c.execute(text("ALTER TABLE audit_log ENABLE TRIGGER audit_log_append_only"))
        else:
            c.execute(text("DROP TRIGGER audit_log_no_update"))
            c.execute(text("DROP TRIGGER audit_log_no_delete"))
            c.execute(text(statement))


def test_verify_catches_an_edited_row(rw: Runtime, backend: str) -> None:
    for k in range(3):
        audit.record(rw.db, audit.SCAN_READ, 1, f"scan_{k}")
    seq = _rows(rw)[-2].seq
    _without_guard(rw, backend, f"UPDATE audit_log SET actor_id = 99 WHERE seq = {seq}")
    result = audit.verify(rw.db)
    assert not result.ok and any(f"seq {seq}:" in p for p in result.problems)


def test_verify_catches_a_removed_row(rw: Runtime, backend: str) -> None:
    for k in range(3):
        audit.record(rw.db, audit.SCAN_READ, 1, f"scan_{k}")
    seq = _rows(rw)[-2].seq
    _without_guard(rw, backend, f"DELETE FROM audit_log WHERE seq = {seq}")
    result = audit.verify(rw.db)
    assert not result.ok and any("missing" in p for p in result.problems)


@pytest.mark.slow
def test_concurrent_writers_do_not_fork_the_chain(rw: Runtime, spawn_ctx: Any) -> None:
    before = len(_rows(rw))
    # 4 processes x 5 threads, 5 rows each: 100 rows written at once
    results = run_children(spawn_ctx, rw.settings, "audit", 5, children=4, threads=5)
    assert all(kind == "ok" for kind, _ in results), results
    seqs = sorted(s for _, got in results for s in got)
    assert len(seqs) == 100 and len(set(seqs)) == 100
    with rw.db.read_only() as s:
        assert s.scalar(select(func.count()).select_from(AuditLog)) == before + 100
    result = audit.verify(rw.db)
    assert result.ok and result.head_seq == before + 100, result.problems
