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

__all__ = ["draft_generated", "draft_saved", "draft_signed", "report_amended"]


def draft_generated(
    db: Database, doctor_id: int | None, scan_id: str, *, backend: str, prompt_hash: str, outcome: str
) -> None:
    """A draft's model call: who asked, the backend, the prompt's sha256 and which path won (or ``cancelled``)."""
    log.record(db, log.DRAFT_GENERATE, doctor_id, scan_id, outcome=outcome, backend=backend, prompt_hash=prompt_hash)


def draft_saved(session: Session, author_id: int, scan_id: str, draft_id: int, version: int) -> None:
    """A draft saved as ``version`` (1 when created)."""
    log.record_in(session, log.DRAFT_SAVE, author_id, scan_id, draft_id=draft_id, version=version)


def draft_signed(
    session: Session, doctor_id: int, scan_id: str, draft_id: int, report_id: int, content_hash: str | None
) -> None:
    """A draft signed into report ``report_id`` (its content hash is what later verification recomputes)."""
    log.record_in(
        session, log.DRAFT_SIGN, doctor_id, scan_id, draft_id=draft_id, report_id=report_id, content_hash=content_hash
    )


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
) -> None:
    """A new signed ``version`` that supersedes report ``supersedes_id`` (which itself never changes).

    ``colleague_of`` names the doctor who signed the superseded version when it was someone else.
    """
    ids: dict[str, Any] = {"report_id": report_id, "supersedes_id": supersedes_id, "version": version,
                              "content_hash": content_hash}  # fmt: skip
    if colleague_of is not None:
        ids["colleague_of"] = colleague_of
    log.record_in(session, log.REPORT_AMEND, doctor_id, scan_id, **ids)
