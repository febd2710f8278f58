"""Saving, signing and amending reports: the only writes of the report workflow.

Each write checks in ``core`` what a page might forget, in one transaction
with its audit row (:mod:`core.reports.audit`):

- a draft is changed only by its author, on its own scan, while it is open,
  and only from the version the author last saw (``expected_version``): a
  stale edit raises :class:`ConflictError` carrying the current text;
- signing claims the open draft with one conditional UPDATE, so two signers
  cannot both turn it into a report;
- an amendment must change the text and give a reason; it locks the report it
  supersedes (a PostgreSQL advisory lock on its id), and the unique index on
  ``supersedes_id`` refuses a second version 2 on both databases, so
  concurrent amendments give one new version and clear conflicts.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, text, update
from sqlalchemy.exc import IntegrityError

from core.errors import (
    AccessDeniedError,
    CommunicationRequiredError,
    ConflictError,
    ImmutableRecordError,
    InvalidInputError,
    NotFoundError,
)
from core.reports import audit as report_audit
from core.reports.critical import covered_findings
from core.reports.signing import (
    CriticalCommunication,
    amendment_critical,
    attest,
    attestation_line,
    communication_line,
    needs_communication,
    without_attestation,
)
from core.store.db import Database
from core.store.models import Report, ReportDraft, Scan, User, utcnow

if TYPE_CHECKING:
    from core.reports.drafts import DraftText

__all__ = ["amend_report", "save_draft", "sign_draft"]

_AMEND_LOCK = 26_010  # pg_advisory_xact_lock namespace of amendments


def _doctor(db: Database, doctor_id: int) -> None:
    with db.read_only() as s:
        user = s.get(User, doctor_id)
        if user is None or user.role != "doctor":
            raise NotFoundError(f"No doctor with id {doctor_id}")


def _texts(row: ReportDraft | Report) -> dict[str, Any]:
    return {
        "findings": row.findings,
        "impression": row.impression,
        "recommendations": row.recommendations,
        "version": row.version,
    }


def _refusal(db: Database, draft_id: int, scan_id: str | None, author_id: int, expected: int | None) -> Exception:
    """Why a conditional draft update matched no row, as the error to raise."""
    with db.read_only() as s:
        row = s.get(ReportDraft, draft_id)
        if row is None:
            return NotFoundError(f"No draft {draft_id}")
        if scan_id is not None and row.scan_id != scan_id:
            return InvalidInputError(f"Draft {draft_id} belongs to another scan; open it from its own scan")
        if row.author_id != author_id:
            return AccessDeniedError(f"Draft {draft_id} belongs to another doctor")
        if row.status != "open":
            return ImmutableRecordError(f"Draft {draft_id} was signed; amend the report instead")
        return ConflictError(
            f"Draft {draft_id} was changed elsewhere (now version {row.version}, you edited version {expected})",
            current=_texts(row),
        )


def save_draft(
    db: Database,
    scan_id: str,
    author_id: int,
    draft: DraftText,
    *,
    draft_id: int | None = None,
    expected_version: int | None = None,
    from_ai: bool = True,
    autosave: bool = False,
) -> int:
    """Create a draft, or update an open one of the author's from ``expected_version``; returns the draft id.

    A new draft has version 1; a successful update makes it ``expected_version + 1``. It never
    signs, and a signed draft is never changed (the UPDATE matches open drafts only). ``autosave``
    marks the audit row (outcome ``autosave``) of a save the editor made by itself.
    """
    _doctor(db, author_id)
    if not (draft.findings.strip() and draft.impression.strip()):
        raise InvalidInputError("A draft needs findings and an impression")
    if draft_id is not None and expected_version is None:
        raise InvalidInputError("Updating a draft needs the version it was edited from (expected_version)")
    with db.session() as s:
        if draft_id is None:
            row = ReportDraft(
                scan_id=scan_id,
                author_id=author_id,
                from_ai=from_ai,
                findings=draft.findings,
                impression=draft.impression,
                recommendations=draft.recommendations,
                version=1,
            )
            s.add(row)
            s.flush()
            report_audit.draft_saved(s, author_id, scan_id, row.id, 1, autosave=autosave)
            return row.id
        done = s.execute(
            update(ReportDraft)
            .where(
                ReportDraft.id == draft_id,
                ReportDraft.scan_id == scan_id,
                ReportDraft.author_id == author_id,
                ReportDraft.status == "open",
                ReportDraft.version == expected_version,
            )
            .values(
                findings=draft.findings,
                impression=draft.impression,
                recommendations=draft.recommendations,
                updated_at=utcnow(),
                version=ReportDraft.version + 1,
            )
            .execution_options(synchronize_session=False)
        )
        if done.rowcount != 1:  # type: ignore[attr-defined]  # a CursorResult for an UPDATE
            s.rollback()
            raise _refusal(db, draft_id, scan_id, author_id, expected_version)
        assert expected_version is not None
        report_audit.draft_saved(s, author_id, scan_id, draft_id, expected_version + 1, autosave=autosave)
        return draft_id


def sign_draft(
    db: Database,
    draft_id: int,
    doctor_id: int,
    *,
    expected_version: int | None = None,
    confirmed_ai: Sequence[str] = (),
    communication: CriticalCommunication | None = None,
    critical_findings: Sequence[str] = (),
    flagged_critical: bool = False,
) -> int:
    """Sign the author's open draft (from ``expected_version`` when given) into an immutable report; returns its id.

    Every AI-derived sentence must be in ``confirmed_ai`` (else :class:`InvalidInputError`); a critical
    result (:func:`~core.reports.signing.needs_communication`) needs ``communication``. The signed text
    carries the CRITICAL RESULT record and the doctor's ATTESTATION; the draft keeps the AI marks.
    """
    _doctor(db, doctor_id)
    with db.session() as s:
        cond = [ReportDraft.id == draft_id, ReportDraft.author_id == doctor_id, ReportDraft.status == "open"]
        if expected_version is not None:
            cond.append(ReportDraft.version == expected_version)
        claimed = s.execute(
            update(ReportDraft).where(*cond).values(status="signed").execution_options(synchronize_session=False)
        )
        if claimed.rowcount != 1:  # type: ignore[attr-defined]
            s.rollback()
            err = _refusal(db, draft_id, None, doctor_id, expected_version)
            if isinstance(err, ImmutableRecordError):
                err = ImmutableRecordError(f"Draft {draft_id} is already signed")
            raise err
        draft = s.scalars(
            select(ReportDraft).where(ReportDraft.id == draft_id).execution_options(populate_existing=True)
        ).one()
        texts = {"findings": draft.findings, "impression": draft.impression, "recommendations": draft.recommendations}
        scan, doctor = s.get(Scan, draft.scan_id), s.get(User, doctor_id)
        assert scan is not None and doctor is not None
        now = utcnow()
        critical = needs_communication(
            scan.ai_diagnosis, [draft.findings, draft.impression], critical_findings, flagged=flagged_critical
        )
        if critical and communication is None:
            raise CommunicationRequiredError(
                "This report has a critical finding: record who was told, when, how, and the read-back before signing"
            )
        signed, confirmed = attest(texts, confirmed_ai)  # refuses an AI-derived sentence left unconfirmed
        closing = [communication_line(communication.checked(now))] if critical and communication else []
        closing.append(attestation_line(doctor.display_name, confirmed, now))
        recommendations = "\n\n".join(p for p in (signed["recommendations"].strip(), *closing) if p)
        report = Report(
            scan_id=draft.scan_id,
            author_id=doctor_id,
            findings=signed["findings"],
            impression=signed["impression"],
            recommendations=recommendations,
            is_ai_corrected=draft.from_ai,
            version=1,
            signed_at=now,
        )
        s.add(report)
        s.flush()
        draft.report_id = report.id
        report_audit.draft_signed(
            s, doctor_id, draft.scan_id, draft_id, report.id, report.content_hash,
            ai_confirmed=confirmed, from_ai=draft.from_ai,
        )  # fmt: skip
        if critical and communication is not None:
            report_audit.critical_communicated(
                s, doctor_id, draft.scan_id, report_id=report.id, recipient=communication.recipient.strip(),
                method=communication.method, at=communication.communicated_at.isoformat(timespec="minutes"),
            )  # fmt: skip
        return report.id


def amend_report(
    db: Database,
    report_id: int,
    doctor_id: int,
    findings: str,
    impression: str,
    recommendations: str,
    *,
    reason: str,
    allow_colleague: bool = False,
    confirmed_ai: Sequence[str] = (),
    communication: CriticalCommunication | None = None,
    critical_findings: Sequence[str] = (),
    flagged_critical: bool = False,
) -> int:
    """A signed new version superseding ``report_id`` (which never changes); returns its id.

    The text must differ from the amended version and ``reason`` must say why
    (it is stored with the version). A version another doctor signed may be amended
    only with ``allow_colleague`` (the setting ``ui.amend_colleague_reports``); the audit
    row then names the colleague (``colleague_of``) and the pages show it. Amending a version that was already
    amended raises :class:`ConflictError` naming the newer one.

    Attestation as at signing: every AI-derived sentence of the new text must be in ``confirmed_ai``
    (else :class:`InvalidInputError`, nothing written); the earlier ATTESTATION paragraph is dropped and
    the amending doctor's own ends the new version. When the amendment carried AI-derived text, its
    marked text is kept as a signed draft row of the new version and the audit row counts the
    confirmed sentences: the AI provenance stays in the history.

    Critical results as at signing: an amendment whose findings or impression name one of
    ``critical_findings`` that no recorded earlier version covers, or that the doctor flags
    (``flagged_critical``), needs ``communication`` (else :class:`CommunicationRequiredError`, nothing
    written); its CRITICAL RESULT paragraph precedes the new ATTESTATION and it gets its audit row.
    """
    _doctor(db, doctor_id)
    if not (findings.strip() and impression.strip()):
        raise InvalidInputError("An amendment needs findings and an impression")
    if not (reason or "").strip():
        raise InvalidInputError("An amendment needs a reason", hint="Say why the signed report is being amended.")
    texts = {"findings": findings, "impression": impression, "recommendations": without_attestation(recommendations)}
    signed, confirmed = attest(texts, confirmed_ai)  # refuses an AI-derived sentence left unconfirmed
    with db.session() as s:
        if not db.is_sqlite:  # one amender per report at a time; an advisory lock needs no UPDATE grant on reports
            s.execute(text("SELECT pg_advisory_xact_lock(:ns, :rid)"), {"ns": _AMEND_LOCK, "rid": int(report_id)})
        old = s.scalars(select(Report).where(Report.id == report_id)).first()
        if old is None:
            raise NotFoundError(f"No report {report_id}")
        if old.author_id != doctor_id and not allow_colleague:
            raise AccessDeniedError(
                f"Report {report_id} was signed by another doctor",
                hint="Amending a colleague's report is off (setting ui.amend_colleague_reports); ask the signer.",
            )
        newer = s.scalar(select(Report.id).where(Report.supersedes_id == report_id))
        if newer is not None:
            raise ConflictError(f"Report {report_id} was already amended by report {newer}; amend that version")
        before = (old.findings.strip(), old.impression.strip(), without_attestation(old.recommendations or ""))
        if before == (signed["findings"].strip(), signed["impression"].strip(), signed["recommendations"]):
            raise InvalidInputError("An amendment must change the text of the report")
        doctor = s.get(User, doctor_id)
        assert doctor is not None
        now = utcnow()
        critical, named = amendment_critical(
            [findings, impression], critical_findings, covered_findings(s, old, critical_findings),
            flagged=flagged_critical,
        )  # fmt: skip
        if critical and communication is None:
            what = f" newly names a critical finding ({', '.join(named)})" if named else " is flagged as a critical result"
            raise CommunicationRequiredError(
                f"This amendment{what}: record who was told, when, how, and the read-back before signing it", named
            )
        closing = [communication_line(communication.checked(now))] if critical and communication else []
        closing.append(attestation_line(doctor.display_name, confirmed, now, amends_version=old.version))
        new = Report(
            scan_id=old.scan_id,
            author_id=doctor_id,
            findings=signed["findings"],
            impression=signed["impression"],
            recommendations="\n\n".join(p for p in (signed["recommendations"], *closing) if p),
            is_ai_corrected=old.is_ai_corrected or confirmed > 0,
            version=old.version + 1,
            supersedes_id=old.id,
            signed_at=now,
            amend_reason=reason.strip(),
        )
        s.add(new)
        try:
            s.flush()
        except IntegrityError as exc:  # the unique index on supersedes_id: another amendment won
            raise ConflictError(
                f"Report {report_id} was amended by someone else at the same time; amend the current version"
            ) from exc
        draft_id = None
        if confirmed:  # the amendment's own text with its AI marks, as a signed draft of the new version
            marked = ReportDraft(
                scan_id=old.scan_id, author_id=doctor_id, findings=findings, impression=impression,
                recommendations=texts["recommendations"], from_ai=True, status="signed", report_id=new.id,
                created_at=now, updated_at=now,
            )  # fmt: skip
            s.add(marked)
            s.flush()
            draft_id = marked.id
        report_audit.report_amended(
            s, doctor_id, old.scan_id, report_id=new.id, supersedes_id=old.id, version=new.version,
            content_hash=new.content_hash, colleague_of=old.author_id if old.author_id != doctor_id else None,
            ai_confirmed=confirmed, draft_id=draft_id,
        )  # fmt: skip
        if critical and communication is not None:
            report_audit.critical_communicated(
                s, doctor_id, old.scan_id, report_id=new.id, recipient=communication.recipient.strip(),
                method=communication.method, at=communication.communicated_at.isoformat(timespec="minutes"),
            )  # fmt: skip
        return new.id
