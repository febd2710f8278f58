"""Class 5 of issue 26: the PostgreSQL app role holds exactly the privilege matrix, and the app works under it.

On the real PostgreSQL server (``scripts/pg_setup.sh``), on a fresh clone of the demo database:

* the grants generated from :data:`core.store.roles.APP_PRIVILEGES` are applied to a new role,
  then read back from the catalogue (``aclexplode`` of ``pg_class.relacl`` and
  ``pg_attribute.attacl``) and compared with the matrix, table by table and column by column;
  every table of the schema must be in the matrix;
* generated statements (every column of every table for UPDATE, every table for DELETE and
  TRUNCATE) are run as the role: each is refused (SQLSTATE 42501) exactly when the matrix
  says so; the named attacks (a user's role, failed log-ins, sessions) are refused;
* the app's own writes (log-in with failures, sessions, draft, sign, amend, rate limits,
  audit) succeed with every connection running as the role; a bare signed report the role
  inserts is refused (migration 0008, a table of forgeries), and one it signs through a draft in
  another doctor's name fails ``reports verify`` (no record-key seal).

docs/RELIABILITY.md shows the matrix; a test here keeps the two equal.
"""

from __future__ import annotations

import datetime as dt
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select, text
from sqlalchemy.exc import DBAPIError

from core import audit
from core.auth import authenticate
from core.demo.patients import DEMO_PASSWORD
from core.errors import ImmutableRecordError
from core.limits import limited
from core.reports import DraftText, amend_report, save_draft, sign_draft, verify_reports
from core.runtime import Runtime
from core.sessions import create_session, resolve_session, revoke_session
from core.settings import REPO_ROOT
from core.store.db import Database
from core.store.integrity import report_hash
from core.store.models import User
from core.store.roles import APP_PRIVILEGES, app_role_sql, matrix_markdown
from tests.backends import writable_runtime
from tests.conftest import scan_of

_ALL = ("SELECT", "INSERT", "UPDATE", "DELETE", "TRUNCATE", "REFERENCES", "TRIGGER")


def test_reliability_doc_shows_the_matrix_from_code() -> None:
    doc = (REPO_ROOT / "docs" / "RELIABILITY.md").read_text()
    assert matrix_markdown() in doc, "regenerate the matrix: python -c 'from core.store.roles import *; print(matrix_markdown())'"


@pytest.fixture()
def pg(request: pytest.FixtureRequest, demo_root: Path, tmp_path: Path) -> Iterator[tuple[Runtime, str]]:
    """A fresh PostgreSQL clone of the demo database and a new role holding the generated grants."""
    rt = writable_runtime("postgres", request, demo_root, tmp_path)
    role = f"cbt_app_{uuid.uuid4().hex[:8]}"
    with rt.db.engine.begin() as c:
        tables = set(c.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars())
        c.execute(text(f"CREATE ROLE {role} NOLOGIN"))
        for stmt in app_role_sql(role, tables):
            c.execute(text(stmt))
    try:
        yield rt, role
    finally:
        with rt.db.engine.begin() as c:
            c.execute(text(f"DROP OWNED BY {role}"))
            c.execute(text(f"DROP ROLE {role}"))
        rt.db.dispose()


def _catalogue(rt: Runtime, role: str) -> tuple[dict[str, set[str]], dict[str, dict[str, set[str]]]]:
    """(table -> table-level privileges, table -> privilege -> columns granted per column) as PostgreSQL holds them."""
    with rt.db.engine.connect() as c:
        tables: dict[str, set[str]] = {t: set() for t in c.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars()}
        for table, priv in c.execute(text(
            "SELECT c.relname, a.privilege_type FROM pg_class c CROSS JOIN LATERAL aclexplode(c.relacl) a "
            "JOIN pg_roles r ON r.oid = a.grantee WHERE c.relnamespace = 'public'::regnamespace "
            "AND c.relkind IN ('r', 'p') AND r.rolname = :role"
        ), {"role": role}):  # fmt: skip
            tables[table].add(priv)
        columns: dict[str, dict[str, set[str]]] = {}
        for table, col, priv in c.execute(text(
            "SELECT c.relname, att.attname, a.privilege_type FROM pg_attribute att JOIN pg_class c ON c.oid = att.attrelid "
            "CROSS JOIN LATERAL aclexplode(att.attacl) a JOIN pg_roles r ON r.oid = a.grantee "
            "WHERE c.relnamespace = 'public'::regnamespace AND r.rolname = :role"
        ), {"role": role}):  # fmt: skip
            columns.setdefault(table, {}).setdefault(priv, set()).add(col)
    return tables, columns


