"""Which critical findings a report's version chain already has a communication record for.

Signing a critical report writes its CRITICAL RESULT record into the signed text and one
``critical.communicated`` audit row naming the report (:mod:`core.reports.store`). An
amendment is a new version: it needs its own record only for a critical finding that no
earlier, recorded version named (:func:`core.reports.signing.amendment_critical`). A
recorded version covers the findings its own text affirms and those the scan's AI reading
names (the signing rule made the record for either). The audit row, not the text, says a
version has a record: typing "CRITICAL RESULT" into a report records nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from core import audit as log
from core.errors import NotFoundError
from core.reports.signing import amendment_critical, critical_named
from core.store.db import Database
from core.store.models import AuditLog, Report, Scan
from core.worklist import reading_findings

__all__ = ["amendment_needs_record", "covered_findings"]


def _chain(session: Session, report: Report) -> list[Report]:
    """``report`` and every version it supersedes, newest first."""
    out = [report]
    while out[-1].supersedes_id is not None:
        older = session.get(Report, out[-1].supersedes_id)
        if older is None or older in out:  # pragma: no cover - the foreign key and the unique index forbid both
            break
        out.append(older)
    return out


def covered_findings(session: Session, report: Report, critical_findings: Sequence[str]) -> set[str]:
    """The critical findings (lower case) that a communication record in ``report``'s chain covers."""
    chain = _chain(session, report)
    rows = session.scalars(
        select(AuditLog.detail).where(AuditLog.action == log.CRITICAL_RESULT, AuditLog.scan_ref == report.scan_id)
    )
    recorded = {int(d["report_id"]) for d in rows if isinstance(d, dict) and str(d.get("report_id", "")).isdigit()}
    scan = session.get(Scan, report.scan_id)
    reading = reading_findings(scan.ai_diagnosis if scan else "", critical_findings)
    covered: set[str] = set()
    for version in chain:
        if version.id in recorded:
            covered |= reading | critical_named(version.findings, critical_findings)
            covered |= critical_named(version.impression, critical_findings)
    return covered


def amendment_needs_record(
    db: Database,
    report_id: int,
    findings: str,
    impression: str,
    critical_findings: Sequence[str],
    *,
    flagged: bool = False,
) -> tuple[bool, list[str]]:
    """For a form before it submits: whether amending ``report_id`` to this text needs a communication record.

    Returns ``(needed, newly named critical findings)``; :func:`core.reports.store.amend_report` decides
    again, under its lock, with the same rule.
    """
    with db.read_only() as s:
        report = s.get(Report, report_id)
        if report is None:
            raise NotFoundError(f"No report {report_id}")
        covered = covered_findings(s, report, critical_findings)
    return amendment_critical([findings, impression], critical_findings, covered, flagged=flagged)
