"""The audit log: append-only rows, each hash-chained to the one before it.

One API for every area::

    from core import audit
    audit.record(db, audit.SCAN_READ, actor_id=doctor.id, subject=scan_id)
    audit.record_in(session, audit.DRAFT_SAVE, actor_id, scan_id, draft_id=7, version=2)

``record`` writes in its own short transaction; ``record_in`` writes inside the
caller's, so an action and its audit row commit (or roll back) together.

Rows hold ids, event types, outcomes and hashes, never free text: a string in
``subject`` or ``ids`` that is not id-shaped (letters, digits and ``_.:-/``, no
spaces, at most 64 characters) is stored as ``sha256:<hex>`` instead, so a
question or an upstream error body can never land in the log.

Chaining: every writer first locks the single ``audit_head`` row (an UPDATE, so
SQLite takes its write lock and PostgreSQL a row lock), reads the last sequence
number and hash, and appends ``seq + 1`` with ``row_hash = sha256(prev_hash +
row)``. Concurrent writers therefore queue instead of forking the chain; the
unique index on ``seq`` would refuse a fork anyway. Database triggers refuse
UPDATE and DELETE on ``audit_log``; :func:`verify` recomputes the chain.

Keys: each row also stores ``row_mac``, an HMAC of its hash under the record key
(:mod:`core.store.keys`), which the database does not hold, so a rewritten chain
with recomputed hashes still fails; and after each commit the head is
checkpointed outside the database (:mod:`core.store.checkpoint`), so a chain cut
short and re-headed fails too.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from core.store.checkpoint import read_checkpoint
from core.store.db import Database, keyring_of
from core.store.integrity import GENESIS, audit_row_hash
from core.store.models import AuditHead, AuditLog, utcnow

__all__ = [
    "ASK",
    "DOC_IDENTITY",
    "DRAFT_GENERATE",
    "DRAFT_SAVE",
    "DRAFT_SIGN",
    "EVENTS",
    "IMPORT",
    "LOGIN",
    "LOGIN_FAILED",
    "LOGIN_LOCKED",
    "LOGOUT",
    "REBUILD",
    "REPORT_AMEND",
    "REPORT_SEAL",
    "SCAN_READ",
    "SETTINGS_CHANGE",
    "UPLOAD",
    "AuditVerification",
    "record",
    "record_in",
    "safe_value",
    "verify",
]

SCAN_READ = "scan.read"
ASK = "ask"
DRAFT_GENERATE = "draft"  # the name the draft generator has always written
DRAFT_SAVE = "draft.save"
DRAFT_SIGN = "draft.sign"
CRITICAL_RESULT = "critical.communicated"
REPORT_AMEND = "report.amend"
REPORT_SEAL = "report.seal"  # a signed report that entered the record without a draft (demo seed, migration 0005)
UPLOAD = "upload"
IMPORT = "import"
LOGIN = "login"
LOGIN_FAILED = "login.failed"
LOGIN_LOCKED = "login.locked"
LOGOUT = "logout"
SETTINGS_CHANGE = "settings.change"
REBUILD = "rebuild"
SHARE_REQUEST = "share.request"  # a doctor asks to share a document of their own space (core.kb.provenance)
SHARE_APPROVE = "share.approve"  # a second doctor approves (or, outcome "refused", the requester tried to)
SHARE_REJECT = "share.reject"
DOC_IDENTITY = "doc.identity"  # an owner corrects a document's title, issuer, year (core.kb.docidentity)
EVENTS: frozenset[str] = frozenset(
    {
        SCAN_READ,
        ASK,
        DRAFT_GENERATE,
        DRAFT_SAVE,
        DRAFT_SIGN,
        REPORT_AMEND,
        REPORT_SEAL,
        UPLOAD,
        IMPORT,
        LOGIN,
        LOGIN_FAILED,
        LOGIN_LOCKED,
        LOGOUT,
        SETTINGS_CHANGE,
        REBUILD,
        SHARE_REQUEST,
        SHARE_APPROVE,
        SHARE_REJECT,
        DOC_IDENTITY,
    }
)

_ID_SHAPED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/\-]{0,63}$")
_EVENT_SHAPED = re.compile(r"^[a-z][a-z0-9_.\-]{0,39}$")
_HEX = re.compile(r"[0-9a-f]{1,64}")
_SHORT = 40  # width of the subject, backend and outcome columns


def safe_value(value: Any) -> Any:
    """``value`` as the audit log may hold it: numbers and id-shaped strings as they are, anything else hashed."""
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, list | tuple):
        return [safe_value(v) for v in value]
    text = str(value)
    if _ID_SHAPED.match(text):
        return text
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _short(value: str | None) -> str | None:
    """An id-shaped string of at most 40 characters, or a truncated hash of it."""
    if value is None:
        return None
    safe = safe_value(value)
    if (isinstance(safe, str) and safe.startswith("sha256:")) or len(str(safe)) > _SHORT:
        return "h:" + hashlib.sha256(str(value).encode()).hexdigest()[: _SHORT - 2]
    return str(safe)


def _hash_or_short(value: str | None) -> str | None:
    """A hex digest is already opaque: all 64 characters are kept; anything else goes through :func:`_short`."""
    if value is None or _HEX.fullmatch(value):
        return value
    return _short(value)


def record_in(
    session: Session,
    event: str,
    actor_id: int | None,
    subject: str | None = None,
    *,
    outcome: str = "ok",
    backend: str | None = None,
    prompt_hash: str | None = None,
    **ids: Any,
) -> int:
    """Append one chained audit row inside ``session``'s transaction; returns its sequence number."""
    if not _EVENT_SHAPED.match(event):
        raise ValueError(f"audit event {event!r} is not an event name (lower-case letters, digits, '._-')")
    is_sqlite = session.get_bind().dialect.name == "sqlite"
    head = AuditHead.metadata.tables["audit_head"]
    seed = (sqlite_insert if is_sqlite else pg_insert)(head).values(id=1, seq=0, last_hash=GENESIS)
    session.execute(seed.on_conflict_do_nothing())
    # the lock: SQLite's write lock / PostgreSQL's row lock on the head, held until commit
    session.execute(update(head).where(head.c.id == 1).values(seq=head.c.seq + 1))
    seq, prev = session.execute(select(head.c.seq, head.c.last_hash).where(head.c.id == 1)).one()
    row: dict[str, Any] = {
        "seq": seq,
        "at": utcnow(),
        "actor_id": actor_id,
        "action": event,
        "scan_ref": _short(subject),
        "backend": _short(backend),
        "prompt_hash": _hash_or_short(prompt_hash),
        "outcome": _short(outcome) or "ok",
        "detail": {str(k): safe_value(v) for k, v in ids.items()},
    }
    row_hash = audit_row_hash(prev_hash=prev, **row)
    ring = keyring_of(session)
    mac = ring.seal(row_hash) if ring is not None else None
    session.add(AuditLog(**row, prev_hash=prev, row_hash=row_hash, row_mac=mac))
    session.flush()
    session.execute(update(head).where(head.c.id == 1).values(last_hash=row_hash))
    session.info["audit_head"] = (int(seq), row_hash)  # checkpointed outside the database after commit
    return int(seq)