@pytest.mark.postgres
def test_the_real_grants_equal_the_matrix(pg: tuple[Runtime, str]) -> None:
    rt, role = pg
    tables, columns = _catalogue(rt, role)
    assert set(tables) <= set(APP_PRIVILEGES), f"tables missing from the matrix: {set(tables) - set(APP_PRIVILEGES)}"
    for table, held in tables.items():
        privs, per_column = APP_PRIVILEGES[table]
        assert held == set(privs), (table, held, privs)
        assert columns.get(table, {}) == {p: set(c) for p, c in per_column.items()}, (table, columns.get(table))


def _columns(rt: Runtime) -> list[tuple[str, str]]:
    with rt.db.engine.connect() as c:
        return [tuple(r) for r in c.execute(text(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = 'public' "
            "ORDER BY table_name, ordinal_position"
        ))]  # fmt: skip


def _as_role(rt: Runtime, role: str, statement: str, params: dict[str, Any] | None = None) -> str | None:
    """Run ``statement`` as ``role`` (rolled back); the SQLSTATE it was refused with, or ``None``."""
    try:
        with rt.db.engine.connect() as c, c.begin() as tx:
            c.execute(text(f"SET LOCAL ROLE {role}"))
            c.execute(text(statement), params or {})
            tx.rollback()
    except DBAPIError as exc:
        return str(getattr(exc.orig, "sqlstate", "?"))
    return None


@pytest.mark.postgres
def test_generated_updates_deletes_and_truncates_are_refused_exactly_where_the_matrix_says(
    pg: tuple[Runtime, str],
) -> None:
    rt, role = pg
    tried = 0
    for table, column in _columns(rt):
        privs, per_column = APP_PRIVILEGES[table]
        allowed = "UPDATE" in privs or column in per_column.get("UPDATE", ())
        refused = _as_role(rt, role, f'UPDATE {table} SET "{column}" = "{column}" WHERE false')
        assert (refused is None) == allowed, (table, column, refused)
        tried += 1
    for table, (privs, _) in APP_PRIVILEGES.items():
        refused = _as_role(rt, role, f"DELETE FROM {table} WHERE false")
        assert (refused is None) == ("DELETE" in privs), (table, refused)
        assert _as_role(rt, role, f"TRUNCATE {table}") == "42501", table
        assert _as_role(rt, role, f"ALTER TABLE {table} DISABLE TRIGGER ALL") == "42501", table
        tried += 3
    assert tried > 150  # every column of ~19 tables, and three statements per table


ATTACKS = [  # (statement, the SQLSTATE that refuses it): the red team's, and their neighbours
    ("UPDATE users SET role = 'doctor' WHERE role = 'patient'", "42501"),
    ("UPDATE users SET password_hash = 'x'", "42501"),
    ("UPDATE users SET display_name = 'x'", "42501"),
    ("DELETE FROM users", "42501"),
    ("DELETE FROM login_attempts", "42501"),
    ("DELETE FROM login_attempts WHERE status = 'failed'", "42501"),
    ("UPDATE login_attempts SET status = 'ok' WHERE status = 'failed'", "CB001"),
    ("UPDATE login_attempts SET at = 0", "CB001"),
    ("UPDATE login_attempts SET key_hash = 'x' WHERE status = 'failed'", "CB001"),
    ("UPDATE user_sessions SET user_id = 1", "42501"),
    ("UPDATE user_sessions SET expires_at = expires_at + 1e9", "42501"),
    ("UPDATE user_sessions SET token_hash = 'x'", "42501"),
    ("UPDATE user_sessions SET revoked_at = NULL WHERE revoked_at IS NOT NULL", "CB001"),
    ("UPDATE reports SET findings = 'x'", "42501"),
    ("DELETE FROM reports", "42501"),
    ("UPDATE audit_log SET outcome = 'x'", "42501"),
    ("DELETE FROM audit_log", "42501"),
]


