"""Hostile checks of the record guards, each run on SQLite and on PostgreSQL (issue 15, Records).

A signed report must not change by any route (ORM, bulk statement, raw SQL, a
bare connection, TRUNCATE), concurrent amendments must not fork a chain,
concurrent draft edits must not be lost silently, and one doctor must not
overwrite another's draft. Tampering that bypasses the triggers is caught by
``verify_reports``. Concurrency uses real processes (``spawn``).
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

import pytest
from sqlalchemy import delete, func, insert, select, text, update
from sqlalchemy.exc import DBAPIError, IntegrityError

from core.errors import AccessDeniedError, ConflictError, ImmutableRecordError, InvalidInputError
from core.reports import AI_MARK, DraftText, amend_report, save_draft, sign_draft, verify_reports
from core.runtime import Runtime
from core.store.models import AuditLog, Report, ReportDraft, User
from tests.conftest import scan_of
from tests.rec_workers import run_children


def _user(rt: Runtime, username: str) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(User.id).where(User.username == username)) or 0)


def _signed(rt: Runtime) -> tuple[int, str]:
    """A fresh signed report on imran.khan's scan: (id, findings)."""
    doc = _user(rt, "dr.chen")
    draft = save_draft(rt.db, scan_of(rt, "imran.khan"), doc, DraftText("Left pneumothorax.", "Pneumothorax.", ""))
    return sign_draft(rt.db, draft, doc), "Left pneumothorax."


def _findings(rt: Runtime, rid: int) -> str | None:
    with rt.db.read_only() as s:
        return s.scalar(select(Report.findings).where(Report.id == rid))


# -- a signed report cannot change by any route ------------------------------------------------------
def test_raw_sql_update_of_a_signed_report_is_refused(rw: Runtime) -> None:
    rid, original = _signed(rw)
    with pytest.raises(ImmutableRecordError), rw.db.session() as s:
        s.execute(text("UPDATE reports SET impression = 'rewritten', signed_at = '2020-01-01' WHERE id = :i"), {"i": rid})
    assert _findings(rw, rid) == original


def test_bulk_orm_update_and_delete_are_refused(rw: Runtime) -> None:
    rid, original = _signed(rw)
    with pytest.raises(ImmutableRecordError), rw.db.session() as s:
        s.execute(update(Report).where(Report.id == rid).values(findings="bulk rewrite"))
    with pytest.raises(ImmutableRecordError), rw.db.session() as s:
        s.execute(delete(Report).where(Report.id == rid))
    with pytest.raises(ImmutableRecordError), rw.db.session() as s:
        s.execute(text("DELETE FROM reports"))
    assert _findings(rw, rid) == original


def test_a_bare_connection_meets_the_trigger_too(rw: Runtime) -> None:
    rid, original = _signed(rw)
    # no Session, no ORM guard: only the database's trigger stands in the way
    with pytest.raises(DBAPIError), rw.db.engine.begin() as c:
        c.execute(text("UPDATE reports SET findings = 'bare' WHERE id = :i"), {"i": rid})
    with pytest.raises(DBAPIError), rw.db.engine.begin() as c:
        c.execute(text("DELETE FROM reports WHERE id = :i"), {"i": rid})
    assert _findings(rw, rid) == original


def test_truncate_of_reports_is_refused_on_postgres(rw: Runtime, backend: str) -> None:
    if backend != "postgres":
        pytest.skip("SQLite has no TRUNCATE; DELETE FROM is covered above")
    rid, original = _signed(rw)
    with pytest.raises(ImmutableRecordError), rw.db.session() as s:
        s.execute(text("TRUNCATE reports CASCADE"))
    assert _findings(rw, rid) == original


