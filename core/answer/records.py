"""Writes that Ask AI makes on purpose: rate-limit hits, chat history and the audit log.

These go through the read-write engine in their own short transactions; the
inference itself only ever reads.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any

from sqlalchemy import select, update

from core.contracts import AskAnswer
from core.errors import ConflictError
from core.store.db import Database
from core.store.models import Conversation, Message

__all__ = [
    "PENDING_ANSWER",
    "answer_status",
    "audit",
    "begin_exchange",
    "cancel_exchange",
    "check_rate_limit",
    "complete_exchange",
    "history",
    "in_flight",
    "record_exchange",
]

# Content of an answer row while its question is being answered (see :func:`begin_exchange`);
# the row's ``status`` is "pending" until it is "answered" or "cancelled".
PENDING_ANSWER = "\u2026 answer pending"
PENDING, ANSWERED, CANCELLED = "pending", "answered", "cancelled"


def check_rate_limit(
    db: Database, doctor_id: int, *, limit: int, window_s: float, bucket: str = "ask", now: float | None = None
) -> int:
    """Count one request for ``doctor_id``; returns the hit's id (:func:`core.limits.refund` gives it back).

    Raises :class:`RateLimitedError` past ``limit`` per window; the count lives in the
    database, so every session and process shares it (:mod:`core.limits`).
    """
    from core.limits import take

    return take(db, doctor_id, bucket, limit=limit, window_s=window_s, now=now)


def _conversation(s: Any, scan_id: str, doctor_id: int) -> int:
    conv = s.scalars(
        select(Conversation).where(Conversation.scan_id == scan_id, Conversation.doctor_id == doctor_id)
    ).first()
    if conv is None:
        conv = Conversation(scan_id=scan_id, doctor_id=doctor_id)
        s.add(conv)
        s.flush()
    return int(conv.id)


def in_flight(db: Database, scan_id: str, doctor_id: int, *, stale_after_s: float) -> bool:
    """True when a question of ``doctor_id`` on ``scan_id`` is still being answered (younger than ``stale_after_s``)."""
    with db.read_only() as s:
        return _pending_since(s, scan_id, doctor_id, stale_after_s)


def _pending_since(s: Any, scan_id: str, doctor_id: int, stale_after_s: float) -> bool:
    since = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=stale_after_s)
    rows = s.scalars(
        select(Message.created_at)
        .join(Conversation, Conversation.id == Message.conversation_id)
        .where(
            Conversation.scan_id == scan_id,
            Conversation.doctor_id == doctor_id,
            Message.role == "assistant",
            Message.status == PENDING,
        )
    ).all()
    return any((r if r.tzinfo else r.replace(tzinfo=dt.UTC)) >= since for r in rows)


def begin_exchange(
    db: Database,
    scan_id: str,
    doctor_id: int,
    question: str,
    *,
    stale_after_s: float,
    limit: int | None = None,
    window_s: float = 60.0,
) -> int:
    """Store ``question`` at submission with a pending answer row after it; returns the answer row's id.

    History order is submission order because both rows are written now. A second
    question while one is in flight (a pending row younger than ``stale_after_s``)
    is refused with :class:`ConflictError`; it never replaces the first. With
    ``limit``, the doctor's Ask AI rate limit is counted in the same transaction,
    after the in-flight check and under the doctor's lock (:mod:`core.limits`): a
    refused question (in flight, or over the limit) keeps nothing, not even a count.
    """
    from core.limits import count_hit, lock_user

    t = time.time()
    with db.session() as s:
        if limit is not None:
            lock_user(s, doctor_id, "ask", window_s=window_s, now=t)
        if _pending_since(s, scan_id, doctor_id, stale_after_s):
            raise ConflictError(
                "A question on this scan is still being answered",
                hint="Wait for the answer to your first question, then ask again.",
            )
        if limit is not None:
            count_hit(s, doctor_id, "ask", limit=limit, window_s=window_s, now=t)
        conv = _conversation(s, scan_id, doctor_id)
        s.add(Message(conversation_id=conv, role="user", content=question))
        pending = Message(
            conversation_id=conv, role="assistant", content=PENDING_ANSWER, cited_case_ids=[], status=PENDING
        )
        s.add(pending)
        s.flush()
        return int(pending.id)


def complete_exchange(db: Database, answer_id: int, answer: AskAnswer, *, status: str = ANSWERED) -> bool:
    """Replace the pending answer row ``answer_id`` with ``answer``, now ``status``; False when it was no longer pending.

    Only a pending row changes: an answer that arrives after its question was cancelled
    never replaces what the doctor saw stored.
    """
    with db.session() as s:
        done = s.execute(
            update(Message)
            .where(Message.id == answer_id, Message.status == PENDING)
            .values(
                content=answer.answer,
                cited_case_ids=list(answer.citedCaseIds),
                confidence=answer.confidence,
                status=status,
            )
            .execution_options(synchronize_session=False)
        )
        return bool(done.rowcount)  # type: ignore[attr-defined]  # a CursorResult for an UPDATE


def answer_status(db: Database, answer_id: int) -> str | None:
    """The status of the answer row ``answer_id`` (``pending``, ``answered``, ``cancelled``), None when there is none."""
    with db.read_only() as s:
        return s.scalar(select(Message.status).where(Message.id == answer_id))


def cancel_exchange(db: Database, answer_id: int, instant: AskAnswer) -> bool:
    """Store the pending answer ``answer_id`` as cancelled, with the ``instant`` answer; False when it was not pending.

    This releases the in-flight marker at once: the next question on the scan is accepted.
    """
    return complete_exchange(db, answer_id, instant, status=CANCELLED)


def record_exchange(db: Database, scan_id: str, doctor_id: int, question: str, answer: AskAnswer) -> int:
    """Store a question and its answer in the doctor's conversation on the scan; returns the conversation id."""
    with db.session() as s:
        conv = _conversation(s, scan_id, doctor_id)
        s.add_all(
            [
                Message(conversation_id=conv, role="user", content=question),
                Message(
                    conversation_id=conv,
                    role="assistant",
                    content=answer.answer,
                    cited_case_ids=list(answer.citedCaseIds),
                    confidence=answer.confidence,
                ),
            ]
        )
        return conv


def history(db: Database, scan_id: str, doctor_id: int) -> list[dict[str, Any]]:
    """The doctor's messages on a scan in submission order.

    Each has ``status`` (``pending``, ``answered``, ``cancelled``); a pending answer has ``pending`` True
    and a cancelled one ``cancelled`` True (its content is the instant answer).
    """
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
                "status": m.status,
                "pending": m.role == "assistant" and m.status == PENDING,
                "cancelled": m.role == "assistant" and m.status == CANCELLED,
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
