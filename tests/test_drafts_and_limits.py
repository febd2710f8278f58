"""Report drafts (never saved until Save, immutable once signed) and the shared per-doctor rate limit."""

from __future__ import annotations

import json
import multiprocessing as mp
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from core.answer.records import check_rate_limit
from core.answer.rules import forbidden_reason
from core.errors import ConflictError, ImmutableRecordError, InvalidInputError, RateLimitedError
from core.reports import DraftText, amend_report, save_draft, sign_draft
from core.reports.signing import ai_sentences
from core.reports.writer import generate_report_draft
from core.runtime import Runtime
from core.store.db import Database
from core.store.models import RateLimitHit, Report, ReportDraft, User
from tests.conftest import run_cli, scan_of


def _count(rt: Runtime, model: type) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


def _hits(rt: Runtime, doctor_id: int, bucket: str = "ask") -> int:
    """The hits ``doctor_id`` holds in ``bucket``: only what this test counted.

    The session's demo store is also served to page tests (Guideline QA, log-in) that leave
    their own hits and attempts in it, and every copy inherits them; a whole-table count
    read 24 of 20 in the clean-clone run while the limit had answered exactly 20.
    """
    with rt.db.read_only() as s:
        return int(
            s.scalar(select(func.count()).where(RateLimitHit.doctor_id == doctor_id, RateLimitHit.bucket == bucket))
            or 0
        )


def _doctor(rt: Runtime) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)


@pytest.mark.parametrize("user", ["rahul.mehta", "imran.khan", "ewa.kowalska", "tomas.novak"])
def test_generated_draft_is_grounded_and_never_saved(fresh: Runtime, user: str) -> None:
    drafts, reports = _count(fresh, ReportDraft), _count(fresh, Report)
    draft = generate_report_draft(fresh, scan_of(fresh, user))
    assert set(draft.as_contract()) == {"findings", "impression", "recommendations"}
    assert draft.findings and draft.impression and draft.recommendations
    assert forbidden_reason(draft.recommendations) is None
    assert (_count(fresh, ReportDraft), _count(fresh, Report)) == (drafts, reports)


def test_copd_draft_compares_with_the_prior_report(demo: Runtime) -> None:
    draft = generate_report_draft(demo, scan_of(demo, "rahul.mehta"))
    assert "Prior signed report" in draft.findings and "COPD with emphysema" in draft.impression


def test_save_sign_and_amend(fresh: Runtime) -> None:
    sid, doc = scan_of(fresh, "imran.khan"), _doctor(fresh)
    draft = generate_report_draft(fresh, sid)
    draft_id = save_draft(fresh.db, sid, doc, draft)
    edited = DraftText("Large left pneumothorax with mediastinal shift.", draft.impression, draft.recommendations)
    assert save_draft(fresh.db, sid, doc, edited, draft_id=draft_id, expected_version=1) == draft_id
    with pytest.raises(InvalidInputError, match="AI-derived"):  # the impression still carries the AI reading
        sign_draft(fresh.db, draft_id, doc)
    report_id = sign_draft(fresh.db, draft_id, doc, confirmed_ai=ai_sentences(edited.impression))
    with fresh.db.read_only() as s:
        report = s.get(Report, report_id)
        d = s.get(ReportDraft, draft_id)
        assert report is not None and report.signed_at is not None and report.findings.startswith("Large left")
        assert report.is_ai_corrected and d is not None and d.status == "signed" and d.report_id == report_id
    with pytest.raises(ImmutableRecordError):
        sign_draft(fresh.db, draft_id, doc)
    with pytest.raises(ImmutableRecordError):
        save_draft(fresh.db, sid, doc, edited, draft_id=draft_id, expected_version=2)
    new_id = amend_report(
        fresh.db, report_id, doc, "Amended findings.", "Amended impression.", "Follow-up.", reason="Typo"
    )
    with fresh.db.read_only() as s:
        old, new = s.get(Report, report_id), s.get(Report, new_id)
        assert old is not None and new is not None
        assert old.findings.startswith("Large left") and new.version == 2 and new.supersedes_id == report_id
    with pytest.raises(ConflictError):  # version 1 was amended already: amend the current version
        amend_report(fresh.db, report_id, doc, "again", "again", "", reason="Second thoughts")


def test_empty_draft_is_refused(fresh: Runtime) -> None:
    with pytest.raises(InvalidInputError):
        save_draft(fresh.db, scan_of(fresh, "li.wei"), _doctor(fresh), DraftText(" ", "", ""))


def test_rate_limit_is_exact_under_threads(fresh: Runtime) -> None:
    doc, ok, limited = _doctor(fresh), [], []

    def worker() -> None:
        for _ in range(5):
            try:
                check_rate_limit(fresh.db, doc, limit=20, window_s=60)
                ok.append(1)
            except RateLimitedError as exc:
                limited.append(exc.retry_after_s)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 20 and len(limited) == 20
    assert all(0 < r <= 60 for r in limited)
    assert _hits(fresh, doc) == 20


def _hammer(url: str, doctor_id: int, n: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    db = Database(url)
    passed = 0
    for _ in range(n):
        try:
            check_rate_limit(db, doctor_id, limit=12, window_s=60)
            passed += 1
        except RateLimitedError:
            pass
    out.put(passed)


def test_rate_limit_is_shared_across_processes(fresh: Runtime, spawn_ctx: Any) -> None:
    ctx = spawn_ctx
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=_hammer, args=(fresh.settings.database_url, _doctor(fresh), 8, out)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert sum(out.get(timeout=5) for _ in procs) == 12


def test_rate_limit_window_expires(fresh: Runtime) -> None:
    doc = _doctor(fresh)
    for i in range(3):
        check_rate_limit(fresh.db, doc, limit=3, window_s=10, now=1000.0 + i)
    with pytest.raises(RateLimitedError, match="retry in 7 s"):
        check_rate_limit(fresh.db, doc, limit=3, window_s=10, now=1003.0)
    check_rate_limit(fresh.db, doc, limit=3, window_s=10, now=1011.0)


def test_ask_and_draft_cli(demo_root: Path, fresh: Runtime) -> None:
    sid = scan_of(fresh, "imran.khan")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(fresh.settings.paths.data_dir.parent, *args)

    ask = json.loads(run("ask", sid, "What is the prognosis?", "--extractive", "--json").stdout)
    assert ask["citedCaseIds"] and ask["confidence"] in {"high", "medium", "low"} and ask["path"] == "extractive"
    draft = json.loads(run("draft", sid, "--extractive", "--json").stdout)
    assert draft["saved"] is False and "Tension pneumothorax" in draft["impression"]
    assert run("ask", sid, "  ", "--json").returncode == 2