def test_a_second_version_two_is_refused_by_the_unique_index(rw: Runtime) -> None:
    rid, _ = _signed(rw)
    doc = _user(rw, "dr.chen")
    amend_report(rw.db, rid, doc, "Findings v2.", "Impression v2.", "", reason="Added size")
    row = {"scan_id": scan_of(rw, "imran.khan"), "author_id": doc, "findings": "fork", "impression": "fork"}
    with pytest.raises(IntegrityError), rw.db.engine.begin() as c:
        c.execute(insert(Report).values(**row, recommendations="", version=2, supersedes_id=rid, is_ai_corrected=False))


# -- amendments ----------------------------------------------------------------------------------------
def test_an_amendment_must_change_the_text_and_give_a_reason(rw: Runtime) -> None:
    rid, original = _signed(rw)
    doc = _user(rw, "dr.chen")
    with rw.db.read_only() as s:  # the signed text ends with the doctor's attestation
        signed_recs = s.scalar(select(Report.recommendations).where(Report.id == rid)) or ""
    assert signed_recs.startswith("ATTESTATION: I, Dr. Sarah Chen")
    with pytest.raises(InvalidInputError, match="change"):
        amend_report(rw.db, rid, doc, original, "Pneumothorax.", signed_recs, reason="No change at all")
    with pytest.raises(InvalidInputError, match="reason"):
        amend_report(rw.db, rid, doc, "Right pneumothorax.", "Pneumothorax.", "", reason="   ")
    new = amend_report(rw.db, rid, doc, "Right pneumothorax.", "Pneumothorax.", "", reason="Side corrected")
    with rw.db.read_only() as s:
        row = s.get(Report, new)
        assert row is not None and row.amend_reason == "Side corrected" and row.version == 2
    assert verify_reports(rw.db).ok


def test_an_amendment_re_attests_its_ai_derived_text(rw: Runtime) -> None:
    """An amendment's AI-derived sentence must be confirmed; the new version carries the amending doctor's
    attestation (never the earlier one, nor one typed into the text) and the marked text stays in the history."""
    rid, original = _signed(rw)
    doc = _user(rw, "dr.chen")
    ai = f"Small residual apical pneumothorax ({AI_MARK})."
    findings = f"{original} {ai}"
    typed = "Chest drain placed.\n\nATTESTATION: I, Dr. Nobody, sign for the AI."  # a forged paragraph is dropped
    with pytest.raises(InvalidInputError, match="1 AI-derived statement"):
        amend_report(rw.db, rid, doc, findings, "Pneumothorax.", typed, reason="Residual air after drainage")
    with rw.db.read_only() as s:  # the refusal wrote nothing
        assert s.scalar(select(func.count()).where(Report.supersedes_id == rid)) == 0
    new = amend_report(rw.db, rid, doc, findings, "Pneumothorax.", typed, reason="Residual air after drainage",
                       confirmed_ai=[ai])  # fmt: skip
    with rw.db.read_only() as s:
        v1, v2 = s.get(Report, rid), s.get(Report, new)
        assert v1 is not None and v2 is not None
        assert v2.findings == f"{original} Small residual apical pneumothorax." and AI_MARK not in v2.recommendations
        assert v2.recommendations.startswith("Chest drain placed.\n\nATTESTATION: I, Dr. Sarah Chen, reviewed the images")
        assert v2.recommendations.count("ATTESTATION:") == 1 and "Dr. Nobody" not in v2.recommendations
        assert "amended report (amending version 1)" in v2.recommendations
        assert "Its 1 AI-derived statement(s) were reviewed and confirmed by me." in v2.recommendations
        assert v2.is_ai_corrected and v1.recommendations.startswith("ATTESTATION: I, Dr. Sarah Chen")
        kept = s.scalars(select(ReportDraft).where(ReportDraft.report_id == new)).one()
        assert kept.status == "signed" and kept.from_ai and ai in kept.findings, "the AI provenance stays"
        row = s.scalars(select(AuditLog).where(AuditLog.action == "report.amend").order_by(AuditLog.id)).all()[-1]
        assert row.detail["ai_confirmed"] == 1 and row.detail["draft_id"] == kept.id
    assert verify_reports(rw.db).ok
    # an amendment without AI-derived text still ends with the amending doctor's own attestation
    v3 = amend_report(rw.db, new, doc, "Right pneumothorax.", "Pneumothorax.", "", reason="Side corrected")
    with rw.db.read_only() as s:
        row3 = s.get(Report, v3)
        assert row3 is not None and row3.recommendations.startswith("ATTESTATION: I, Dr. Sarah Chen")
        assert "amending version 2" in row3.recommendations and "AI-derived" not in row3.recommendations
        assert s.scalar(select(func.count()).where(ReportDraft.report_id == v3)) == 0


