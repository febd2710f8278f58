"""Per-user rate limits on every costly feature, counted in the database, and never spent by a refused call.

One rule for Ask AI, Guideline QA, Self-RAG, report drafts, image imports and
document uploads::

    with limited(db, user.id, "guideline", limit=20, window_s=60):
        answer = qa.answer(question)

:func:`take` counts one hit for ``(user, feature)`` and raises
:class:`RateLimitedError` (keeping nothing) past ``limit`` hits within the
window. The hit is inserted before counting, in one transaction that holds a
per-user lock (SQLite's write lock; a PostgreSQL advisory lock, which needs no
UPDATE privilege on ``users``), so concurrent calls are counted exactly.

A call that is *refused* (bad input, a conflict such as a question already in
flight, access denied, a missing record, another limit) did no costly work and
never spends the limit: where the refusal can be checked first, the count is
taken after it, in the same locked transaction (Ask AI: the in-flight check,
the count and the stored question are one transaction; ``limited(lazy=True)``
lets a block count itself after its checks), so 20 parallel asks of which 19
are refused leave the limit as one ask left it; otherwise :func:`limited`
gives the count back when the block is refused (:func:`refund`). A call that
fails after the work started (a backend error or timeout) keeps its count.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import delete, func, select, text
from sqlalchemy.orm import Session

from core.errors import (
    AccessDeniedError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    RateLimitedError,
)
from core.store.db import Database
from core.store.models import RateLimitHit

__all__ = ["FEATURE_NAMES", "REFUSALS", "Gate", "count_hit", "limited", "lock_user", "refund", "take"]

FEATURE_NAMES = {
    "ask": "Ask AI requests",
    "guideline": "Guideline QA questions",
    "selfrag": "Self-RAG runs",
    "draft": "report drafts",
    "import": "image imports",
    "upload": "document uploads",
}
# a refused call did no costly work: its hit is given back
REFUSALS: tuple[type[Exception], ...] = (
    InvalidInputError,
    ConflictError,
    AccessDeniedError,
    NotFoundError,
    RateLimitedError,
)
_LOCK_NAMESPACE = 26_009  # pg_advisory_xact_lock(namespace, user id): one queue per user


def lock_user(s: Session, user_id: int, feature: str, *, window_s: float, now: float) -> None:
    """Serialise ``user_id``'s counted calls inside ``s`` and prune hits that left the window.

    PostgreSQL: an advisory lock (no UPDATE grant on ``users`` needed). SQLite: the pruning
    DELETE is the transaction's first write, so it takes the database's write lock.
    """
    if s.get_bind().dialect.name != "sqlite":
        s.execute(text("SELECT pg_advisory_xact_lock(:ns, :uid)"), {"ns": _LOCK_NAMESPACE, "uid": int(user_id)})
    s.execute(
        delete(RateLimitHit).where(
            RateLimitHit.doctor_id == user_id, RateLimitHit.bucket == feature, RateLimitHit.at <= now - window_s
        )
    )


def count_hit(s: Session, user_id: int, feature: str, *, limit: int, window_s: float, now: float) -> int:
    """Insert one hit inside ``s`` (after :func:`lock_user`); raises :class:`RateLimitedError` past ``limit``.

    The caller's transaction must roll back on the error (``Database.session`` does), so a
    refused call keeps no hit.
    """
    hit = RateLimitHit(doctor_id=user_id, bucket=feature, at=now)
    s.add(hit)
    s.flush()
    count, oldest = s.execute(
        select(func.count(), func.min(RateLimitHit.at)).where(
            RateLimitHit.doctor_id == user_id, RateLimitHit.bucket == feature
        )
    ).one()
    if count > limit:
        retry = max(0.0, (oldest or now) + window_s - now)
        what = FEATURE_NAMES.get(feature, feature)
        raise RateLimitedError(
            f"Rate limited: {limit} {what} per {window_s:g} s; retry in {max(1, round(retry))} s",
            retry_after_s=retry,
        )
    return int(hit.id)


def take(db: Database, user_id: int, feature: str, *, limit: int, window_s: float, now: float | None = None) -> int:
    """Count one ``feature`` call of ``user_id``; returns the hit's id, or raises :class:`RateLimitedError`."""
    t = time.time() if now is None else now
    with db.session() as s:
        lock_user(s, user_id, feature, window_s=window_s, now=t)
        return count_hit(s, user_id, feature, limit=limit, window_s=window_s, now=t)


def refund(db: Database, hit_id: int) -> None:
    """Give back a hit taken by :func:`take` for a call that was refused before doing its work."""
    with db.session() as s:
        s.execute(delete(RateLimitHit).where(RateLimitHit.id == hit_id))


class Gate:
    """The count of one call: :func:`limited` takes it at entry, or the block calls it after its own checks."""

    def __init__(self, db: Database, user_id: int, feature: str, limit: int, window_s: float) -> None:
        self.db, self.user_id, self.feature, self.limit, self.window_s = db, user_id, feature, limit, window_s
        self.hit: int | None = None

    def __call__(self) -> None:
        """Count the call now (once); raises :class:`RateLimitedError` past the limit."""
        if self.hit is None:
            self.hit = take(self.db, self.user_id, self.feature, limit=self.limit, window_s=self.window_s)


@contextmanager
def limited(
    db: Database, user_id: int, feature: str, *, limit: int, window_s: float, lazy: bool = False
) -> Iterator[Gate]:
    """Count one call of the block; a refusal (:data:`REFUSALS`) raised in the block gives the count back.

    With ``lazy`` the block calls the yielded gate itself, after its own refusal checks
    (a question already in flight, bad input): a call refused before that is never counted,
    even for a moment, so parallel refused calls cannot crowd out the one that goes ahead.
    """
    gate = Gate(db, user_id, feature, limit, window_s)
    if not lazy:
        gate()
    try:
        yield gate
    except REFUSALS:
        if gate.hit is not None:
            refund(db, gate.hit)
        raise
