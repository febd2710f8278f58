"""Engines, sessions and migrations.

Two engines share one database: a read-write engine for explicit user actions
(save draft, sign, chat history, audit) and a read-only engine that inference
code gets. Read-only is enforced twice: by the ORM (a flush with pending changes
raises :class:`ReadOnlyViolationError`) and by the database itself (SQLite
``PRAGMA query_only``; PostgreSQL ``default_transaction_read_only``), so a raw
SQL write fails too. The database's refusal (SQLite's SQLITE_READONLY,
PostgreSQL's SQLSTATE 25006 ``read_only_sql_transaction``) reaches the caller
as :class:`ReadOnlyViolationError` as well, recognised by its code.

Signed reports and audit rows are guarded the same way twice: the ORM refuses
to flush a change to a signed report, and triggers (migration 0003) refuse any
UPDATE or DELETE of one, however it is issued; that refusal (SQLite's
``RAISE(ABORT, 'casebook-immutable: ...')``, PostgreSQL's SQLSTATE ``CB001``)
reaches the caller of :meth:`Database.session` as :class:`ImmutableRecordError`.
A signed report's sha256 is computed as it is inserted (``_seal_report``), and
sealed with an HMAC under the record key (:mod:`core.store.keys`), which the
database never holds: the keyring rides on the engine's execution options,
so every write path (and a migration) reaches it. After a commit that appended
audit rows, the chain's head is checkpointed to a file beside the key
(:mod:`core.store.checkpoint`), so a chain cut short is caught by ``audit verify``.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from core.errors import ImmutableRecordError, ReadOnlyViolationError
from core.store.checkpoint import write_checkpoint
from core.store.integrity import report_hash
from core.store.keys import Keyring, default_key_file
from core.store.models import Report

__all__ = ["Database"]

log = logging.getLogger(__name__)
MIGRATIONS = Path(__file__).resolve().parent / "migrations"
_PG_READ_ONLY_SQL_TRANSACTION = "25006"  # SQLSTATE; psycopg raises it as errors.ReadOnlySqlTransaction
_PG_IMMUTABLE = "CB001"  # SQLSTATE raised by the record triggers of migration 0003
_SQLITE_CONSTRAINT_TRIGGER = 1811  # extended code of RAISE(ABORT, ...) in a trigger
_IMMUTABLE_PREFIX = "casebook-immutable"
KEYRING_OPTION = "casebook_keyring"  # the execution option that carries the record keyring


def keyring_of(connection: Any) -> Keyring | None:
    """The record keyring of the engine behind ``connection`` (a Connection or a Session)."""
    if isinstance(connection, Session):
        connection = connection.connection()
    ring = connection.get_execution_options().get(KEYRING_OPTION)
    return ring if isinstance(ring, Keyring) else None


def _sqlite_pragmas(busy_timeout_s: float, query_only: bool) -> Any:
    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
        cur.execute("PRAGMA foreign_keys = ON")
        if query_only:
            cur.execute("PRAGMA query_only = ON")
        else:
            cur.execute("PRAGMA journal_mode = WAL")
        cur.close()

    return on_connect


def _is_read_only_refusal(exc: DBAPIError) -> bool:
    """Whether the database refused a write because the connection is read-only (by code, not message text)."""
    orig = exc.orig
    if isinstance(orig, sqlite3.Error):  # the low byte is the primary code of an extended result code
        return int(getattr(orig, "sqlite_errorcode", 0) or 0) & 0xFF == sqlite3.SQLITE_READONLY
    # psycopg names the code ``sqlstate``, psycopg2 ``pgcode``
    code = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    return code == _PG_READ_ONLY_SQL_TRANSACTION


def _is_immutable_refusal(exc: DBAPIError) -> bool:
    """Whether a record trigger refused the statement (signed report or audit row), by code."""
    orig = exc.orig
    if isinstance(orig, sqlite3.Error):
        code = int(getattr(orig, "sqlite_errorcode", 0) or 0)
        return code == _SQLITE_CONSTRAINT_TRIGGER and str(orig).startswith(_IMMUTABLE_PREFIX)
    return (getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)) == _PG_IMMUTABLE


def _seal_report(_mapper: Any, connection: Any, target: Report) -> None:
    """Store the sha256 of a signed version (chained to the version it supersedes) as it is inserted."""
    if target.signed_at is None or target.content_hash is not None:
        return
    prev = None
    if target.supersedes_id is not None:
        prev = connection.scalar(select(Report.content_hash).where(Report.id == target.supersedes_id))
    target.content_hash = report_hash(
        scan_id=target.scan_id,
        author_id=target.author_id,
        findings=target.findings,
        impression=target.impression,
        recommendations=target.recommendations or "",
        is_ai_corrected=bool(target.is_ai_corrected),
        version=target.version or 1,
        supersedes_id=target.supersedes_id,
        signed_at=target.signed_at,
        amend_reason=target.amend_reason,
        prev_hash=prev,
    )
    ring = keyring_of(connection)
    if ring is not None and target.record_mac is None:
        target.record_mac = ring.seal(target.content_hash)


event.listen(Report, "before_insert", _seal_report)


def _refuse_flush(session: Session, _ctx: Any, _instances: Any) -> None:
    if session.new or session.dirty or session.deleted:
        raise ReadOnlyViolationError("Inference sessions are read-only: a write was attempted")


def _guard_signed_reports(session: Session, _ctx: Any, _instances: Any) -> None:
    for obj in list(session.dirty) + list(session.deleted):
        if isinstance(obj, Report) and obj in session.deleted and _was_signed(obj):
            raise ImmutableRecordError(f"Report {obj.id} is signed and cannot be deleted")
        if isinstance(obj, Report) and session.is_modified(obj) and _was_signed(obj):
            raise ImmutableRecordError(f"Report {obj.id} is signed and cannot be changed")


def _was_signed(report: Report) -> bool:
    hist = inspect(report).attrs.signed_at.history
    before = hist.deleted[0] if hist.deleted else (hist.unchanged[0] if hist.unchanged else None)
    return before is not None


_REV = re.compile(r"^(down_revision|revision)\s*(?::[^=]+)?=\s*['\"]?([\w]+|None)['\"]?", re.M)


def shipped_head() -> str | None:
    """The one revision of ``migrations/versions`` that no other revision follows (``None`` if not one)."""
    revs: set[str] = set()
    downs: set[str] = set()
    for path in (MIGRATIONS / "versions").glob("*.py"):
        found = dict((k, v) for k, v in _REV.findall(path.read_text(encoding="utf-8")))
        if "revision" not in found:
            return None  # a file we cannot read this way: let Alembic decide
        revs.add(found["revision"])
        downs.add(found.get("down_revision", "None"))
    heads = revs - downs
    return heads.pop() if len(heads) == 1 else None


class Database:
    """One database reached through a read-write and a read-only engine."""

    def __init__(
        self,
        url: str,
        *,
        echo: bool = False,
        busy_timeout_s: float = 15.0,
        key_file: Path | None = None,
        keyring: Keyring | None = None,
    ) -> None:
        """Open ``url``; records are sealed with ``keyring``, else the keys in ``key_file`` (created if missing).

        ``key_file`` defaults to ``keys/records.key`` beside a SQLite file (``./data/keys`` otherwise);
        the audit checkpoint is ``audit-head.json`` in the same folder.
        """
        self.url = url
        parsed = make_url(url)
        self.is_sqlite = parsed.get_backend_name() == "sqlite"
        memory = self.is_sqlite and parsed.database in (None, "", ":memory:")
        if self.is_sqlite and not memory:
            Path(str(parsed.database)).parent.mkdir(parents=True, exist_ok=True)
        self.key_file = key_file or default_key_file(url)
        self.keyring = keyring or (Keyring.ephemeral() if memory else Keyring.load(self.key_file))
        self.checkpoint_file: Path | None = None if memory else self.key_file.with_name("audit-head.json")
        self.engine = self._make_engine(url, echo, busy_timeout_s, read_only=False)
        self.ro_engine = self._make_engine(url, echo, busy_timeout_s, read_only=True)
        self._rw = sessionmaker(self.engine, expire_on_commit=False)
        self._ro = sessionmaker(self.ro_engine, expire_on_commit=False)
        event.listen(self._rw, "before_flush", _guard_signed_reports)
        event.listen(self._rw, "after_commit", self._checkpoint)
        event.listen(self._ro, "before_flush", _refuse_flush)

    def _checkpoint(self, session: Session) -> None:
        """After a commit that appended audit rows: note the new head outside the database."""
        head = session.info.pop("audit_head", None)
        if head is not None and self.checkpoint_file is not None:
            write_checkpoint(self.checkpoint_file, self.keyring, *head)

    def _make_engine(self, url: str, echo: bool, busy_timeout_s: float, *, read_only: bool) -> Engine:
        options = {KEYRING_OPTION: self.keyring}
        if self.is_sqlite:
            engine = create_engine(
                url, echo=echo, connect_args={"timeout": busy_timeout_s}, execution_options=options
            )
            event.listen(engine, "connect", _sqlite_pragmas(busy_timeout_s, read_only))
            return engine
        connect_args: dict[str, Any] = {}
        if read_only:
            connect_args["options"] = "-c default_transaction_read_only=on"
        return create_engine(
            url, echo=echo, pool_pre_ping=True, connect_args=connect_args, execution_options=options
        )

    def migrate(self) -> None:
        """Bring the schema to the newest Alembic revision (idempotent).

        A database already at the newest revision is left alone without importing Alembic
        (0.3-0.7 s of every command's start-up)."""
        if self._at_head():
            return
        from alembic import command
        from alembic.config import Config

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        with self.engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "head")

    def _at_head(self) -> bool:
        """Whether the database's ``alembic_version`` is the newest revision shipped (read from the files)."""
        head = shipped_head()
        if head is None:
            return False
        try:
            with self.engine.connect() as conn:
                rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
        except DBAPIError:  # a new database: no version table yet
            return False
        return rows == [head]

    def head_revision(self) -> str:
        """The newest Alembic revision shipped with this code."""
        from alembic.config import Config
        from alembic.script import ScriptDirectory

        cfg = Config()
        cfg.set_main_option("script_location", str(MIGRATIONS))
        head = ScriptDirectory.from_config(cfg).get_current_head()
        assert head is not None
        return head

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A read-write unit of work: committed on success, rolled back on error."""
        with self._rw() as s:
            try:
                yield s
                s.commit()
            except DBAPIError as exc:
                s.rollback()
                if _is_immutable_refusal(exc):  # a trigger of migration 0003 said no
                    raise ImmutableRecordError(f"The database refused to change a signed record: {exc.orig}") from exc
                raise
            except BaseException:
                s.rollback()
                raise

    @contextmanager
    def read_only(self) -> Iterator[Session]:
        """A session for inference: any write raises :class:`ReadOnlyViolationError`."""
        with self._ro() as s:
            try:
                yield s
            except DBAPIError as exc:
                # SQLite (query_only): OperationalError "attempt to write a readonly database";
                # PostgreSQL: InternalError "cannot execute UPDATE in a read-only transaction".
                if _is_read_only_refusal(exc):
                    raise ReadOnlyViolationError("Inference sessions are read-only: a write was attempted") from exc
                raise

    def dispose(self) -> None:
        """Close every pooled connection."""
        self.engine.dispose()
        self.ro_engine.dispose()