def record(
    db: Database,
    event: str,
    actor_id: int | None,
    subject: str | None = None,
    *,
    outcome: str = "ok",
    backend: str | None = None,
    prompt_hash: str | None = None,
    **ids: Any,
) -> int:
    """Append one chained audit row in its own transaction; returns its sequence number."""
    with db.session() as s:
        return record_in(
            s, event, actor_id, subject, outcome=outcome, backend=backend, prompt_hash=prompt_hash, **ids
        )


@dataclass
class AuditVerification:
    """The result of :func:`verify`: rows checked, the head, and every problem found (empty when intact)."""

    checked: int = 0
    head_seq: int = 0
    head_hash: str = GENESIS
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when the whole chain verifies."""
        return not self.problems

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary."""
        return {
            "ok": self.ok,
            "checked": self.checked,
            "headSeq": self.head_seq,
            "headHash": self.head_hash,
            "problems": self.problems,
        }


def _row_fields(r: AuditLog) -> Mapping[str, Any]:
    return {
        "seq": r.seq,
        "at": r.at,
        "actor_id": r.actor_id,
        "action": r.action,
        "scan_ref": r.scan_ref,
        "backend": r.backend,
        "prompt_hash": r.prompt_hash,
        "outcome": r.outcome,
        "detail": r.detail,
    }


def verify(db: Database, *, max_problems: int = 50) -> AuditVerification:
    """Recompute the whole chain and check it against the record key and the checkpoint outside the database.

    Contiguous ``seq`` from 1, each ``prev_hash`` the row before, each hash right,
    each ``row_mac`` the HMAC of the row's hash under a key of the keyring; and
    the checkpointed head (``audit-head.json`` beside the key) must be a row of
    the chain with the same hash: a chain cut short and re-headed fails here.
    """
    out = AuditVerification()
    rows_at: dict[int, str] = {}
    with db.read_only() as s:
        head = s.get(AuditHead, 1)
        prev, expect = GENESIS, 1
        for r in s.scalars(select(AuditLog).order_by(AuditLog.seq.is_(None), AuditLog.seq, AuditLog.id)).yield_per(
            1000
        ):
            out.checked += 1
            problem = None
            if r.seq is None:
                problem = f"row id {r.id} is outside the chain (no seq)"
            elif r.seq != expect:
                problem = f"seq {expect} is missing (found {r.seq})"
            elif r.prev_hash != prev:
                problem = f"seq {r.seq}: prev_hash does not match the row before"
            elif r.row_hash != audit_row_hash(prev_hash=prev, **_row_fields(r)):
                problem = f"seq {r.seq}: row_hash does not match its content"
            elif why := db.keyring.check(r.row_hash, r.row_mac):
                problem = f"seq {r.seq}: the row {why}"
            if problem and len(out.problems) < max_problems:
                out.problems.append(problem)
            if r.seq is not None:
                prev, expect = r.row_hash or "", r.seq + 1
                rows_at[r.seq] = r.row_hash or ""
    out.head_seq, out.head_hash = (head.seq, head.last_hash) if head else (0, GENESIS)
    if out.head_seq != expect - 1 or out.head_hash != prev:
        out.problems.append(f"the head names seq {out.head_seq}, the chain ends at seq {expect - 1}")
    mark = read_checkpoint(db.checkpoint_file, db.keyring) if db.checkpoint_file else None
    if mark is not None:
        if mark.problem:
            out.problems.append(mark.problem)
        elif mark.seq > expect - 1:
            out.problems.append(
                f"the chain ends at seq {expect - 1} but seq {mark.seq} was checkpointed: audit rows were removed"
            )
        elif mark.seq and rows_at.get(mark.seq) != mark.row_hash:
            out.problems.append(f"seq {mark.seq} no longer has the hash checkpointed for it: the chain was rewritten")
    return out
