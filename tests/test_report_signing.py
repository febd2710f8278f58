"""Structured templates, attestation of AI-derived sentences and critical-result records at signing."""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

import pytest
from sqlalchemy import select

from core.errors import InvalidInputError
from core.reports import AI_MARK, DraftText, amend_report, report_versions, save_draft, sign_draft
from core.reports.signing import CriticalCommunication, ai_sentences, attest
from core.reports.templates import PNEUMOTHORAX, prefill, render, template_for
from core.runtime import Runtime, open_runtime
from core.store.models import AuditLog, Report, ReportDraft
from tests.conftest import make_settings, scan_of
from tests.test_app_support import user_of

CRITICAL = ["tension pneumothorax", "pneumothorax"]
NOW = dt.datetime.now(dt.UTC).replace(microsecond=0)


@pytest.fixture()
def rt(demo_root: Path, tmp_path: Path) -> Runtime:
    shutil.copytree(demo_root / "data", tmp_path / "data")
    shutil.copytree(demo_root / "indexes", tmp_path / "indexes", symlinks=True)
    return open_runtime(make_settings(tmp_path))


def test_pneumothorax_template_prefills_only_what_the_ai_reading_supports() -> None:
    assert template_for("Tension pneumothorax") is PNEUMOTHORAX
    assert template_for("Community-acquired pneumonia").key == "pneumonia"
    assert template_for("Multiple sclerosis").key == "general"
    filled = prefill(PNEUMOTHORAX, "Tension pneumothorax", "right hemithorax", has_prior=False)
    assert {k: (p.value, p.source) for k, p in filled.items()} == {
        "side": ("right", "ai"),
        "tension": ("signs of tension", "ai"),
        "comparison": ("no prior study for comparison", "record"),
    }  # size and mediastinal shift are not in the reading: left for the doctor
    assert "side" not in prefill(PNEUMOTHORAX, "Pneumothorax", None, has_prior=True)
    values = {"side": "right", "size": "large (rim 2 cm or more at the hilum)", "tension": "signs of tension",
              "shift": "shifted away from the pneumothorax"}  # fmt: skip
    findings, impression = render(PNEUMOTHORAX, values, {"side", "tension"})
    assert findings.count(AI_MARK) == 2 and "Size: large (rim 2 cm or more at the hilum)." in findings
    assert "Mediastinum: shifted away from the pneumothorax." in findings
    assert impression.startswith("Large (rim 2 cm or more at the hilum) pneumothorax on the right, signs of tension")
    assert render(PNEUMOTHORAX, values, set())[0].count(AI_MARK) == 0


def test_attest_unmarks_confirmed_sentences_and_refuses_the_rest() -> None:
    texts = {"findings": f"Side: right ({AI_MARK}). Size: large.", "impression": f"{AI_MARK}: Tension pneumothorax."}
    marked = ai_sentences(*texts.values())
    assert marked == [f"Side: right ({AI_MARK}).", f"{AI_MARK}: Tension pneumothorax."]
    with pytest.raises(InvalidInputError, match="1 AI-derived"):
        attest(texts, marked[:1])
    out, n = attest(texts, marked)
    assert n == 2 and out == {"findings": "Side: right. Size: large.", "impression": "Tension pneumothorax."}


def _communication(**kw: object) -> CriticalCommunication:
    base: dict[str, object] = {
        "recipient": "Dr. A. Osei, emergency registrar", "method": "phone", "communicated_at": NOW, "read_back": True,
    }  # fmt: skip
    base.update(kw)
    return CriticalCommunication(**base)  # type: ignore[arg-type]


