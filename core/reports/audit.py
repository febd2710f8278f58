"""The audit of report events: a draft's model call, a saved draft, a signature, an amendment.

Each event is one row of the hash-chained log (:mod:`core.audit`): ids, versions,
outcomes and hashes, never report or prompt text. The writes that change a draft or a
report log inside their own transaction (``session``), so the change and its row commit
or roll back together; the model call of a draft, which writes nothing else, logs in
its own short transaction.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from core import audit as log
from core.store.db import Database

__all__ = ["critical_communicated", "draft_generated", "draft_saved", "draft_signed", "report_amended"]


def draft_generated(
    db: Database, doctor_id: int | None, scan_id: str, *, backend: str, prompt_hash: str, outcome: str
) -> None:
    """A draft's model call: who asked, the backend, the prompt's sha256 and which path won (or ``cancelled``)."""
    log.record(db, log.DRAFT_GENERATE, doctor_id, scan_id, outcome=outcome, backend=backend, prompt_hash=prompt_hash)


def draft_saved(
    session: Session, author_id: int, scan_id: str, draft_id: int, version: int, *, autosave: bool = False
) -> None:
    """A draft saved as ``version`` (1 when created); an autosave of the editor has the outcome ``autosave``."""
    outcome = "autosave" if autosave else "ok"
    log.record_in(session, log.DRAFT_SAVE, author_id, scan_id, outcome=outcome, draft_id=draft_id, version=version)


def draft_signed(
    session: Session,
    doctor_id: int,
    scan_id: str,
    draft_id: int,
    report_id: int,
    content_hash: str | None,
    *,
    ai_confirmed: int = 0,
    from_ai: bool = False,
) -> None:
    """A draft signed into report ``report_id`` (its content hash is what later verification recomputes).

    ``from_ai`` and ``ai_confirmed`` keep the AI provenance: whether the draft came from the AI and how
    many of its AI-derived sentences the doctor confirmed (the draft row keeps their marked text).
    """
    log.record_in(
        session, log.DRAFT_SIGN, doctor_id, scan_id, draft_id=draft_id, report_id=report_id, content_hash=content_hash,
        from_ai=from_ai, ai_confirmed=ai_confirmed,
    )  # fmt: skip


def critical_communicated(
    session: Session, doctor_id: int, scan_id: str, *, report_id: int, recipient: str, method: str, at: str
) -> None:
    """A critical result communicated before signing: to whom (hashed when long), how, when; read back."""
    log.record_in(
        session, log.CRITICAL_RESULT, doctor_id, scan_id, report_id=report_id, recipient=recipient, method=method,
        communicated_at=at, read_back=True,
    )  # fmt: skip


def report_amended(
    session: Session,
    doctor_id: int,
    scan_id: str,
    *,
    report_id: int,
    supersedes_id: int,
    version: int,
    content_hash: str | None,
    colleague_of: int | None = None,
    ai_confirmed: int = 0,
    draft_id: int | None = None,
) -> None:
    """A new signed ``version`` that supersedes report ``supersedes_id`` (which itself never changes).

    ``colleague_of`` names the doctor who signed the superseded version when it was someone else;
    ``ai_confirmed`` counts the AI-derived sentences of the amendment the doctor confirmed, and
    ``draft_id`` is the signed draft row that keeps their marked text (none when there were none).
    """
    ids: dict[str, Any] = {"report_id": report_id, "supersedes_id": supersedes_id, "version": version,
                              "content_hash": content_hash, "ai_confirmed": ai_confirmed}  # fmt: skip
    if draft_id is not None:
        ids["draft_id"] = draft_id
    if colleague_of is not None:
        ids["colleague_of"] = colleague_of
    log.record_in(session, log.REPORT_AMEND, doctor_id, scan_id, **ids)