@pytest.mark.postgres
def test_the_named_attacks_are_refused(pg: tuple[Runtime, str]) -> None:
    rt, role = pg
    # rows for the guards to refuse on: a failed log-in and a revoked session
    assert authenticate(rt.db, "dr.chen", "wrong", max_failures=5, window_s=300) is None
    with rt.db.read_only() as s:
        uid = int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)
    revoke_session(rt.db, create_session(rt.db, uid, lifetime_s=60))
    for statement, code in ATTACKS:
        got = _as_role(rt, role, statement)
        assert got == code, (statement, got)


@pytest.mark.postgres
def test_the_app_works_under_the_role_and_a_forged_report_fails_verify(pg: tuple[Runtime, str]) -> None:
    rt, role = pg
    db = Database(rt.settings.database_url, key_file=rt.settings.record_key_path)

    @event.listens_for(db.engine, "connect")
    def _as_app(dbapi_conn: Any, _rec: Any) -> None:
        with dbapi_conn.cursor() as cur:
            cur.execute(f"SET ROLE {role}")
        dbapi_conn.commit()

    try:
        assert authenticate(db, "dr.chen", "wrong", max_failures=5, window_s=300) is None
        user = authenticate(db, "dr.chen", DEMO_PASSWORD, max_failures=5, window_s=300)
        assert user is not None
        token = create_session(db, user.id, lifetime_s=60)
        assert resolve_session(db, token, idle_s=60, now=time.time() + 40) is not None  # touches
        assert revoke_session(db, token)
        scan = scan_of(rt, "imran.khan")
        draft = save_draft(db, scan, user.id, DraftText("Left pneumothorax.", "Pneumothorax.", ""))
        rid = sign_draft(db, draft, user.id)
        amend_report(db, rid, user.id, "Left apical pneumothorax.", "Pneumothorax.", "", reason="Detail")
        with limited(db, user.id, "guideline", limit=3, window_s=60):
            audit.record(db, audit.SCAN_READ, user.id, scan)
        with pytest.raises(ImmutableRecordError), db.session() as s:
            s.execute(text("UPDATE login_attempts SET status = 'ok' WHERE status = 'failed'"))
        assert verify_reports(db).ok and audit.verify(rt.db).ok
        # the role may INSERT a report (signing needs it), but a bare signed report is refused (0008) ...
        with rt.db.read_only() as s:
            other = int(s.scalar(select(User.id).where(User.username == "dr.hassan")) or 0)
        now = dt.datetime.now(dt.UTC)
        forged = {"s": scan, "a": other, "t": now, "m": "k1:" + "0" * 64}
        h = report_hash(scan_id=scan, author_id=other, findings="Forged.", impression="Forged.", recommendations="",
                        is_ai_corrected=False, version=1, supersedes_id=None, signed_at=now, amend_reason=None,
                        prev_hash=None)  # fmt: skip
        with pytest.raises(DBAPIError, match="signs no draft") as refused, db.engine.begin() as c:
            c.execute(text(_FORGED_REPORT), {**forged, "h": h, "v": 1, "sup": None, "r": None})
        assert getattr(refused.value.orig, "sqlstate", None) == "CB001"
        # ... and one forged through a draft in the colleague's name is not sealed: verify flags it
        with db.engine.begin() as c:
            c.execute(text(_CLAIMED_DRAFT), {"s": scan, "a": other})
            c.execute(text(_FORGED_REPORT), {**forged, "h": h, "v": 1, "sup": None, "r": None})
        problems = verify_reports(db).problems
        assert any("does not match" in p for p in problems) and any("no audit row" in p for p in problems), problems
    finally:
        db.dispose()


_CLAIMED_DRAFT = (
    "INSERT INTO report_drafts (scan_id, author_id, findings, impression, recommendations, from_ai, status, "
    "created_at, updated_at, version) VALUES (:s, :a, 'x', 'x', '', false, 'signed', now(), now(), 1)"
)
_OPEN_DRAFT = _CLAIMED_DRAFT.replace("'signed'", "'open'")
_FORGED_REPORT = (
    "INSERT INTO reports (scan_id, author_id, findings, impression, recommendations, is_ai_corrected, version, "
    "supersedes_id, signed_at, content_hash, record_mac, amend_reason) "
    "VALUES (:s, :a, 'Forged.', 'Forged.', '', false, :v, :sup, :t, :h, :m, :r)"
)


