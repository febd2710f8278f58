"""An amendment that newly names a critical finding needs its own communication record (issue 29), on both stores.

Each variant signs an original report (with or without a record), then amends it: a critical
finding newly named in FINDINGS, IMPRESSION or a structured field is refused with
:class:`CommunicationRequiredError` and nothing is written; with a record the new version
carries the CRITICAL RESULT paragraph and one ``critical.communicated`` audit row names it. A
finding the original already named under its record, a negated one or a non-critical change
needs none. Detection is the signing path's own (:func:`core.reports.signing.critical_named`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import pytest
from sqlalchemy import func, select

from core.errors import CommunicationRequiredError, InvalidInputError
from core.reports import AI_MARK, DraftText, amend_report, save_draft, sign_draft
from core.reports.critical import amendment_needs_record
from core.reports.signing import CriticalCommunication, ai_sentences
from core.reports.templates import GENERAL, render
from core.runtime import Runtime
from core.store.models import AuditLog, Report, User
from tests.conftest import scan_of

CRITICAL = ["tension pneumothorax", "pneumothorax", "free air", "aortic dissection"]
NOW = dt.datetime.now(dt.UTC).replace(second=0, microsecond=0)
RECORD = CriticalCommunication("Dr. B. Mensah, surgical registrar", "phone", NOW, True)
STRUCTURED = render(GENERAL, {"finding": "Aortic dissection of the descending aorta"}, set())[0]


@dataclass(frozen=True)
class Variant:
    """An original report and an amendment of it; ``named``: what the refusal names (None: accepted as is)."""

    id: str
    patient: str  # imran.khan: AI reading "Tension pneumothorax"; rahul.mehta: "COPD with emphysema"
    original: tuple[str, str]
    original_record: bool
    amended: tuple[str, str, str]  # findings, impression, recommendations ("" keeps the original's)
    named: list[str] | None
    flagged: bool = False


VARIANTS = [
    Variant("findings", "rahul.mehta", ("Emphysema, upper zones.", "COPD."), False,
            ("Emphysema. New large right pneumothorax.", "COPD.", ""), ["pneumothorax"]),
    Variant("impression", "rahul.mehta", ("Emphysema, upper zones.", "COPD."), False,
            ("Emphysema, upper zones.", "COPD. Free air under the right hemidiaphragm.", ""), ["free air"]),
    Variant("structured-field", "rahul.mehta", ("Emphysema, upper zones.", "COPD."), False,
            (STRUCTURED, "COPD.", ""), ["aortic dissection"]),
    Variant("ai-marked-sentence", "rahul.mehta", ("Emphysema, upper zones.", "COPD."), False,
            ("Emphysema, upper zones.", f"{AI_MARK}: Free air under the diaphragm.", ""), ["free air"]),
    Variant("flagged-by-the-doctor", "rahul.mehta", ("Emphysema, upper zones.", "COPD."), False,
            ("Emphysema, upper zones, progressing.", "COPD.", ""), [], flagged=True),
    Variant("already-named-with-its-record", "imran.khan", ("Left pneumothorax.", "Tension pneumothorax."), True,
            ("Left pneumothorax.", "Tension pneumothorax. Chest drain placed.", ""), None),
    Variant("a-second-critical-finding", "imran.khan", ("Left pneumothorax.", "Tension pneumothorax."), True,
            ("Left pneumothorax. Free air under the diaphragm.", "Tension pneumothorax.", ""), ["free air"]),
    Variant("named-but-never-recorded", "imran.khan", ("Left pneumothorax.", "Pneumothorax."), False,
            ("Left pneumothorax, enlarging.", "Pneumothorax.", ""), ["pneumothorax"]),
    Variant("non-critical-change", "rahul.mehta", ("Emphysema, upper zones.", "COPD."), False,
            ("Emphysema, upper zones. No pneumothorax.", "COPD, stable.", ""), None),
    Variant("typed-record-is-no-record", "rahul.mehta", ("Emphysema, upper zones.", "COPD."), False,
            ("Emphysema. Small left pneumothorax.", "COPD.",
             "CRITICAL RESULT: communicated to Dr. X by phone at 2026-01-01 10:00; read-back confirmed."),
            ["pneumothorax"]),
]  # fmt: skip


def _doctor(rt: Runtime) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)


def _original(rt: Runtime, v: Variant, doctor: int) -> int:
    """The signed original; ``critical_findings`` empty when it was signed without a record (as before issue 29)."""
    draft = save_draft(rt.db, scan_of(rt, v.patient), doctor, DraftText(*v.original, ""))
    if v.original_record:
        return sign_draft(rt.db, draft, doctor, critical_findings=CRITICAL, communication=RECORD)
    return sign_draft(rt.db, draft, doctor)


def _written(rt: Runtime, scan: str) -> tuple[int, int, int]:
    with rt.db.read_only() as s:
        return (
            int(s.scalar(select(func.count()).select_from(Report).where(Report.scan_id == scan)) or 0),
            int(s.scalar(select(func.count()).select_from(AuditLog)) or 0),
            int(s.scalar(select(func.count()).select_from(AuditLog).where(AuditLog.action == "critical.communicated")) or 0),
        )  # fmt: skip


@pytest.mark.parametrize("v", VARIANTS, ids=[v.id for v in VARIANTS])
def test_an_amendment_naming_a_new_critical_finding_needs_its_own_record(rw: Runtime, v: Variant) -> None:
    doctor, scan = _doctor(rw), scan_of(rw, v.patient)
    original = _original(rw, v, doctor)
    with rw.db.read_only() as s:
        old = s.get(Report, original)
        assert old is not None
        before_text = (old.findings, old.impression, old.recommendations, old.content_hash)
    findings, impression, recs = v.amended
    marked = ai_sentences(findings, impression)

    def amend(**kw: object) -> int:
        return amend_report(
            rw.db, original, doctor, findings, impression, recs or "Routine follow-up.", reason="Correction.",
            confirmed_ai=marked, critical_findings=CRITICAL, flagged_critical=v.flagged, **kw,  # type: ignore[arg-type]
        )  # fmt: skip

    needed, named = amendment_needs_record(rw.db, original, findings, impression, CRITICAL, flagged=v.flagged)
    assert (needed, named) == (v.named is not None, v.named or []), "the form asks exactly when core will"
    written = _written(rw, scan)
    if v.named is not None:
        with pytest.raises(CommunicationRequiredError) as refused:
            amend()
        assert refused.value.findings == v.named
        assert ", ".join(v.named) in str(refused.value) if v.named else "flagged" in str(refused.value)
        with pytest.raises(InvalidInputError, match="not read back"):  # an incomplete record is no record
            amend(communication=CriticalCommunication(RECORD.recipient, "phone", NOW, False))
        assert _written(rw, scan) == written, "a refusal writes nothing"
        new_id = amend(communication=RECORD)
    else:
        new_id = amend()
    with rw.db.read_only() as s:
        new, old = s.get(Report, new_id), s.get(Report, original)
        assert new is not None and old is not None and new.supersedes_id == original
        assert (old.findings, old.impression, old.recommendations, old.content_hash) == before_text
        rows = list(s.scalars(select(AuditLog).where(AuditLog.action == "critical.communicated")))
    ours = [r.detail for r in rows if r.detail.get("report_id") == new_id]
    line = "CRITICAL RESULT: communicated to Dr. B. Mensah, surgical registrar by phone at"
    if v.named is not None:
        assert line in new.recommendations and new.recommendations.index(line) < new.recommendations.index(
            "ATTESTATION:"
        ), "the record precedes the amending doctor's attestation"
        assert len(ours) == 1 and ours[0]["method"] == "phone" and ours[0]["read_back"] is True
    else:
        assert line not in new.recommendations and ours == []
        assert _written(rw, scan)[2] == written[2], "no record was needed, none was written"
    assert AI_MARK not in f"{new.findings} {new.impression}"


def test_a_recorded_amendment_covers_the_next_one(rw: Runtime) -> None:
    """Version 2 recorded the new finding: version 3 that keeps it needs no further record."""
    doctor, scan = _doctor(rw), scan_of(rw, "rahul.mehta")
    v1 = sign_draft(rw.db, save_draft(rw.db, scan, doctor, DraftText("Emphysema.", "COPD.", "")), doctor)
    v2 = amend_report(
        rw.db, v1, doctor, "Emphysema. Free air under the diaphragm.", "COPD.", "", reason="Missed finding.",
        critical_findings=CRITICAL, communication=RECORD,
    )  # fmt: skip
    assert amendment_needs_record(rw.db, v2, "Emphysema. Free air, less.", "COPD.", CRITICAL) == (False, [])
    v3 = amend_report(
        rw.db, v2, doctor, "Emphysema. Free air, less.", "COPD.", "", reason="Follow-up.", critical_findings=CRITICAL
    )
    assert amendment_needs_record(rw.db, v3, "Emphysema. Pneumothorax.", "COPD.", CRITICAL) == (True, ["pneumothorax"])
