"""Read models for the PACS page: the signed reports of studies imported from the PACS, with their export state."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select

from core.store.db import Database
from core.store.models import PacsStudyLink, Report, ReportExport

__all__ = ["ExportRow", "pacs_reports"]


@dataclass(frozen=True)
class ExportRow:
    """One signed report version of a PACS study and each target's export state (``not sent`` when never asked)."""

    report_id: int
    scan_id: str
    version: int
    signed_at: dt.datetime | None
    current: bool
    sr: str
    fhir: str

    @property
    def pending(self) -> bool:
        """Whether any target has not been sent."""
        return self.sr != "sent" or self.fhir != "sent"


def pacs_reports(db: Database, limit: int = 100) -> list[ExportRow]:
    """The newest signed report versions of PACS-imported scans (newest first)."""
    with db.read_only() as s:
        reports = s.scalars(
            select(Report)
            .join(PacsStudyLink, PacsStudyLink.scan_id == Report.scan_id)
            .where(Report.signed_at.is_not(None))
            .order_by(Report.signed_at.desc(), Report.id.desc())
            .limit(limit)
        ).all()
        ids = [r.id for r in reports]
        superseded = set(s.scalars(select(Report.supersedes_id).where(Report.supersedes_id.in_(ids))))
        state = {
            (e.report_id, e.target): e.status
            for e in s.scalars(select(ReportExport).where(ReportExport.report_id.in_(ids)))
        }
    return [
        ExportRow(
            r.id,
            r.scan_id,
            r.version,
            r.signed_at,
            r.id not in superseded,
            state.get((r.id, "sr"), "not sent"),
            state.get((r.id, "fhir"), "not sent"),
        )
        for r in reports
    ]
