"""Log-in and access rules: who may see which scan.

Passwords are checked with bcrypt against ``users.password_hash``; a wrong
username and a wrong password take the same time and give the same answer;
repeated failures lock an account name, known or unknown, and a client source
for a while (``ui.max_failed_logins``, ``ui.max_failed_logins_per_source``).
A signed-in user is an immutable :class:`CurrentUser`. Doctors see every
scan; a patient sees only their own. Nothing here logs a name or username.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import bcrypt
from sqlalchemy import func, select, text, update

from core import audit
from core.errors import AccessDeniedError, RateLimitedError
from core.store.db import Database
from core.store.models import LoginAttempt, Report, Scan, User

if TYPE_CHECKING:
    from core.reports import ReportRow

__all__ = [
    "AWAITING_REVIEW",
    "SIGNED_REPORT",
    "CurrentUser",
    "PatientScanView",
    "ScanRow",
    "authenticate",
    "can_view_scan",
    "load_user",
    "patient_scan_view",
    "visible_scans",
]

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
    ai_visible: bool = True  # False for a patient: ``diagnosis`` is then a review status and ``confidence`` 0


AWAITING_REVIEW = "Awaiting your doctor's review"
SIGNED_REPORT = "Signed report available"


@dataclass(frozen=True)
class PatientScanView:
    """What a patient may see of a scan: when and what was imaged, and only what a doctor signed.

    It has no field for the AI reading, its confidence or similar cases, so no
    page can show them to a patient by accident.
    """

    scan_id: str
    anatomy: str
    region: str | None
    created_at: dt.datetime
    reports: list[ReportRow]

    @property
    def awaiting_review(self) -> bool:
        """True while no doctor has signed a report for this scan."""
        return not self.reports

    @property
    def status(self) -> str:
        """One line for the patient: awaiting review, or a signed report is available."""
        return AWAITING_REVIEW if self.awaiting_review else SIGNED_REPORT


def authenticate(
    db: Database,
    username: str,
    password: str,
    *,
    max_failures: int = 0,
    window_s: float = 300.0,
    source: str | None = None,
    max_source_failures: int = 0,
    max_global_failures: int = 0,
) -> CurrentUser | None:
    """The user whose bcrypt hash matches ``password``, or ``None`` (unknown user, no hash, wrong password).

    With ``max_failures`` > 0 an account name (known or not: the same rule, the
    same message, about the same time) that failed that many times within
    ``window_s`` is locked until the oldest failure leaves the window
    (:class:`RateLimitedError`, even for the right password); ``source`` (the
    client address) is limited the same way by ``max_source_failures``. The
    attempt is recorded and the lock tested in one serialised transaction
    *before* the password is checked, and an attempt in flight counts as a
    failure, so N simultaneous guesses check at most ``max_failures`` passwords.
    ``max_global_failures`` counts failures of every account together and needs no
    client address: password spraying (one guess on each of many accounts, behind a
    proxy or with no address known) stops there for everyone until failures age out.
    Failures leave the count only by ageing out of the window: a success does
    not erase them, since a success racing a burst of guesses would otherwise
    let another ``max_failures`` guesses through. Every outcome is audited (ids only).
    """
    name = (username or "").strip().lower()
    with db.read_only() as s:
        user = s.scalars(select(User).where(User.username == name)).first() if name else None
        stored = user.password_hash if user is not None else None
        found = None if user is None else CurrentUser(user.id, _role(user.role), user.display_name)
    actor = found.id if found is not None else None
    keys = [(_key("account", name), max_failures)]
    if source:
        keys.append((_key("source", source), max_source_failures))
    if max_global_failures > 0:
        keys.append((_key("global", "*"), max_global_failures))
    limited = max_failures > 0 or max_global_failures > 0 or (bool(source) and max_source_failures > 0)
    attempt_ids = _begin_attempt(db, keys, window_s, actor) if limited else []
    candidate = stored.encode() if stored else _dummy_hash()
    try:
        ok = bcrypt.checkpw((password or "").encode(), candidate)
    except ValueError:  # a malformed stored hash is a failed log-in, not a crash
        ok = False
    ok = ok and stored is not None
    with db.session() as s:
        if attempt_ids:
            status = "ok" if ok else "failed"
            s.execute(update(LoginAttempt).where(LoginAttempt.id.in_(attempt_ids)).values(status=status))
        audit.record_in(s, audit.LOGIN if ok else audit.LOGIN_FAILED, actor)
    return found if ok else None


def _key(kind: str, value: str) -> str:
    """The stored key of an account name or a source: a sha256, so no name lands in the attempts table."""
    return hashlib.sha256(f"{kind}:{value}".encode()).hexdigest()


def _begin_attempt(db: Database, keys: list[tuple[str, int]], window_s: float, actor: int | None) -> list[int]:
    """Record a pending attempt per key and test the locks, in one serialised transaction; returns the row ids.

    Raises :class:`RateLimitedError` (after recording the refusal) when a key has
    ``limit`` or more failed or in-flight attempts within the window.
    """
    now = time.time()
    locked_until = 0.0
    with db.session() as s:
        if not db.is_sqlite:  # SQLite: the first INSERT below takes the database's write lock
            s.execute(text("LOCK TABLE login_attempts IN SHARE ROW EXCLUSIVE MODE"))
        rows = [LoginAttempt(key_hash=k, status="pending", at=now) for k, _ in keys]
        s.add_all(rows)
        s.flush()
        for (key, limit), row in zip(keys, rows, strict=True):
            if limit <= 0:
                continue
            count, oldest = s.execute(
                select(func.count(), func.min(LoginAttempt.at)).where(
                    LoginAttempt.key_hash == key,
                    LoginAttempt.status.in_(("pending", "failed")),
                    LoginAttempt.at > now - window_s,
                    LoginAttempt.id != row.id,
                )
            ).one()
            if count >= limit:
                locked_until = max(locked_until, (oldest or now) + window_s)
        if locked_until:
            for row in rows:
                row.status = "locked"
            audit.record_in(s, audit.LOGIN_LOCKED, actor)
    if locked_until:
        retry = max(1, round(locked_until - now))
        raise RateLimitedError(f"Too many failed log-ins; try again in {retry} s", retry_after_s=float(retry))
    return [r.id for r in rows]


@functools.cache
def _dummy_hash() -> bytes:
    """Checked when the username is unknown, so both kinds of failure cost one bcrypt check."""
    return bcrypt.hashpw(b"no-such-user", bcrypt.gensalt(rounds=10))


def _role(value: str) -> Role:
    return "doctor" if value == "doctor" else "patient"


def load_user(db: Database, user_id: int) -> CurrentUser | None:
    """The user ``user_id`` as stored now (role re-read), or ``None`` when the account is gone."""
    with db.read_only() as s:
        user = s.get(User, user_id)
        return None if user is None else CurrentUser(user.id, _role(user.role), user.display_name)


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
    if user.is_doctor:
        with db.read_only() as s:
            return [ScanRow(*row) for row in s.execute(q).all()]
    signed = select(Report.id).where(Report.scan_id == Scan.id, Report.signed_at.is_not(None)).exists()
    with db.read_only() as s:
        rows = s.execute(q.add_columns(signed).where(Scan.patient_id == user.id)).all()
    # a patient's list never carries the unsigned AI reading or its confidence
    return [
        ScanRow(row[0], row[1], row[2], row[3], row[4], SIGNED_REPORT if row[8] else AWAITING_REVIEW, 0.0, row[7], False)
        for row in rows
    ]


def patient_scan_view(db: Database, user: CurrentUser, scan_id: str) -> PatientScanView:
    """The patient-facing view of a scan the user may see; :class:`AccessDeniedError` otherwise.

    Only signed report versions reach it; the AI reading, confidence and similar
    cases never do, signed or not (the signed report is what the doctor stands behind).
    """
    from core.reports import report_versions

    if not can_view_scan(db, user, scan_id):
        raise AccessDeniedError("That scan is not one of yours", hint="Pick one of your scans from the list.")
    with db.read_only() as s:
        anatomy, region, created = s.execute(
            select(Scan.anatomy, Scan.region, Scan.created_at).where(Scan.id == scan_id)
        ).one()
    signed = [r for r in report_versions(db, scan_id) if r.signed_at is not None]
    return PatientScanView(scan_id, anatomy, region, created, signed)


def can_view_scan(db: Database, user: CurrentUser, scan_id: str) -> bool:
    """True when the scan exists and ``user`` may see it."""
    with db.read_only() as s:
        owner = s.scalar(select(Scan.patient_id).where(Scan.id == scan_id))
    return owner is not None and (user.is_doctor or owner == user.id)
