"""Records enforced by the database, a hash-chained audit log, log-in attempts and sessions

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25 06:10:00

- ``reports``: ``content_hash`` and ``amend_reason``; a unique index on
  ``supersedes_id`` (one amendment per version); triggers refuse UPDATE and
  DELETE of a signed report (and TRUNCATE on PostgreSQL).
- ``report_drafts.version``: the optimistic lock of draft edits.
- ``audit_log``: ``seq``, ``prev_hash``, ``row_hash`` (a hash chain, backfilled
  for existing rows) and the ``audit_head`` row writers lock; triggers make the
  log append-only.
- ``login_attempts`` and ``user_sessions``.

The trigger errors carry a code the application recognises: SQLite's
``RAISE(ABORT, 'casebook-immutable: ...')`` (SQLITE_CONSTRAINT_TRIGGER) and
PostgreSQL's SQLSTATE ``CB001``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from core.store.integrity import GENESIS, audit_row_hash, report_hash

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_SQLITE_TRIGGERS = (
    """CREATE TRIGGER reports_signed_no_update BEFORE UPDATE ON reports
       WHEN OLD.signed_at IS NOT NULL
       BEGIN SELECT RAISE(ABORT, 'casebook-immutable: a signed report cannot be changed'); END""",
    """CREATE TRIGGER reports_signed_no_delete BEFORE DELETE ON reports
       WHEN OLD.signed_at IS NOT NULL
       BEGIN SELECT RAISE(ABORT, 'casebook-immutable: a signed report cannot be deleted'); END""",
    """CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
       BEGIN SELECT RAISE(ABORT, 'casebook-immutable: the audit log is append-only'); END""",
    """CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
       BEGIN SELECT RAISE(ABORT, 'casebook-immutable: the audit log is append-only'); END""",
)
_SQLITE_TRIGGER_NAMES = (
    "reports_signed_no_update",
    "reports_signed_no_delete",
    "audit_log_no_update",
    "audit_log_no_delete",
)

_PG_FUNCTIONS = (
    """CREATE OR REPLACE FUNCTION casebook_refuse_signed_report() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF OLD.signed_at IS NOT NULL THEN
           RAISE EXCEPTION 'casebook-immutable: signed report % cannot be changed or deleted', OLD.id
             USING ERRCODE = 'CB001';
         END IF;
         IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;
         RETURN NEW;
       END $$""",
    """CREATE OR REPLACE FUNCTION casebook_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         RAISE EXCEPTION 'casebook-immutable: % is append-only (% refused)', TG_TABLE_NAME, TG_OP
           USING ERRCODE = 'CB001';
       END $$""",
)
_PG_TRIGGERS = (
    """CREATE TRIGGER reports_signed_immutable BEFORE UPDATE OR DELETE ON reports
       FOR EACH ROW EXECUTE FUNCTION casebook_refuse_signed_report()""",
    """CREATE TRIGGER reports_no_truncate BEFORE TRUNCATE ON reports
       FOR EACH STATEMENT EXECUTE FUNCTION casebook_refuse_change()""",
    """CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log
       FOR EACH ROW EXECUTE FUNCTION casebook_refuse_change()""",
    """CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log
       FOR EACH STATEMENT EXECUTE FUNCTION casebook_refuse_change()""",
)
_PG_TRIGGER_NAMES = (
    ("reports_signed_immutable", "reports"),
    ("reports_no_truncate", "reports"),
    ("audit_log_append_only", "audit_log"),
    ("audit_log_no_truncate", "audit_log"),
)


def _backfill(conn: sa.Connection) -> None:
    """Hash the signed reports and chain the audit rows written before this revision."""
    # typed columns: SQLite hands back a DateTime as text and a Boolean as 0/1 without them
    reports = sa.table(
        "reports",
        *(
            sa.column(c)
            for c in (
                "id",
                "scan_id",
                "author_id",
                "findings",
                "impression",
                "recommendations",
                "version",
                "supersedes_id",
                "amend_reason",
                "content_hash",
            )
        ),
        sa.column("is_ai_corrected", sa.Boolean()),
        sa.column("signed_at", sa.DateTime(timezone=True)),
    )
    hashes: dict[int, str] = {}
    for r in conn.execute(sa.select(reports).where(reports.c.signed_at.is_not(None)).order_by(reports.c.id)).mappings():
        h = report_hash(
            scan_id=r["scan_id"],
            author_id=r["author_id"],
            findings=r["findings"],
            impression=r["impression"],
            recommendations=r["recommendations"],
            is_ai_corrected=r["is_ai_corrected"],
            version=r["version"],
            supersedes_id=r["supersedes_id"],
            signed_at=r["signed_at"],
            amend_reason=None,
            prev_hash=hashes.get(r["supersedes_id"]) if r["supersedes_id"] else None,
        )
        hashes[r["id"]] = h
        conn.execute(sa.update(reports).where(reports.c.id == r["id"]).values(content_hash=h))
    audit = sa.table(
        "audit_log",
        *(
            sa.column(c)
            for c in ("id", "actor_id", "action", "scan_ref", "backend", "prompt_hash", "outcome", "seq")
        ),
        sa.column("at", sa.DateTime(timezone=True)),
        sa.column("detail", sa.JSON()),
        sa.column("prev_hash"),
        sa.column("row_hash"),
    )
    prev, seq = GENESIS, 0
    for a in conn.execute(sa.select(audit).order_by(audit.c.id)).mappings():
        seq += 1
        h = audit_row_hash(
            prev_hash=prev,
            seq=seq,
            at=a["at"],
            actor_id=a["actor_id"],
            action=a["action"],
            scan_ref=a["scan_ref"],
            backend=a["backend"],
            prompt_hash=a["prompt_hash"],
            outcome=a["outcome"],
            detail=a["detail"],
        )
        conn.execute(sa.update(audit).where(audit.c.id == a["id"]).values(seq=seq, prev_hash=prev, row_hash=h))
        prev = h
    if seq:  # an empty log gets its head row from the first writer (core.audit)
        head = sa.table("audit_head", sa.column("id"), sa.column("seq"), sa.column("last_hash"))
        conn.execute(sa.insert(head).values(id=1, seq=seq, last_hash=prev))


def upgrade() -> None:
    """Apply this revision."""
    op.add_column("reports", sa.Column("content_hash", sa.String(length=64), nullable=True))
    op.add_column("reports", sa.Column("amend_reason", sa.Text(), nullable=True))
    op.create_index("uq_reports_supersedes", "reports", ["supersedes_id"], unique=True)
    op.add_column("report_drafts", sa.Column("version", sa.Integer(), nullable=False, server_default="1"))
    op.add_column("audit_log", sa.Column("seq", sa.Integer(), nullable=True))
    op.add_column("audit_log", sa.Column("prev_hash", sa.String(length=64), nullable=True))
    op.add_column("audit_log", sa.Column("row_hash", sa.String(length=64), nullable=True))
    op.create_index("uq_audit_log_seq", "audit_log", ["seq"], unique=True)
    op.create_table(
        "audit_head",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("last_hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "login_attempts",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=8), nullable=False),
        sa.Column("at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_login_attempts_key_at", "login_attempts", ["key_hash", "at"])
    op.create_table(
        "user_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("last_seen_at", sa.Float(), nullable=False),
        sa.Column("expires_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("token_hash"),
    )
    op.create_index("ix_user_sessions_user_id", "user_sessions", ["user_id"])
    conn = op.get_bind()
    _backfill(conn)
    if conn.dialect.name == "postgresql":
        for stmt in _PG_FUNCTIONS + _PG_TRIGGERS:
            op.execute(stmt)
    else:
        for stmt in _SQLITE_TRIGGERS:
            op.execute(stmt)


def downgrade() -> None:
    """Revert this revision (the triggers first, so the columns can go)."""
    if op.get_bind().dialect.name == "postgresql":
        for name, table in _PG_TRIGGER_NAMES:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
        op.execute("DROP FUNCTION IF EXISTS casebook_refuse_signed_report()")
        op.execute("DROP FUNCTION IF EXISTS casebook_refuse_change()")
    else:
        for name in _SQLITE_TRIGGER_NAMES:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_index("ix_user_sessions_user_id", table_name="user_sessions")
    op.drop_table("user_sessions")
    op.drop_index("ix_login_attempts_key_at", table_name="login_attempts")
    op.drop_table("login_attempts")
    op.drop_table("audit_head")
    op.drop_index("uq_audit_log_seq", table_name="audit_log")
    op.drop_index("uq_reports_supersedes", table_name="reports")
    # plain ALTER TABLE ... DROP COLUMN (SQLite 3.35+): a batch copy of `reports` would trip the
    # foreign key from report_drafts
    for table, col in (
        ("audit_log", "row_hash"),
        ("audit_log", "prev_hash"),
        ("audit_log", "seq"),
        ("report_drafts", "version"),
        ("reports", "amend_reason"),
        ("reports", "content_hash"),
    ):
        op.execute(f"ALTER TABLE {table} DROP COLUMN {col}")