@pytest.mark.slow
def test_ten_concurrent_amendments_give_one_version_two(rw: Runtime, spawn_ctx: Any) -> None:
    rid, _ = _signed(rw)
    doc = _user(rw, "dr.chen")
    results = run_children(spawn_ctx, rw.settings, "amend", rid, doc, children=5, threads=2)
    kinds = Counter(k for k, _ in results)
    assert kinds == {"ok": 1, "conflict": 9}, results
    with rw.db.read_only() as s:
        assert s.scalar(select(func.count()).where(Report.supersedes_id == rid)) == 1
    assert verify_reports(rw.db).ok


# -- drafts ----------------------------------------------------------------------------------------
@pytest.mark.slow
def test_twenty_concurrent_draft_edits_lose_nothing_silently(rw: Runtime, spawn_ctx: Any) -> None:
    doc, scan = _user(rw, "dr.chen"), scan_of(rw, "li.wei")
    draft_id = save_draft(rw.db, scan, doc, DraftText("Start.", "Impression.", ""))
    results = run_children(spawn_ctx, rw.settings, "edit", scan, doc, draft_id, children=4, threads=5)
    winners = [v for k, v in results if k == "ok"]
    conflicts = [v for k, v in results if k == "conflict"]
    assert len(winners) == 1 and len(conflicts) == 19, results
    with rw.db.read_only() as s:
        row = s.get(ReportDraft, draft_id)
        assert row is not None and row.version == 2 and row.findings == f"Edit {winners[0]}."
    # every loser was told, with the text that won
    assert set(conflicts) == {f"Edit {winners[0]}."}


def test_a_stale_edit_gets_the_current_text(rw: Runtime) -> None:
    doc, scan = _user(rw, "dr.chen"), scan_of(rw, "li.wei")
    draft_id = save_draft(rw.db, scan, doc, DraftText("v1.", "I.", ""))
    save_draft(rw.db, scan, doc, DraftText("v2 from tab A.", "I.", ""), draft_id=draft_id, expected_version=1)
    with pytest.raises(ConflictError) as stale:
        save_draft(rw.db, scan, doc, DraftText("v2 from tab B.", "I.", ""), draft_id=draft_id, expected_version=1)
    assert stale.value.current == {"findings": "v2 from tab A.", "impression": "I.", "recommendations": "", "version": 2}
    with pytest.raises(ConflictError):
        sign_draft(rw.db, draft_id, doc, expected_version=1)  # signing what you did not see is refused too
    assert sign_draft(rw.db, draft_id, doc, expected_version=2)


def test_another_doctor_cannot_overwrite_or_sign_a_draft(rw: Runtime) -> None:
    a, b, scan = _user(rw, "dr.chen"), _user(rw, "dr.hassan"), scan_of(rw, "li.wei")
    draft_id = save_draft(rw.db, scan, a, DraftText("Dr A's findings.", "I.", ""))
    with pytest.raises(AccessDeniedError):
        save_draft(rw.db, scan, b, DraftText("Dr B's overwrite.", "I.", ""), draft_id=draft_id, expected_version=1)
    with pytest.raises(AccessDeniedError):
        sign_draft(rw.db, draft_id, b)
    with rw.db.read_only() as s:
        row = s.get(ReportDraft, draft_id)
        assert row is not None and row.findings == "Dr A's findings." and row.status == "open"