def _steps_as_role(rt: Runtime, role: str, steps: list[tuple[str, dict[str, Any]]]) -> str | None:
    """Run ``steps`` as ``role`` in one transaction (rolled back); the SQLSTATE of a refusal, or ``None``."""
    try:
        with rt.db.engine.connect() as c, c.begin() as tx:
            c.execute(text(f"SET LOCAL ROLE {role}"))
            for statement, params in steps:
                c.execute(text(statement), params)
            tx.rollback()
    except DBAPIError as exc:
        return str(getattr(exc.orig, "sqlstate", "?"))
    return None


@pytest.mark.postgres
def test_the_role_cannot_insert_a_signed_report_except_by_signing_or_amending(pg: tuple[Runtime, str]) -> None:
    """A table of forged signed reports, each a raw INSERT as the app role: every one is refused (CB001).

    The controls (a claimed draft of the same author and scan, signed now; a proper amendment) pass,
    and the app's own draft -> sign -> amend works under the role (the test above).
    """
    rt, role = pg
    with rt.db.read_only() as s:
        ids = dict(s.execute(select(User.username, User.id)).tuples().all())
    chen, hassan, patient = ids["dr.chen"], ids["dr.hassan"], ids["rahul.mehta"]
    scan, other_scan = scan_of(rt, "imran.khan"), scan_of(rt, "li.wei")
    rid = sign_draft(rt.db, save_draft(rt.db, scan, chen, DraftText("Left pneumothorax.", "Pneumothorax.", "")), chen)
    now = dt.datetime.now(dt.UTC)
    base = {"s": scan, "a": hassan, "v": 1, "sup": None, "t": now, "h": "a" * 64, "m": "k1:" + "0" * 64, "r": None}

    def draft(**kw: Any) -> tuple[str, dict[str, Any]]:
        return (_OPEN_DRAFT if kw.pop("open", False) else _CLAIMED_DRAFT, {"s": scan, "a": hassan, **kw})

    def report(**kw: Any) -> tuple[str, dict[str, Any]]:
        return (_FORGED_REPORT, {**base, **kw})

    amend = {"s": scan, "sup": rid, "v": 2, "r": "Typo"}
    forged: dict[str, list[tuple[str, dict[str, Any]]]] = {
        "no draft": [report()],
        "another doctor's draft": [draft(a=chen), report()],
        "a draft of another scan": [draft(s=other_scan), report()],
        "an open draft": [draft(open=True), report()],
        "version 2 of nothing": [draft(), report(v=2)],
        "back-dated a day": [draft(), report(t=now - dt.timedelta(days=1))],
        "back-dated a month": [draft(), report(t=now - dt.timedelta(days=30))],
        "signed in the future": [draft(), report(t=now + dt.timedelta(hours=1))],
        "a patient as author": [draft(a=patient), report(a=patient)],
        "an unknown author": [report(a=10**6)],
        "no seal": [draft(), report(m=None)],
        "no hash": [draft(), report(h=None)],
        "an amendment without a reason": [report(**{**amend, "r": None})],
        "an amendment with a blank reason": [report(**{**amend, "r": "   "})],
        "an amendment skipping a version": [report(**{**amend, "v": 3})],
        "an amendment of another scan's report": [report(**{**amend, "s": other_scan})],
        "an amendment of no report": [report(**{**amend, "sup": 10**6})],
        "an amendment by a patient": [report(**{**amend, "a": patient})],
        "an amendment back-dated": [report(**{**amend, "t": now - dt.timedelta(days=2)})],
    }
    for name, steps in forged.items():
        assert _steps_as_role(rt, role, steps) == "CB001", name
    assert _steps_as_role(rt, role, [draft(), report()]) is None  # the shape of signing: the rule lets it in
    assert _steps_as_role(rt, role, [report(**amend)]) is None  # the shape of an amendment
    assert len(forged) >= 19
