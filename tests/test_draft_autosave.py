"""Drafts that survive (issue 27, item 6): autosave writes the doctor's own unsigned draft, real SQLite.

The editor autosaves each committed edit through :func:`core.reports.autosave_draft`; a reload
reopens :func:`core.reports.restorable_draft`. Autosave never signs, keeps updating the one draft
it created, and never writes a signed report or a signed draft: a signed draft refuses it, and
the database itself refuses any change to a signed report (migration 0003's triggers).
"""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, update

from core.errors import ImmutableRecordError
from core.reports import DraftText, autosave_draft, restorable_draft, restored_note, save_draft, sign_draft
from core.runtime import Runtime
from core.store.models import AuditLog, Report, ReportDraft, User
from tests.conftest import scan_of

EDITED = {
    "comparison": "",
    "findings": "Hyperinflated lungs with flattened diaphragms.",
    "impression": "COPD with emphysema, edited by the doctor.",
    "recommendations": "Follow-up imaging as clinically indicated.",
}


def _user(rt: Runtime, username: str) -> int:
    with rt.db.read_only() as s:
        return int(s.scalars(select(User.id).where(User.username == username)).one())


def _reports(rt: Runtime) -> list[tuple[int, str | None, str]]:
    with rt.db.read_only() as s:
        return [(r.id, r.content_hash, r.impression) for r in s.scalars(select(Report).order_by(Report.id))]


def test_autosave_writes_one_unsigned_draft_of_the_doctor_and_updates_it(fresh: Runtime) -> None:
    scan, doctor = scan_of(fresh, "rahul.mehta"), _user(fresh, "dr.chen")
    before = _reports(fresh)
    first = autosave_draft(fresh.db, scan, doctor, EDITED, draft_id=None, version=0)
    assert first.skipped is None and first.draft_id is not None and first.version == 1
    second = autosave_draft(fresh.db, scan, doctor, EDITED | {"impression": "COPD, second edit."},
                            draft_id=first.draft_id, version=first.version)  # fmt: skip
    assert (second.draft_id, second.version) == (first.draft_id, 2)  # the same draft, one version on
    with fresh.db.read_only() as s:
        drafts = s.scalars(select(ReportDraft).where(ReportDraft.scan_id == scan)).all()
        outcomes = list(s.scalars(select(AuditLog.outcome).where(AuditLog.action == "draft.save")))
    assert len(drafts) == 1
    d = drafts[0]
    assert (d.author_id, d.status, d.report_id, d.version) == (doctor, "open", None, 2)  # the doctor's, unsigned
    assert d.impression == "COPD, second edit." and d.findings == EDITED["findings"]
    assert outcomes[-2:] == ["autosave", "autosave"]
    assert _reports(fresh) == before  # nothing signed

    restored = restorable_draft(fresh.db, scan, doctor)
    assert restored is not None and restored.id == d.id and restored.impression == "COPD, second edit."
    assert restored_note(restored).startswith(f"Restored your unsigned draft #{d.id}")
    assert restorable_draft(fresh.db, scan, _user(fresh, "dr.hassan")) is None  # another doctor's is not theirs


def test_autosave_never_writes_a_signed_draft_or_report(fresh: Runtime) -> None:
    scan, doctor = scan_of(fresh, "priya.nair"), _user(fresh, "dr.chen")
    signed_draft = save_draft(fresh.db, scan, doctor, DraftText("Signed findings.", "Signed impression.", "r"))
    sign_draft(fresh.db, signed_draft, doctor)
    before = _reports(fresh)
    assert restorable_draft(fresh.db, scan, doctor) is None  # a signed draft is never reopened for editing

    with pytest.raises(ImmutableRecordError):  # the editor still held the draft that was signed elsewhere
        autosave_draft(fresh.db, scan, doctor, EDITED, draft_id=signed_draft, version=1)
    with fresh.db.read_only() as s:
        row = s.get(ReportDraft, signed_draft)
        assert row is not None and (row.status, row.impression) == ("signed", "Signed impression.")
    assert _reports(fresh) == before

    new = autosave_draft(fresh.db, scan, doctor, EDITED, draft_id=None, version=0)  # a new edit: a new open draft
    assert new.draft_id != signed_draft
    assert _reports(fresh) == before
    with pytest.raises(ImmutableRecordError), fresh.db.session() as s:  # and the database guards the report itself
        s.execute(update(Report).where(Report.scan_id == scan).values(impression="Overwritten."))
    assert _reports(fresh) == before


def test_text_a_draft_cannot_hold_yet_is_skipped_not_written(fresh: Runtime) -> None:
    scan, doctor = scan_of(fresh, "li.wei"), _user(fresh, "dr.chen")
    done = autosave_draft(fresh.db, scan, doctor, EDITED | {"impression": "  "}, draft_id=None, version=0)
    assert done.skipped and done.draft_id is None
    with fresh.db.read_only() as s:
        assert s.scalar(select(func.count()).select_from(ReportDraft).where(ReportDraft.scan_id == scan)) == 0