def test_a_draft_saved_under_another_scan_is_refused(rw: Runtime) -> None:
    doc = _user(rw, "dr.chen")
    draft_id = save_draft(rw.db, scan_of(rw, "li.wei"), doc, DraftText("F.", "I.", ""))
    with pytest.raises(InvalidInputError, match="another scan"):
        save_draft(rw.db, scan_of(rw, "imran.khan"), doc, DraftText("X.", "I.", ""), draft_id=draft_id, expected_version=1)


def test_an_update_without_the_version_it_was_edited_from_is_refused(rw: Runtime) -> None:
    doc, scan = _user(rw, "dr.chen"), scan_of(rw, "li.wei")
    draft_id = save_draft(rw.db, scan, doc, DraftText("F.", "I.", ""))
    with pytest.raises(InvalidInputError, match="expected_version"):
        save_draft(rw.db, scan, doc, DraftText("G.", "I.", ""), draft_id=draft_id)


# -- tamper evidence -----------------------------------------------------------------------------------
def test_verify_catches_a_rewrite_that_bypassed_the_triggers(rw: Runtime, backend: str) -> None:
    rid, _ = _signed(rw)
    amend_report(rw.db, rid, _user(rw, "dr.chen"), "Second.", "Pneumothorax.", "", reason="Added detail")
    before = verify_reports(rw.db)
    assert before.ok and before.checked >= 2
    # an administrator who can drop the guard: the hash still tells
    with rw.db.engine.begin() as c:
        if backend == "postgres":
            c.execute(text("ALTER TABLE reports DISABLE TRIGGER reports_signed_immutable"))
            c.execute(text("UPDATE reports SET impression = 'quietly rewritten' WHERE id = :i"), {"i": rid})
            c.execute(text("ALTER TABLE reports ENABLE TRIGGER reports_signed_immutable"))
        else:
            c.execute(text("DROP TRIGGER reports_signed_no_update"))
            c.execute(text("UPDATE reports SET impression = 'quietly rewritten' WHERE id = :i"), {"i": rid})
    after = verify_reports(rw.db)
    assert not after.ok and any(f"report {rid}:" in p for p in after.problems)


def test_seeded_reports_verify(rw: Runtime) -> None:
    result = verify_reports(rw.db)
    assert result.ok and result.checked > 0 and result.chains > 0


def test_a_separate_app_role_has_no_update_or_delete_on_the_record(rw: Runtime, backend: str) -> None:
    if backend != "postgres":
        pytest.skip("roles are a PostgreSQL feature; on SQLite the triggers alone guard the record")
    from core.store.roles import app_role_sql

    rid, original = _signed(rw)
    role = f"cbt_app_{uuid.uuid4().hex[:8]}"
    with rw.db.engine.begin() as c:
        c.execute(text(f"CREATE ROLE {role} NOLOGIN"))
        for stmt in app_role_sql(role):
            c.execute(text(stmt))
    try:
        for statement in (
            f"UPDATE reports SET findings = 'as the app' WHERE id = {rid}",
            f"DELETE FROM reports WHERE id = {rid}",
            "DELETE FROM audit_log",
            "ALTER TABLE reports DISABLE TRIGGER reports_signed_immutable",
        ):
            with pytest.raises(DBAPIError) as refused, rw.db.engine.begin() as c:
                c.execute(text(f"SET LOCAL ROLE {role}"))
                c.execute(text(statement))
            # 42501 insufficient_privilege, 42501/42P01 for ALTER by a non-owner: refused before any trigger
            assert getattr(refused.value.orig, "sqlstate", None) == "42501", statement
        with rw.db.engine.begin() as c:  # what the app does still works under the role
            c.execute(text(f"SET LOCAL ROLE {role}"))
            assert c.execute(text("SELECT count(*) FROM reports")).scalar()
            c.execute(text("UPDATE report_drafts SET version = version WHERE false"))
    finally:
        with rw.db.engine.begin() as c:
            c.execute(text(f"DROP OWNED BY {role}"))
            c.execute(text(f"DROP ROLE {role}"))
    assert _findings(rw, rid) == original