def test_critical_report_needs_a_communication_record_and_every_ai_sentence_confirmed(rt: Runtime) -> None:
    doctor = user_of(rt, "dr.chen")
    scan = scan_of(rt, "imran.khan")
    findings, impression = render(
        PNEUMOTHORAX, {"side": "right", "tension": "signs of tension", "size": "large (rim 2 cm or more at the hilum)"},
        {"side", "tension"},
    )  # fmt: skip
    draft_id = save_draft(rt.db, scan, doctor.id, DraftText(findings, impression, "Immediate decompression."))
    marked = ai_sentences(findings, impression)
    assert len(marked) == 3

    def sign(**kw: object) -> int:
        return sign_draft(rt.db, draft_id, doctor.id, critical_findings=CRITICAL, **kw)  # type: ignore[arg-type]

    with pytest.raises(InvalidInputError, match="critical finding"):
        sign(confirmed_ai=marked)
    with pytest.raises(InvalidInputError, match="not read back"):
        sign(confirmed_ai=marked, communication=_communication(read_back=False))
    with pytest.raises(InvalidInputError, match="in the future"):
        sign(confirmed_ai=marked, communication=_communication(communicated_at=NOW + dt.timedelta(hours=2)))
    with pytest.raises(InvalidInputError, match="name of the person"):
        sign(confirmed_ai=marked, communication=_communication(recipient="  "))
    with pytest.raises(InvalidInputError, match="1 AI-derived"):
        sign(confirmed_ai=marked[:2], communication=_communication())
    with rt.db.read_only() as s:  # every refusal left the draft open and wrote no report
        assert s.get(ReportDraft, draft_id).status == "open"  # type: ignore[union-attr]
        assert not s.scalars(select(Report).where(Report.scan_id == scan)).all()
    report_id = sign(confirmed_ai=marked, communication=_communication())
    (report,) = [r for r in report_versions(rt.db, scan) if r.id == report_id]
    text = f"{report.findings} {report.impression} {report.recommendations}"
    assert AI_MARK not in text and "Side: right." in report.findings
    assert "CRITICAL RESULT: communicated to Dr. A. Osei, emergency registrar by phone at" in report.recommendations
    assert "read-back confirmed" in report.recommendations
    assert "ATTESTATION: I, Dr. Sarah Chen, reviewed the images" in report.recommendations
    assert "3 AI-derived statement(s) were reviewed and confirmed by me" in report.recommendations
    with rt.db.read_only() as s:
        draft = s.get(ReportDraft, draft_id)
        assert draft is not None and draft.findings.count(AI_MARK) == 2, "the draft keeps the AI provenance"
        rows = {a.action: a.detail for a in s.scalars(select(AuditLog).where(AuditLog.scan_ref == scan))}
    assert rows["draft.sign"]["ai_confirmed"] == 3 and rows["critical.communicated"]["method"] == "phone"
    assert rows["critical.communicated"]["read_back"] is True
    amended = amend_report(
        rt.db, report_id, doctor.id, report.findings, report.impression + " Chest drain placed.",
        report.recommendations, reason="Drain placement confirmed on the ward.",
    )  # fmt: skip
    assert amended != report_id


def test_critical_wording_counts_only_when_affirmed_for_the_current_scan() -> None:
    from core.reports.signing import names_critical, needs_communication

    assert names_critical("Large left pneumothorax.", CRITICAL)
    assert not names_critical("No pneumothorax. Lungs clear.", CRITICAL)
    assert not names_critical("Emphysema. Negative for pneumothorax.", CRITICAL)
    assert names_critical("No effusion. Small apical pneumothorax.", CRITICAL)
    prior = "COMPARISON: Prior signed report (prior): tension pneumothorax, drained.\n\nEmphysema."
    assert not names_critical(prior, CRITICAL), "a prior report's finding is not this scan's"
    assert needs_communication("COPD", ["Emphysema."], CRITICAL, flagged=True)
    assert needs_communication("Tension pneumothorax", ["Emphysema."], CRITICAL)
    assert not needs_communication("COPD with emphysema", [prior, "COPD."], CRITICAL)


def test_a_plain_report_signs_with_an_attestation_and_no_critical_record(rt: Runtime) -> None:
    doctor = user_of(rt, "dr.chen")
    scan = scan_of(rt, "rahul.mehta")
    draft_id = save_draft(rt.db, scan, doctor.id, DraftText("Emphysema, upper zones.", "COPD.", ""))
    report_id = sign_draft(rt.db, draft_id, doctor.id, critical_findings=CRITICAL)
    (report,) = [r for r in report_versions(rt.db, scan) if r.id == report_id]
    assert report.recommendations.startswith("ATTESTATION: I, Dr. Sarah Chen") and "CRITICAL" not in report.recommendations
    flagged = save_draft(rt.db, scan_of(rt, "rahul.mehta", -2), doctor.id, DraftText("A new finding.", "Urgent.", ""))
    with pytest.raises(InvalidInputError, match="critical finding"):
        sign_draft(rt.db, flagged, doctor.id, flagged_critical=True)
