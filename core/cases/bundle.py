"""The contract's ``buildContextBundle``: the only facts a language model may see."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select

from core.cases.evidence import basis_sentence
from core.cases.search import CaseSearch
from core.contracts import (
    BundleResult,
    ContextBundle,
    CurrentScan,
    EmptyReason,
    PatientContextOut,
    PriorReport,
    SimilarCaseBrief,
)
from core.errors import NotFoundError
from core.store.models import PatientContext, Report, Scan

__all__ = ["build_context_bundle"]


def build_context_bundle(search: CaseSearch, scan_id: str) -> BundleResult:
    """Bundle for ``scan_id``, or a typed empty result with the reason.

    Similar cases below ``settings.safety.min_similarity`` are not evidence and are
    left out. Prior reports are the newest signed, non-superseded reports of the
    same patient's earlier scans of the same anatomy.
    """
    similar = search.similar_cases(scan_id)
    if similar.empty_reason is not None:
        return BundleResult(bundle=None, empty_reason=similar.empty_reason, notice=similar.notice)
    floor = search.settings.safety.min_similarity
    used = [c for c in similar.cases if c.similarity >= floor]
    if not used:
        return BundleResult(
            bundle=None,
            empty_reason=EmptyReason.NO_SIMILAR_CASES,
            notice=f"No similar case reaches similarity {floor:.2f}.",
        )
    with search.db.read_only() as s:
        scan = s.get(Scan, scan_id)
        if scan is None:
            raise NotFoundError(f"Unknown scan {scan_id!r}")
        ctx = s.get(PatientContext, scan.patient_id)
        superseded = select(Report.supersedes_id).where(Report.supersedes_id.is_not(None))
        reports = s.scalars(
            select(Report)
            .join(Scan, Scan.id == Report.scan_id)
            .where(
                Scan.patient_id == scan.patient_id,
                Scan.anatomy == scan.anatomy,
                Scan.id != scan.id,
                Scan.created_at <= scan.created_at,
                Report.signed_at.is_not(None),
                Report.id.not_in(superseded),
            )
            .order_by(Report.signed_at.desc())
            .limit(search.settings.search.prior_reports)
        ).all()
        bundle = ContextBundle(
            currentScan=CurrentScan(
                anatomy=scan.anatomy,
                region=scan.region,
                diagnosis=scan.ai_diagnosis,
                confidence=round(float(scan.ai_confidence), 4),
            ),
            patientContext=PatientContextOut(
                age=ctx.age if ctx else None,
                sex=ctx.sex if ctx else None,
                pastConditions=list(ctx.past_conditions) if ctx else [],
            ),
            similarCases=[
                SimilarCaseBrief(diagnosis=c.diagnosis, outcome=c.outcome, similarity=c.similarity) for c in used
            ],
            priorReports=[PriorReport(findings=r.findings, impression=r.impression) for r in reports],
        )
        dates = [r.signed_at.date().isoformat() for r in reports if r.signed_at is not None]
        scan_day = scan.created_at.date()
        days = [max(0, (scan_day - r.signed_at.date()).days) for r in reports if r.signed_at is not None]
    groups: Counter[str] = Counter(g for c in used for g in c.drivers[:1])
    return BundleResult(
        bundle=bundle,
        similarity_basis=basis_sentence([g for g, _ in groups.most_common(2)]),
        case_ids=[c.caseId for c in used],
        severities=[c.severity for c in used],
        ages=[c.age for c in used],
        sexes=[c.sex for c in used],
        prior_dates=dates,
        prior_days_before=days,
        notice=similar.notice,
    )