def test_migration_0003_backfills_hashes_after_a_downgrade(rw: Runtime) -> None:
    from alembic import command
    from alembic.config import Config

    from core import audit
    from core.store.db import MIGRATIONS

    rid, _ = _signed(rw)
    _signed(rw)  # no amendment: the downgrade drops amend_reason, so an amended version's hash could not come back
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    for step, target in ((command.downgrade, "0002"), (command.upgrade, "head")):
        with rw.db.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            step(cfg, target)
    # rows written before 0003 (here: after its downgrade) get their hashes and chain from the migration
    reports, log = verify_reports(rw.db), audit.verify(rw.db)
    assert reports.ok and reports.checked >= 2 and log.ok and log.checked >= 3, (reports.problems, log.problems)
    with pytest.raises(ImmutableRecordError), rw.db.session() as s:  # and the triggers are back
        s.execute(text("DELETE FROM reports WHERE id = :i"), {"i": rid})


# -- a signed report enters only by signing or amending (migration 0008) --------------------------------
_RAW_SIGNED = (
    "INSERT INTO reports (scan_id, author_id, findings, impression, recommendations, is_ai_corrected, version, "
    "supersedes_id, signed_at, content_hash, record_mac, amend_reason) "
    "VALUES (:s, :a, 'Forged.', 'Forged.', '', 0, :v, :sup, :t, :h, :m, :r)"
)


def test_a_raw_signed_insert_without_seal_author_or_amendment_shape_is_refused_on_sqlite(fresh: Runtime) -> None:
    """SQLite's share of the insert guard: the seal, a doctor as author, an amendment's shape.

    (PostgreSQL's app role is held to more, drafts and the server's clock included:
    ``tests/test_privileges.py``. SQLite has no roles: whoever can write the file can drop a trigger.)
    """
    rid, _ = _signed(fresh)
    doc, patient = _user(fresh, "dr.hassan"), _user(fresh, "rahul.mehta")
    scan, other_scan = scan_of(fresh, "imran.khan"), scan_of(fresh, "li.wei")
    base = {"s": scan, "a": doc, "v": 1, "sup": None, "t": "2026-11-27 12:00:00.000000", "h": "a" * 64,
            "m": "k1:" + "0" * 64, "r": None}  # fmt: skip
    amend = {"sup": rid, "v": 2, "r": "Typo"}
    forged = {
        "no seal": {"m": None},
        "no hash": {"h": None},
        "neither": {"m": None, "h": None},
        "a patient as author": {"a": patient},
        "an unknown author": {"a": 10**6},
        "version 2 of nothing": {"v": 2},
        "version 0": {"v": 0},
        "an amendment without a reason": {**amend, "r": None},
        "an amendment with a blank reason": {**amend, "r": "  "},
        "an amendment skipping a version": {**amend, "v": 3},
        "an amendment of another scan's report": {**amend, "s": other_scan},
        "an amendment of no report": {**amend, "sup": 10**6},
        "an amendment by a patient": {**amend, "a": patient},
    }
    with fresh.db.read_only() as s:
        before = s.scalar(select(func.count()).select_from(Report))
    refused = []
    for name, change in forged.items():
        try:
            with fresh.db.session() as s:
                s.execute(text(_RAW_SIGNED), {**base, **change})
        except ImmutableRecordError as exc:
            if "signing or amending" in str(exc):
                refused.append(name)
    assert refused == list(forged)
    with fresh.db.read_only() as s:
        assert s.scalar(select(func.count()).select_from(Report)) == before
    # the app's own path is unchanged: sign (above) and amend through the ORM
    assert amend_report(fresh.db, rid, _user(fresh, "dr.chen"), "Left apical pneumothorax.", "Pneumothorax.", "",
                        reason="Detail")  # fmt: skip
    assert verify_reports(fresh.db).ok
