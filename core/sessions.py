"""Server-side log-in sessions: a random token in the browser, its sha256 in the database.

``create_session`` after a successful log-in returns a 256-bit token (URL-safe
base64) and stores only its sha256, with an absolute expiry. ``resolve_session``
turns a token back into a :class:`~core.auth.CurrentUser` on every request and
re-reads the user's role from ``users`` each time, so a changed role or a
removed account takes effect at once. A session ends when it is revoked
(log-out), when it has been idle longer than the idle timeout, or when its
absolute lifetime is over. Nothing here logs a token or a name.
"""

from __future__ import annotations

import hashlib
import secrets
import time

from sqlalchemy import select, update

from core import audit
from core.auth import CurrentUser
from core.store.db import Database
from core.store.models import User, UserSession

__all__ = ["create_session", "resolve_session", "revoke_all_sessions", "revoke_session", "token_hash"]

_TOUCH_EVERY_S = 30.0  # last_seen_at is written at most this often per session (one write per rerun is waste)


def token_hash(token: str) -> str:
    """The stored form of a session token."""
    return hashlib.sha256(token.encode()).hexdigest()


def create_session(
    db: Database, user_id: int, *, lifetime_s: float, now: float | None = None, replaces: str | None = None
) -> str:
    """A new session for ``user_id`` that ends ``lifetime_s`` from now at the latest; returns the token.

    Every log-in gets a fresh token. ``replaces`` is any token the browser already held
    (a cookie planted by someone else, or an older session): it is revoked in the same
    transaction, whoever it belonged to, so a fixed token never outlives a log-in.
    """
    t = time.time() if now is None else now
    token = secrets.token_urlsafe(32)
    with db.session() as s:
        if replaces:
            s.execute(
                update(UserSession)
                .where(UserSession.token_hash == token_hash(replaces), UserSession.revoked_at.is_(None))
                .values(revoked_at=t)
            )
        s.add(
            UserSession(
                token_hash=token_hash(token), user_id=user_id, created_at=t, last_seen_at=t, expires_at=t + lifetime_s
            )
        )
    return token


def resolve_session(
    db: Database, token: str | None, *, idle_s: float, now: float | None = None
) -> CurrentUser | None:
    """The user a live session token belongs to, with the role read now; ``None`` for anything else.

    Unknown, revoked, expired (absolute lifetime) and idle (no request for
    ``idle_s``) tokens all give ``None``. A live session's ``last_seen_at``
    moves forward (at most every 30 s, so a busy page does not write per rerun).
    """
    if not token:
        return None
    t = time.time() if now is None else now
    with db.read_only() as s:
        row = s.execute(
            select(UserSession.id, UserSession.last_seen_at, UserSession.expires_at, UserSession.revoked_at, User)
            .join(User, User.id == UserSession.user_id)
            .where(UserSession.token_hash == token_hash(token))
        ).first()
    if row is None:
        return None
    sid, last_seen, expires, revoked, user = row
    if revoked is not None or t >= expires or t - last_seen > idle_s:
        return None
    if t - last_seen >= _TOUCH_EVERY_S:
        with db.session() as s:
            s.execute(update(UserSession).where(UserSession.id == sid).values(last_seen_at=t))
    return CurrentUser(user.id, "doctor" if user.role == "doctor" else "patient", user.display_name)


def revoke_session(db: Database, token: str | None, *, now: float | None = None) -> bool:
    """End the session of ``token`` (log-out) and audit it; returns whether a live session was ended."""
    if not token:
        return False
    t = time.time() if now is None else now
    with db.session() as s:
        row = s.scalars(
            select(UserSession).where(UserSession.token_hash == token_hash(token), UserSession.revoked_at.is_(None))
        ).first()
        if row is None:
            return False
        row.revoked_at = t
        audit.record_in(s, audit.LOGOUT, row.user_id, session_id=row.id)
        return True


def revoke_all_sessions(db: Database, user_id: int, *, now: float | None = None) -> int:
    """End every live session of ``user_id`` (a role change, a locked account); returns how many."""
    t = time.time() if now is None else now
    with db.session() as s:
        done = s.execute(
            update(UserSession)
            .where(UserSession.user_id == user_id, UserSession.revoked_at.is_(None))
            .values(revoked_at=t)
        )
        return int(done.rowcount or 0)  # type: ignore[attr-defined]
