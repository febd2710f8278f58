"""Writes that Ask AI makes on purpose: rate-limit hits, chat history and the audit log.

These go through the read-write engine in their own short transactions; the
inference itself only ever reads.
"""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import delete, func, select

from core.contracts import AskAnswer
from core.errors import RateLimitedError
from core.store.db import Database
from core.store.models import Conversation, Message, User

__all__ = ["audit", "check_rate_limit", "history", "record_exchange"]


def check_rate_limit(
    db: Database, doctor_id: int, *, limit: int, window_s: float, bucket: str = "ask", now: float | None = None
) -> None:
    """Count one request for ``doctor_id``; raise :class:`RateLimitedError` past ``limit`` per window.

    The count lives in the database, so every session and process shares it. The
    new hit is inserted before counting: SQLite then holds the write lock, and on
    PostgreSQL the doctor's row is locked first, so concurrent requests are
    counted exactly.
    """
    t = time.time() if now is None else now
    with db.session() as s:
        if not db.is_sqlite:
            s.execute(select(User.id).where(User.id == doctor_id).with_for_update())
        from core.store.models import RateLimitHit

        s.execute(
            delete(RateLimitHit).where(
                RateLimitHit.doctor_id == doctor_id, RateLimitHit.bucket == bucket, RateLimitHit.at <= t - window_s
            )
        )
        s.add(RateLimitHit(doctor_id=doctor_id, bucket=bucket, at=t))
        s.flush()
        count, oldest = s.execute(
            select(func.count(), func.min(RateLimitHit.at)).where(
                RateLimitHit.doctor_id == doctor_id, RateLimitHit.bucket == bucket
            )
        ).one()
        if count > limit:
            s.rollback()
            retry = max(0.0, (oldest or t) + window_s - t)
            raise RateLimitedError(
                f"Rate limited: {limit} Ask AI requests per {window_s:g} s; retry in {max(1, round(retry))} s",
                retry_after_s=retry,
            )


def record_exchange(db: Database, scan_id: str, doctor_id: int, question: str, answer: AskAnswer) -> int:
    """Store a question and its answer in the doctor's conversation on the scan; returns the conversation id."""
    with db.session() as s:
        conv = s.scalars(
            select(Conversation).where(Conversation.scan_id == scan_id, Conversation.doctor_id == doctor_id)
        ).first()
        if conv is None:
            conv = Conversation(scan_id=scan_id, doctor_id=doctor_id)
            s.add(conv)
            s.flush()
        s.add_all(
            [
                Message(conversation_id=conv.id, role="user", content=question),
                Message(
                    conversation_id=conv.id,
                    role="assistant",
                    content=answer.answer,
                    cited_case_ids=list(answer.citedCaseIds),
                    confidence=answer.confidence,
                ),
            ]
        )
        return conv.id


def history(db: Database, scan_id: str, doctor_id: int) -> list[dict[str, Any]]:
    """The doctor's messages on a scan, oldest first."""
    with db.read_only() as s:
        rows = s.scalars(
            select(Message)
            .join(Conversation, Conversation.id == Message.conversation_id)
            .where(Conversation.scan_id == scan_id, Conversation.doctor_id == doctor_id)
            .order_by(Message.id)
        ).all()
        return [
            {
                "role": m.role,
                "content": m.content,
                "citedCaseIds": m.cited_case_ids,
                "confidence": m.confidence,
                "at": m.created_at,
            }
            for m in rows
        ]


def audit(
    db: Database,
    *,
    actor_id: int | None,
    action: str,
    scan_ref: str | None,
    backend: str | None,
    prompt_hash: str | None,
    outcome: str,
    detail: dict[str, Any] | None = None,
) -> None:
    """Append one chained audit record (see :mod:`core.audit`): who, which scan, backend, prompt hash, outcome.

    Kept for existing callers; free text in ``detail`` is stored only as its sha256.
    """
    from core import audit as audit_log

    audit_log.record(
        db, action, actor_id, scan_ref, outcome=outcome, backend=backend, prompt_hash=prompt_hash, **(detail or {})
    )
