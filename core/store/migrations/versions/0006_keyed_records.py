"""Keyed records: an HMAC seal on signed reports and audit rows, and image seeds encrypted under the record key

- ``reports.record_mac`` and ``audit_log.row_mac``: ``kid:hmac`` of the row's hash under the
  record key (:mod:`core.store.keys`), which the database does not hold;
- every signed report without a signing audit row gets one (``report.seal``), so
  ``reports verify`` can cross-check every version against the log;
- ``image_identity_map.uid_seed`` (the UID remapping and date-shift seed) is stored encrypted
  (``s1:kid:nonce:cipher``), the column widened to 160 characters.

Existing rows are sealed as they are found: what was signed before this revision keeps its text,
hash and audit rows, and gains a seal. The record triggers of 0003 refuse the backfill's updates,
so they are dropped for it and created again, unchanged.

The keyring comes from the connection (``Database`` puts it in the engine's execution options):
run this through ``python -m core`` (or ``Database.migrate``), not the bare alembic CLI.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-27 08:40:00
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import sqlalchemy as sa
from alembic import op

from core.errors import ConfigError
from core.store.db import keyring_of
from core.store.integrity import GENESIS, audit_row_hash
from core.store.models import utcnow

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_SIGNING = ("draft.sign", "report.amend", "report.seal")


def _rev0003() -> ModuleType:
    """Revision 0003's module: the trigger statements are dropped and created again from there, once."""
    path = Path(__file__).with_name("0003_records_audit_sessions.py")
    spec = importlib.util.spec_from_file_location("casebook_rev0003", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _triggers(conn: sa.Connection, rev: ModuleType, *, create: bool) -> None:
    pg = conn.dialect.name == "postgresql"
    if create:
        for stmt in rev._PG_TRIGGERS if pg else rev._SQLITE_TRIGGERS:
            op.execute(stmt)
    elif pg:
        for name, table in rev._PG_TRIGGER_NAMES:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
    else:
        for name in rev._SQLITE_TRIGGER_NAMES:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")


_AUDIT = sa.table(
    "audit_log",
    *(sa.column(c) for c in ("id", "actor_id", "action", "scan_ref", "backend", "prompt_hash", "outcome", "seq")),
    sa.column("at", sa.DateTime(timezone=True)),
    sa.column("detail", sa.JSON()),
    sa.column("prev_hash"),
    sa.column("row_hash"),
    sa.column("row_mac"),
)
_HEAD = sa.table("audit_head", sa.column("id"), sa.column("seq"), sa.column("last_hash"))
_REPORTS = sa.table(
    "reports", *(sa.column(c) for c in ("id", "scan_id", "author_id", "content_hash", "record_mac")),
    sa.column("signed_at", sa.DateTime(timezone=True)),
)  # fmt: skip
_SEEDS = sa.table("image_identity_map", sa.column("id"), sa.column("uid_seed"))


def _append_seal_row(conn: sa.Connection, ring: Any, report: Any) -> None:
    """One ``report.seal`` audit row for a signed report the log never saw, chained like core.audit's rows."""
    head = conn.execute(sa.select(_HEAD.c.seq, _HEAD.c.last_hash).where(_HEAD.c.id == 1)).first()
    seq, prev = (int(head[0]) + 1, head[1]) if head else (1, GENESIS)
    row: dict[str, Any] = {
        "seq": seq,
        "at": utcnow(),
        "actor_id": report.author_id,
        "action": "report.seal",
        "scan_ref": report.scan_id,
        "backend": None,
        "prompt_hash": None,
        "outcome": "ok",
        "detail": {"report_id": report.id, "content_hash": report.content_hash, "via": "migration-0006"},
    }
    h = audit_row_hash(prev_hash=prev, **row)
    conn.execute(sa.insert(_AUDIT).values(**row, prev_hash=prev, row_hash=h, row_mac=ring.seal(h)))
    if head:
        conn.execute(sa.update(_HEAD).where(_HEAD.c.id == 1).values(seq=seq, last_hash=h))
    else:
        conn.execute(sa.insert(_HEAD).values(id=1, seq=seq, last_hash=h))


def _backfill(conn: sa.Connection, ring: Any) -> None:
    for a in conn.execute(sa.select(_AUDIT.c.id, _AUDIT.c.row_hash).where(_AUDIT.c.row_hash.is_not(None))).all():
        conn.execute(sa.update(_AUDIT).where(_AUDIT.c.id == a.id).values(row_mac=ring.seal(a.row_hash)))
    logged = {
        (d or {}).get("report_id")
        for (d,) in conn.execute(sa.select(_AUDIT.c.detail).where(_AUDIT.c.action.in_(_SIGNING))).all()
    }
    signed = conn.execute(sa.select(_REPORTS).where(_REPORTS.c.signed_at.is_not(None)).order_by(_REPORTS.c.id)).all()
    for r in signed:
        conn.execute(sa.update(_REPORTS).where(_REPORTS.c.id == r.id).values(record_mac=ring.seal(r.content_hash)))
        if r.id not in logged:
            _append_seal_row(conn, ring, r)
    for seed_id, seed in conn.execute(sa.select(_SEEDS.c.id, _SEEDS.c.uid_seed)).all():
        if not str(seed).startswith("s1:"):
            conn.execute(sa.update(_SEEDS).where(_SEEDS.c.id == seed_id).values(uid_seed=ring.seal_seed(seed)))


def upgrade() -> None:
    """Add the seal columns, seal every existing record, encrypt the image seeds."""
    conn = op.get_bind()
    ring = keyring_of(conn)
    if ring is None:
        raise ConfigError("Migration 0006 needs the record key: run it through `python -m core setup`")
    op.add_column("reports", sa.Column("record_mac", sa.String(length=90), nullable=True))
    op.add_column("audit_log", sa.Column("row_mac", sa.String(length=90), nullable=True))
    if conn.dialect.name == "postgresql":
        op.execute("ALTER TABLE image_identity_map ALTER COLUMN uid_seed TYPE varchar(160)")
    rev = _rev0003()
    _triggers(conn, rev, create=False)
    _backfill(conn, ring)
    _triggers(conn, rev, create=True)


def downgrade() -> None:
    """Drop the seal columns (seeds stay encrypted: decrypting needs the key, run it by hand if ever)."""
    rev = _rev0003()
    conn = op.get_bind()
    _triggers(conn, rev, create=False)
    op.execute("ALTER TABLE audit_log DROP COLUMN row_mac")
    op.execute("ALTER TABLE reports DROP COLUMN record_mac")
    _triggers(conn, rev, create=True)
