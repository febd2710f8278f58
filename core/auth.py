"""Log-in and access rules: who may see which scan.

Passwords are checked with bcrypt against ``users.password_hash``; a wrong
username and a wrong password take the same time and give the same answer.
A signed-in user is an immutable :class:`CurrentUser`. Doctors see every
scan; a patient sees only their own. Nothing here logs a name or username.
"""

from __future__ import annotations

import datetime as dt
import functools
from dataclasses import dataclass
from typing import Literal

import bcrypt
from sqlalchemy import select

from core.store.db import Database
from core.store.models import Scan, User

__all__ = ["CurrentUser", "ScanRow", "authenticate", "can_view_scan", "visible_scans"]

Role = Literal["doctor", "patient"]


@dataclass(frozen=True)
class CurrentUser:
    """The signed-in user. ``display_name`` is PHI: show it, never log it or put it in a URL."""

    id: int
    role: Role
    display_name: str

    @property
    def is_doctor(self) -> bool:
        """True for doctors (review pages, Ask AI, drafts)."""
        return self.role == "doctor"


@dataclass(frozen=True)
class ScanRow:
    """One scan as the pickers list it. ``patient`` is the display name (PHI)."""

    scan_id: str
    patient_id: int
    patient: str
    anatomy: str
    region: str | None
    diagnosis: str
    confidence: float
    created_at: dt.datetime


def authenticate(db: Database, username: str, password: str) -> CurrentUser | None:
    """The user whose bcrypt hash matches ``password``, or ``None`` (unknown user, no hash, wrong password)."""
    name = (username or "").strip().lower()
    with db.read_only() as s:
        user = s.scalars(select(User).where(User.username == name)).first() if name else None
        stored = user.password_hash if user is not None else None
        found = None if user is None else CurrentUser(user.id, _role(user.role), user.display_name)
    candidate = stored.encode() if stored else _dummy_hash()
    try:
        ok = bcrypt.checkpw((password or "").encode(), candidate)
    except ValueError:  # a malformed stored hash is a failed log-in, not a crash
        ok = False
    return found if ok and stored else None


@functools.cache
def _dummy_hash() -> bytes:
    """Checked when the username is unknown, so both kinds of failure cost one bcrypt check."""
    return bcrypt.hashpw(b"no-such-user", bcrypt.gensalt(rounds=10))


def _role(value: str) -> Role:
    return "doctor" if value == "doctor" else "patient"


def visible_scans(db: Database, user: CurrentUser) -> list[ScanRow]:
    """Scans ``user`` may open: all for a doctor, their own for a patient; by patient, newest first."""
    q = (
        select(
            Scan.id,
            Scan.patient_id,
            User.display_name,
            Scan.anatomy,
            Scan.region,
            Scan.ai_diagnosis,
            Scan.ai_confidence,
            Scan.created_at,
        )
        .join(User, User.id == Scan.patient_id)
        .order_by(User.display_name, Scan.created_at.desc())
    )
    if not user.is_doctor:
        q = q.where(Scan.patient_id == user.id)
    with db.read_only() as s:
        return [ScanRow(*row) for row in s.execute(q).all()]


def can_view_scan(db: Database, user: CurrentUser, scan_id: str) -> bool:
    """True when the scan exists and ``user`` may see it."""
    with db.read_only() as s:
        owner = s.scalar(select(Scan.patient_id).where(Scan.id == scan_id))
    return owner is not None and (user.is_doctor or owner == user.id)
