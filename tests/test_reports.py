"""core.reports: a scan's saved drafts and signed report versions, read-only."""

from __future__ import annotations

import pytest

from core.errors import NotFoundError
from core.reports import DraftText, amend_report, get_draft, list_drafts, report_versions, save_draft, sign_draft
from core.runtime import Runtime
from tests.conftest import scan_of
from tests.test_app_support import user_of


def test_drafts_open_first_then_signed(fresh: Runtime) -> None:
    doctor = user_of(fresh, "dr.chen").id
    scan = scan_of(fresh, "priya.nair")
    assert list_drafts(fresh.db, scan) == []
    first = save_draft(fresh.db, scan, doctor, DraftText("f1", "i1", "r1"))
    second = save_draft(fresh.db, scan, doctor, DraftText("f2", "i2", "r2"))
    report_id = sign_draft(fresh.db, first, doctor)
    rows = list_drafts(fresh.db, scan)
    assert [r.id for r in rows] == [second, first]
    assert rows[0].is_open and not rows[1].is_open and rows[1].report_id == report_id
    assert rows[0].author == "Dr. Sarah Chen" and rows[0].from_ai
    assert get_draft(fresh.db, second).findings == "f2"
    with pytest.raises(NotFoundError):
        get_draft(fresh.db, 10_000)


def test_report_versions_link_amendments(fresh: Runtime) -> None:
    doctor = user_of(fresh, "dr.chen").id
    scan = scan_of(fresh, "imran.khan")
    assert report_versions(fresh.db, scan) == []
    v1 = sign_draft(fresh.db, save_draft(fresh.db, scan, doctor, DraftText("f", "i", "r")), doctor)
    v2 = amend_report(fresh.db, v1, doctor, "f2", "i2", "r2", reason="Clarified")
    rows = report_versions(fresh.db, scan)
    assert [(r.id, r.version) for r in rows] == [(v2, 2), (v1, 1)]
    assert rows[0].is_current and rows[0].supersedes_id == v1
    assert not rows[1].is_current and rows[1].superseded_by == v2


def test_seeded_prior_reports_are_listed(demo: Runtime) -> None:
    rows = report_versions(demo.db, scan_of(demo, "rahul.mehta", 0))
    assert len(rows) == 1 and rows[0].signed_at is not None and rows[0].impression.startswith("Emphysematous COPD")
