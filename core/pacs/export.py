"""Signed reports back to the hospital: a DICOM SR by STOW-RS, and a FHIR DiagnosticReport. Explicit, idempotent, audited.

:func:`export_report` is the one way out (the page's button and ``python -m core
pacs export``). For each target (``sr``, ``fhir``) it keeps one
:class:`~core.store.models.ReportExport` row per report version: ``queued`` when
asked for, ``sent`` once the endpoint took it. A version already sent is not sent
again (idempotent); a failure (unreachable, bad credentials, a timeout, a refused
STOW) records its error class, leaves the row queued, writes an audit row, and
raises the typed :class:`~core.errors.PacsError` after every target was tried.
The signed report itself is never touched: export only reads it.
:func:`resend_queued` sends every queued row again.

The re-identified objects exist only in memory on their way out: the original
Study Instance UID is opened from the protected link, the PACS's own headers of
that study are read (WADO-RS metadata) for the patient and study attributes, the
SR and the Bundle are built from them and sent, and nothing of them is stored,
logged or audited (audit rows hold the report id, the target and the outcome).
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from core import audit
from core.errors import (
    CasebookError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    PacsNotConfiguredError,
)
from core.pacs.client import Pacs, endpoint_label, make_client, mapped_errors
from core.pacs.fhir import FhirReport, build_bundle
from core.pacs.imports import STUDY_LABEL, require_doctor, sealer_for
from core.pacs.sealed import Sealer
from core.pacs.sr import SrRef, build_sr, evidence_from_metadata
from core.settings import Settings
from core.store.db import Database
from core.store.models import PacsStudyLink, Report, ReportExport, User, utcnow

__all__ = ["REPORT_EXPORT", "TARGETS", "ExportOutcome", "export_report", "queued_exports", "resend_queued"]

log = logging.getLogger(__name__)
REPORT_EXPORT = "report.export"  # audit event, one per target tried
TARGETS = ("sr", "fhir")
ClientFactory = Callable[[], Pacs]


@dataclass(frozen=True)
class ExportOutcome:
    """One target of one report version: ``sent``, ``sent before`` or ``queued`` (failed; ``error`` says why)."""

    report_id: int
    target: str
    status: str
    error: str | None = None
    hint: str | None = None


@dataclass(frozen=True)
class _Version:
    id: int
    scan_id: str
    findings: str
    impression: str
    recommendations: str
    version: int
    supersedes_id: int | None
    content_hash: str
    signed_at: Any
    signer: str


def _sr_ref(sealer: Sealer, study_uid: str, scan_id: str, report_id: int, content_hash: str) -> SrRef:
    return SrRef(study_uid, sealer.uid("sr-series", scan_id), sealer.uid("sr", str(report_id), content_hash))


def _load(db: Database, report_id: int) -> tuple[_Version, PacsStudyLink, _Version | None, bool]:
    with db.read_only() as s:
        row = s.execute(select(Report, User.display_name).join(User, User.id == Report.author_id).where(
            Report.id == report_id)).first()  # fmt: skip
        if row is None:
            raise NotFoundError(f"No report {report_id}")
        r, signer = row
        if r.signed_at is None or not r.content_hash:
            raise InvalidInputError(f"Report {report_id} is not signed", hint="Only signed reports are exported.")
        link = s.scalars(select(PacsStudyLink).where(PacsStudyLink.scan_id == r.scan_id)).first()
        if link is None:
            raise InvalidInputError(
                f"Report {report_id} is of a scan that did not come from the PACS",
                hint="Only reports of studies imported from the PACS (python -m core pacs import) can go back to it.",
            )
        s.expunge(link)
        prev, prev_sent = None, False
        if r.supersedes_id is not None:
            p = s.get(Report, r.supersedes_id)
            assert p is not None and p.content_hash is not None
            prev = _Version(p.id, p.scan_id, "", "", "", p.version, None, p.content_hash, p.signed_at, "")
            prev_sent = (
                s.scalar(
                    select(ReportExport.id).where(
                        ReportExport.report_id == p.id, ReportExport.target == "sr", ReportExport.status == "sent"
                    )
                )
                is not None
            )
        v = _Version(
            r.id, r.scan_id, r.findings, r.impression, r.recommendations or "", r.version, r.supersedes_id,
            r.content_hash, r.signed_at, signer,
        )  # fmt: skip
    return v, link, prev, prev_sent


def _queue(db: Database, report_id: int, targets: tuple[str, ...], actor_id: int | None) -> dict[str, str]:
    """Make sure a row exists per target; returns each target's status.

    Two doctors pressing Send at once both try to add the rows: the unique index keeps one,
    and the loser reads the winner's.
    """
    for _attempt in range(2):
        try:
            with db.session() as s:
                have = {e.target: e for e in s.scalars(select(ReportExport).where(ReportExport.report_id == report_id))}
                for t in targets:
                    if t not in have:
                        have[t] = ReportExport(
                            report_id=report_id, target=t, status="queued", attempts=0, requested_by=actor_id
                        )
                        s.add(have[t])
                return {t: have[t].status for t in targets}
        except IntegrityError:
            continue
    raise ConflictError(f"Report {report_id}'s export rows changed twice while queuing; press Send again")


def _record(db: Database, report_id: int, target: str, scan_id: str, actor_id: int | None, error: str | None) -> None:
    """The row's new state and the audit row, in one transaction."""
    with db.session() as s:
        row = s.scalars(
            select(ReportExport).where(ReportExport.report_id == report_id, ReportExport.target == target)
        ).one()
        row.attempts += 1
        row.updated_at = utcnow()
        row.last_error = error
        if error is None:
            row.status, row.sent_at = "sent", utcnow()
        audit.record_in(
            s, REPORT_EXPORT, actor_id, scan_id, outcome="ok" if error is None else "queued",
            report_id=report_id, target=target, error=error, attempt=row.attempts,
        )  # fmt: skip


