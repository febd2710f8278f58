"""Log-in and access rules: who may see which scan.

Passwords are checked with bcrypt against ``users.password_hash``; a wrong
username and a wrong password take the same time and give the same answer;
repeated failures lock an account for a while (``ui.max_failed_logins``).
A signed-in user is an immutable :class:`CurrentUser`. Doctors see every
scan; a patient sees only their own. Nothing here logs a name or username.
"""

from __future__ import annotations

import datetime as dt
import functools
import time
from dataclasses import dataclass
from typing import Literal

import bcrypt
from sqlalchemy import delete, func, select

from core.errors import RateLimitedError
from core.store.db import Database
from core.store.models import RateLimitHit, Scan, User

__all__ = ["CurrentUser", "ScanRow", "authenticate", "can_view_scan", "visible_scans"]

Role = Literal["doctor", "patient"]
_FAILED = "login-failed"


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


def authenticate(
    db: Database, username: str, password: str, *, max_failures: int = 0, window_s: float = 300.0
) -> CurrentUser | None:
    """The user whose bcrypt hash matches ``password``, or ``None`` (unknown user, no hash, wrong password).

    With ``max_failures`` > 0, an account that failed that many times within ``window_s``
    is locked until the oldest failure leaves the window (:class:`RateLimitedError`, even
    for the right password), so a password cannot be guessed online. Failures are counted
    in the database (every process shares them); a success clears them.
    """
    name = (username or "").strip().lower()
    with db.read_only() as s:
        user = s.scalars(select(User).where(User.username == name)).first() if name else None
        stored = user.password_hash if user is not None else None
        found = None if user is None else CurrentUser(user.id, _role(user.role), user.display_name)
    now = time.time()
    if found is not None and max_failures > 0:
        _refuse_if_locked(db, found.id, max_failures, window_s, now)
    candidate = stored.encode() if stored else _dummy_hash()
    try:
        ok = bcrypt.checkpw((password or "").encode(), candidate)
    except ValueError:  # a malformed stored hash is a failed log-in, not a crash
        ok = False
    ok = ok and stored is not None
    if found is not None and max_failures > 0:
        with db.session() as s:
            if ok:
                s.execute(
                    delete(RateLimitHit).where(RateLimitHit.doctor_id == found.id, RateLimitHit.bucket == _FAILED)
                )
            else:
                s.add(RateLimitHit(doctor_id=found.id, bucket=_FAILED, at=now))
    return found if ok else None


def _refuse_if_locked(db: Database, user_id: int, max_failures: int, window_s: float, now: float) -> None:
    with db.read_only() as s:
        count, oldest = s.execute(
            select(func.count(), func.min(RateLimitHit.at)).where(
                RateLimitHit.doctor_id == user_id, RateLimitHit.bucket == _FAILED, RateLimitHit.at > now - window_s
            )
        ).one()
    if count >= max_failures:
        retry = max(1, round((oldest or now) + window_s - now))
        raise RateLimitedError(
            f"Too many failed log-ins for this account; try again in {retry} s", retry_after_s=float(retry)
        )


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
