"""Report drafts: generated in memory, saved only by an explicit action, signed into immutable reports.

``generate_report_draft`` never writes. ``save_draft`` creates or updates a
``report_drafts`` row; ``sign_draft`` turns a saved draft into a signed report;
``amend_report`` creates a new version that supersedes a signed report, which
itself never changes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from sqlalchemy import select

from core.answer.guard import enforce
from core.answer.prompt import draft_messages, prompt_hash
from core.answer.records import audit
from core.answer.rules import forbidden_reason
from core.cases import build_context_bundle
from core.contracts import NO_COMPARABLE_CASES, BundleResult
from core.errors import CasebookError, ImmutableRecordError, InvalidInputError, NotFoundError
from core.llm.base import LLM, Message
from core.runtime import Runtime
from core.store.db import Database
from core.store.models import Report, ReportDraft, User, utcnow

__all__ = ["DraftText", "amend_report", "generate_report_draft", "save_draft", "sign_draft"]

STANDARD_RECOMMENDATIONS = (
    "Compare with prior imaging where available. Correlate with clinical findings. "
    "Follow-up imaging as clinically indicated."
)
_SECTION_RE = re.compile(r"(FINDINGS|IMPRESSION|RECOMMENDATIONS)\s*:\s*", re.I)


@dataclass(frozen=True)
class DraftText:
    """The contract's draft shape, plus which path wrote it. Not stored until saved."""

    findings: str
    impression: str
    recommendations: str
    path: str = "extractive"

    def as_contract(self) -> dict[str, str]:
        """``{findings, impression, recommendations}`` exactly."""
        return {"findings": self.findings, "impression": self.impression, "recommendations": self.recommendations}


def _extractive(result: BundleResult) -> DraftText:
    b = result.bundle
    if b is None:
        return DraftText(
            f"{NO_COMPARABLE_CASES}", "Manual review required; no AI-assisted impression.", STANDARD_RECOMMENDATIONS
        )
    scan = b.currentScan
    where = f" ({scan.region.replace('_', ' ')})" if scan.region else ""
    findings = [f"AI reading: {scan.diagnosis}{where}, confidence {round(scan.confidence * 100)}%."]
    if b.priorReports:
        findings.append(f"Prior signed report for comparison: {b.priorReports[0].findings}")
    agree = Counter(c.diagnosis for c in b.similarCases).get(scan.diagnosis, 0)
    ids = ", ".join(result.case_ids)
    impression = (
        f"{scan.diagnosis}, pending radiologist confirmation. Based on similar cases, {agree} of "
        f"{len(b.similarCases)} closest cases ({ids}) share this diagnosis."
    )
    return DraftText(" ".join(findings), impression, STANDARD_RECOMMENDATIONS)


def _sections(text: str) -> dict[str, str]:
    parts = _SECTION_RE.split(text)
    return {parts[i].lower(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def generate_report_draft(
    rt: Runtime, scan_id: str, llm: LLM | None = None, *, doctor_id: int | None = None
) -> DraftText:
    """A FINDINGS / IMPRESSION / RECOMMENDATIONS draft grounded in the bundle.

    Writes no draft or report. When a language model is called, one audit row
    records who asked, the backend, the prompt hash and which path won (the
    prompt text itself is never stored).
    """
    result = build_context_bundle(rt, scan_id)
    base = _extractive(result)
    if llm is None or result.bundle is None:
        return base
    messages = draft_messages(result)
    try:
        sections = _sections(llm.chat(messages).text)
    except CasebookError as exc:
        _audit_draft(rt, scan_id, doctor_id, llm, messages, f"extractive:fallback:{type(exc).__name__}")
        return base
    out = base.as_contract()
    for key in ("findings", "impression"):
        report = enforce(sections.get(key, ""), result)
        if report.kept and not report.removed:
            out[key] = report.text
    rec = sections.get("recommendations", "")
    if rec and forbidden_reason(rec) is None:
        out["recommendations"] = rec
    draft = DraftText(**out, path="llm" if out != base.as_contract() else "extractive")
    _audit_draft(rt, scan_id, doctor_id, llm, messages, draft.path)
    return draft


def _audit_draft(
    rt: Runtime, scan_id: str, doctor_id: int | None, llm: LLM, messages: list[Message], outcome: str
) -> None:
    audit(
        rt.db,
        actor_id=doctor_id,
        action="draft",
        scan_ref=scan_id,
        backend=llm.backend,
        prompt_hash=prompt_hash(messages),
        outcome=outcome,
    )


def _doctor(db: Database, doctor_id: int) -> None:
    with db.read_only() as s:
        user = s.get(User, doctor_id)
        if user is None or user.role != "doctor":
            raise NotFoundError(f"No doctor with id {doctor_id}")


def save_draft(
    db: Database, scan_id: str, author_id: int, draft: DraftText, *, draft_id: int | None = None, from_ai: bool = True
) -> int:
    """Create (or update an open) draft row on the doctor's explicit Save. Returns the draft id."""
    _doctor(db, author_id)
    if not (draft.findings.strip() and draft.impression.strip()):
        raise InvalidInputError("A draft needs findings and an impression")
    with db.session() as s:
        if draft_id is None:
            row = ReportDraft(scan_id=scan_id, author_id=author_id, from_ai=from_ai)
            s.add(row)
        else:
            found = s.get(ReportDraft, draft_id)
            if found is None:
                raise NotFoundError(f"No draft {draft_id}")
            if found.status != "open":
                raise ImmutableRecordError(f"Draft {draft_id} was signed; amend the report instead")
            row = found
        row.findings, row.impression, row.recommendations = draft.findings, draft.impression, draft.recommendations
        row.updated_at = utcnow()
        s.flush()
        return row.id


def sign_draft(db: Database, draft_id: int, doctor_id: int) -> int:
    """Sign a saved draft: creates the immutable report and closes the draft. Returns the report id."""
    _doctor(db, doctor_id)
    with db.session() as s:
        draft = s.get(ReportDraft, draft_id)
        if draft is None:
            raise NotFoundError(f"No draft {draft_id}")
        if draft.status != "open":
            raise ImmutableRecordError(f"Draft {draft_id} is already signed")
        report = Report(
            scan_id=draft.scan_id,
            author_id=doctor_id,
            findings=draft.findings,
            impression=draft.impression,
            recommendations=draft.recommendations,
            is_ai_corrected=draft.from_ai,
            signed_at=utcnow(),
        )
        s.add(report)
        s.flush()
        draft.status, draft.report_id = "signed", report.id
        return report.id


def amend_report(
    db: Database, report_id: int, doctor_id: int, findings: str, impression: str, recommendations: str
) -> int:
    """A signed new version superseding ``report_id``; the original stays unchanged."""
    _doctor(db, doctor_id)
    with db.session() as s:
        old = s.get(Report, report_id)
        if old is None:
            raise NotFoundError(f"No report {report_id}")
        newer = s.scalar(select(Report.id).where(Report.supersedes_id == report_id))
        if newer is not None:
            raise ImmutableRecordError(f"Report {report_id} was already amended by report {newer}")
        new = Report(
            scan_id=old.scan_id,
            author_id=doctor_id,
            findings=findings,
            impression=impression,
            recommendations=recommendations,
            is_ai_corrected=old.is_ai_corrected,
            version=old.version + 1,
            supersedes_id=old.id,
            signed_at=utcnow(),
        )
        s.add(new)
        s.flush()
        return new.id