def _send_sr(client: Pacs, sr: Any) -> None:
    client.store([sr])


def _send_fhir(settings: Settings, bundle: dict[str, Any], name: str) -> None:
    cfg = settings.pacs
    if not (cfg.fhir_url or cfg.fhir_folder):
        raise PacsNotConfiguredError(
            "No FHIR endpoint is configured", hint="Set pacs.fhir_url or pacs.fhir_folder (docs/INTEGRATION.md)."
        )
    body = json.dumps(bundle, ensure_ascii=False, indent=1).encode()
    if cfg.fhir_folder:
        folder = settings.paths.resolve(cfg.fhir_folder)
        folder.mkdir(parents=True, exist_ok=True)
        _write_private(folder / f"{name}.json", body)
    if cfg.fhir_url:
        _post_fhir(settings, body)


def _write_private(path: Path, body: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(body)
    os.replace(tmp, path)  # a reader never sees half a Bundle


def _post_fhir(settings: Settings, body: bytes) -> None:
    cfg = settings.pacs
    assert cfg.fhir_url
    where = endpoint_label(cfg.fhir_url)
    session = requests.Session()
    session.trust_env = False
    session.verify = str(cfg.ca_bundle) if cfg.ca_bundle else True
    headers = {"Content-Type": "application/fhir+json", "Accept": "application/fhir+json"}
    token = os.environ.get(cfg.fhir_token_env, "")
    if token:
        headers["Authorization"] = f"Bearer {token}"
    with mapped_errors("FHIR transaction", where):
        for attempt in range(cfg.retries):
            last = attempt == cfg.retries - 1
            try:
                answer = session.post(cfg.fhir_url.rstrip("/"), data=body, headers=headers, timeout=cfg.timeout_s)
            except (requests.Timeout, requests.ConnectionError):
                if last:
                    raise
            else:  # the Bundle's conditional creates make a repeated POST harmless
                if answer.status_code not in (408, 429, 503, 504) or last:
                    answer.raise_for_status()
                    return
            time.sleep(cfg.backoff_s * 2**attempt)


def export_report(
    settings: Settings,
    db: Database,
    report_id: int,
    *,
    actor_id: int | None,
    targets: tuple[str, ...] = TARGETS,
    client: ClientFactory | None = None,
) -> list[ExportOutcome]:
    """Send signed report ``report_id`` to each of ``targets`` not sent yet.

    Raises the first failure (a :class:`PacsError` when an endpoint failed) after every target was tried.
    """
    require_doctor(db, actor_id)
    unknown = set(targets) - set(TARGETS)
    if unknown:
        raise InvalidInputError(f"Unknown export target(s) {sorted(unknown)}; use sr and/or fhir")
    v, link, prev, prev_sent = _load(db, report_id)
    status = _queue(db, report_id, targets, actor_id)
    out = [ExportOutcome(report_id, t, "sent before") for t in targets if status[t] == "sent"]
    todo = [t for t in targets if status[t] != "sent"]
    if not todo:
        return out
    sealer = sealer_for(settings)
    first: CasebookError | None = None
    evidence: list[Any] = []
    try:
        pacs = (client or (lambda: make_client(settings.pacs)))()
        study_uid = sealer.open(link.study_sealed, STUDY_LABEL)
        evidence = evidence_from_metadata(pacs.study_metadata(study_uid))
        if not evidence:
            raise InvalidInputError("The PACS no longer holds images of this study", hint="Ask the PACS administrator.")
        ref = _sr_ref(sealer, study_uid, v.scan_id, v.id, v.content_hash)
        for target in todo:
            try:
                if target == "sr":
                    pred = (
                        _sr_ref(sealer, study_uid, v.scan_id, prev.id, prev.content_hash)
                        if prev and prev_sent
                        else None
                    )
                    sr = build_sr(
                        findings=v.findings, impression=v.impression, recommendations=v.recommendations,
                        evidence=evidence, ref=ref, version=v.version, signer=v.signer,
                        organization=settings.pacs.organization, predecessor=pred,
                    )  # fmt: skip
                    _send_sr(pacs, sr)
                else:
                    head = evidence[0]
                    bundle = build_bundle(
                        FhirReport(
                            v.findings, v.impression, v.recommendations, v.version, v.signed_at, v.signer,
                            str(head.get("PatientID", "") or ""), str(head.get("IssuerOfPatientID", "") or ""),
                            study_uid, ref.sop_uid,
                        )
                    )  # fmt: skip
                    _send_fhir(settings, bundle, f"report-{v.id}-v{v.version}")
            except CasebookError as exc:  # unreachable, refused, or a study that cannot be addressed
                first = first or exc
                _record(db, v.id, target, v.scan_id, actor_id, type(exc).__name__)
                out.append(ExportOutcome(v.id, target, "queued", str(exc), exc.hint))
                continue
            _record(db, v.id, target, v.scan_id, actor_id, None)
            out.append(ExportOutcome(v.id, target, "sent"))
    except CasebookError as exc:  # the PACS failed before any target was built: every target stays queued
        first = first or exc
        for target in todo:
            if not any(o.target == target for o in out):
                _record(db, v.id, target, v.scan_id, actor_id, type(exc).__name__)
                out.append(ExportOutcome(v.id, target, "queued", str(exc), exc.hint))
    finally:
        evidence.clear()  # the original headers leave memory here
    if first is not None:
        raise first
    return out


def queued_exports(db: Database) -> list[tuple[int, str, int, str | None]]:
    """Every queued export: (report id, target, attempts, last error class)."""
    with db.read_only() as s:
        rows = s.scalars(select(ReportExport).where(ReportExport.status == "queued").order_by(ReportExport.id)).all()
        return [(r.report_id, r.target, r.attempts, r.last_error) for r in rows]


def resend_queued(
    settings: Settings, db: Database, *, actor_id: int | None, client: ClientFactory | None = None
) -> list[ExportOutcome]:
    """Send every queued export again; failures stay queued and are returned, not raised."""
    require_doctor(db, actor_id)
    by_report: dict[int, list[str]] = {}
    for report_id, target, _n, _e in queued_exports(db):
        by_report.setdefault(report_id, []).append(target)
    out: list[ExportOutcome] = []
    for report_id, targets in by_report.items():
        try:
            out += export_report(settings, db, report_id, actor_id=actor_id, targets=tuple(targets), client=client)
        except CasebookError as exc:
            out += [ExportOutcome(report_id, t, "queued", str(exc), exc.hint) for t in targets]
    return out
