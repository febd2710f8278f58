"""Read models for the report pages: a scan's saved drafts, its signed report versions, and their verification.

Writes are :mod:`core.reports.store` (``save_draft``, ``sign_draft``,
``amend_report``); this module only reads, through the read-only engine.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import TypeVar

from sqlalchemy import Select, select

from core import audit as log
from core.errors import NotFoundError
from core.store.db import Database
from core.store.integrity import report_hash
from core.store.models import AuditLog, Report, ReportDraft, User

__all__ = [
    "DraftRow",
    "ReportRow",
    "ReportVerification",
    "get_draft",
    "list_drafts",
    "report_versions",
    "restorable_draft",
    "verify_reports",
]


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
    sealed: bool = True  # its record-key seal verifies (a row written past the app does not)
    amends_colleague: bool = False  # this version amends a version another doctor signed

    @property
    def is_current(self) -> bool:
        """True for the newest version in its chain."""
        return self.superseded_by is None


_Authored = TypeVar("_Authored", ReportDraft, Report)


def _with_author(model: type[_Authored]) -> Select[_Authored, str]:
    """Rows of ``model`` beside their author's display name."""
    return select(model, User.display_name).join(User, User.id == model.author_id)


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
            _with_author(ReportDraft)
            .where(ReportDraft.scan_id == scan_id)
            .order_by(ReportDraft.status != "open", ReportDraft.updated_at.desc(), ReportDraft.id.desc())
        ).all()
        return [_draft(d, author) for d, author in rows]


def restorable_draft(db: Database, scan_id: str, doctor_id: int) -> DraftRow | None:
    """The doctor's newest open (unsigned) draft of ``scan_id``, or None."""
    with db.read_only() as s:
        row = s.execute(
            _with_author(ReportDraft)
            .where(ReportDraft.scan_id == scan_id, ReportDraft.author_id == doctor_id, ReportDraft.status == "open")
            .order_by(ReportDraft.updated_at.desc(), ReportDraft.id.desc())
        ).first()
        return _draft(row[0], row[1]) if row is not None else None


def get_draft(db: Database, draft_id: int) -> DraftRow:
    """One saved draft; :class:`NotFoundError` when there is none."""
    with db.read_only() as s:
        row = s.execute(_with_author(ReportDraft).where(ReportDraft.id == draft_id)).first()
        if row is None:
            raise NotFoundError(f"No draft {draft_id}")
        return _draft(row[0], row[1])


def report_versions(db: Database, scan_id: str) -> list[ReportRow]:
    """Every signed report of a scan with its amendment links, newest first."""
    with db.read_only() as s:
        rows = s.execute(
            _with_author(Report)
            .where(Report.scan_id == scan_id)
            .order_by(Report.signed_at.desc(), Report.id.desc())
        ).all()
        newer = {r.supersedes_id: r.id for r, _ in rows if r.supersedes_id is not None}
        authors = {r.id: r.author_id for r, _ in rows}
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
                db.keyring.check(r.content_hash, r.record_mac) is None,
                r.supersedes_id is not None and authors.get(r.supersedes_id, r.author_id) != r.author_id,
            )
            for r, author in rows
        ]


@dataclass
class ReportVerification:
    """The result of :func:`verify_reports`: versions checked, chains seen and every problem found."""

    checked: int = 0
    chains: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every signed version and every amendment chain verifies."""
        return not self.problems

    def as_dict(self) -> dict[str, object]:
        """A JSON-ready summary."""
        return {"ok": self.ok, "checked": self.checked, "chains": self.chains, "problems": self.problems}


def verify_reports(db: Database, *, max_problems: int = 50) -> ReportVerification:
    """Check every signed version: its sha256, its record-key seal, its amendment chain and its audit row.

    The audit cross-check: each signed version has a signing row in the audit log
    (``draft.sign``, ``report.amend`` or ``report.seal``) naming its id, its hash and
    its signer, and every such row names a signed version that exists.
    """
    out = ReportVerification()

    def problem(text: str) -> None:
        if len(out.problems) < max_problems:
            out.problems.append(text)

    with db.read_only() as s:
        rows = {r.id: r for r in s.scalars(select(Report).where(Report.signed_at.is_not(None)).order_by(Report.id))}
    for r in rows.values():
        out.checked += 1
        prev = rows.get(r.supersedes_id) if r.supersedes_id is not None else None
        if r.supersedes_id is None:
            out.chains += 1
            if r.version != 1:
                problem(f"report {r.id}: version {r.version} supersedes nothing")
        elif prev is None:
            problem(f"report {r.id}: supersedes report {r.supersedes_id}, which is missing or unsigned")
        elif prev.scan_id != r.scan_id or r.version != prev.version + 1:
            problem(f"report {r.id}: does not continue report {prev.id} (scan or version differs)")
        expected = report_hash(
            scan_id=r.scan_id,
            author_id=r.author_id,
            findings=r.findings,
            impression=r.impression,
            recommendations=r.recommendations,
            is_ai_corrected=r.is_ai_corrected,
            version=r.version,
            supersedes_id=r.supersedes_id,
            signed_at=r.signed_at,
            amend_reason=r.amend_reason,
            prev_hash=prev.content_hash if prev is not None else None,
        )
        if r.content_hash != expected:
            problem(f"report {r.id}: content hash does not match its content, signer and time")
        elif why := db.keyring.check(r.content_hash, r.record_mac):
            problem(f"report {r.id}: {why}")
    for text in _cross_check(db, rows):
        problem(text)
    return out


_SIGNING_EVENTS = (log.DRAFT_SIGN, log.REPORT_AMEND, log.REPORT_SEAL)


def _cross_check(db: Database, reports: dict[int, Report]) -> list[str]:
    """Each signed version has its audit row (same id, hash and signer); each such row names a signed version."""
    with db.read_only() as s:
        events = s.execute(
            select(AuditLog.seq, AuditLog.actor_id, AuditLog.detail).where(AuditLog.action.in_(_SIGNING_EVENTS))
        ).all()
    logged: dict[int, tuple[int | None, int | None, str | None]] = {}
    problems = []
    for seq, actor, detail in events:
        rid = (detail or {}).get("report_id")
        if not isinstance(rid, int):
            continue
        logged[rid] = (seq, actor, (detail or {}).get("content_hash"))
        if rid not in reports:
            problems.append(f"audit seq {seq} records report {rid} as signed, but no such signed report exists")
    for r in reports.values():
        entry = logged.get(r.id)
        if entry is None:
            problems.append(f"report {r.id}: no audit row records its signing")
        elif entry[2] != r.content_hash:
            problems.append(f"report {r.id}: its hash differs from the one audit seq {entry[0]} recorded")
        elif entry[1] != r.author_id:
            problems.append(f"report {r.id}: signed by user {r.author_id}, audit seq {entry[0]} names {entry[1]}")
    return problems
