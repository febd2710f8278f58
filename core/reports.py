"""Read models for the report pages: a scan's saved drafts and its signed report versions.

Writes stay in :mod:`core.answer.drafts` (``save_draft``, ``sign_draft``,
``amend_report``); this module only reads, through the read-only engine.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select

from core.errors import NotFoundError
from core.store.db import Database
from core.store.models import Report, ReportDraft, User

__all__ = ["DraftRow", "ReportRow", "get_draft", "list_drafts", "report_versions"]


@dataclass(frozen=True)
class DraftRow:
    """A saved draft. ``status`` is ``open`` (editable) or ``signed`` (then ``report_id`` is set)."""

    id: int
    scan_id: str
    author: str
    findings: str
    impression: str
    recommendations: str
    from_ai: bool
    status: str
    report_id: int | None
    updated_at: dt.datetime
    version: int = 1  # pass as ``expected_version`` when saving or signing an edit of this draft

    @property
    def is_open(self) -> bool:
        """True while the draft may still be edited and signed."""
        return self.status == "open"


@dataclass(frozen=True)
class ReportRow:
    """A signed report version; ``superseded_by`` names the amendment that replaced it, if any."""

    id: int
    scan_id: str
    author: str
    findings: str
    impression: str
    recommendations: str
    version: int
    supersedes_id: int | None
    superseded_by: int | None
    is_ai_corrected: bool
    signed_at: dt.datetime | None
    amend_reason: str | None = None
    content_hash: str | None = None

    @property
    def is_current(self) -> bool:
        """True for the newest version in its chain."""
        return self.superseded_by is None


def _draft(d: ReportDraft, author: str) -> DraftRow:
    return DraftRow(
        d.id,
        d.scan_id,
        author,
        d.findings,
        d.impression,
        d.recommendations,
        d.from_ai,
        d.status,
        d.report_id,
        d.updated_at,
        d.version,
    )


def list_drafts(db: Database, scan_id: str) -> list[DraftRow]:
    """Every saved draft of a scan, open ones first, newest first within each group."""
    with db.read_only() as s:
        rows = s.execute(
            select(ReportDraft, User.display_name)
            .join(User, User.id == ReportDraft.author_id)
            .where(ReportDraft.scan_id == scan_id)
            .order_by(ReportDraft.status != "open", ReportDraft.updated_at.desc(), ReportDraft.id.desc())
        ).all()
        return [_draft(d, author) for d, author in rows]


def get_draft(db: Database, draft_id: int) -> DraftRow:
    """One saved draft; :class:`NotFoundError` when there is none."""
    with db.read_only() as s:
        row = s.execute(
            select(ReportDraft, User.display_name)
            .join(User, User.id == ReportDraft.author_id)
            .where(ReportDraft.id == draft_id)
        ).first()
        if row is None:
            raise NotFoundError(f"No draft {draft_id}")
        return _draft(row[0], row[1])


def report_versions(db: Database, scan_id: str) -> list[ReportRow]:
    """Every signed report of a scan with its amendment links, newest first."""
    with db.read_only() as s:
        rows = s.execute(
            select(Report, User.display_name)
            .join(User, User.id == Report.author_id)
            .where(Report.scan_id == scan_id)
            .order_by(Report.signed_at.desc(), Report.id.desc())
        ).all()
        newer = {r.supersedes_id: r.id for r, _ in rows if r.supersedes_id is not None}
        return [
            ReportRow(
                r.id,
                r.scan_id,
                author,
                r.findings,
                r.impression,
                r.recommendations,
                r.version,
                r.supersedes_id,
                newer.get(r.id),
                r.is_ai_corrected,
                r.signed_at,
                r.amend_reason,
                r.content_hash,
            )
            for r, author in rows
        ]
