"""Worklist paging by keyboard and an amendment that needs a critical-result record, in headless Chromium (issue 29).

Over a private demo copy with 300 generated studies and ``ui.page_size`` 20: the worklist pages
with Alt+PageDown and with the Next page button reached by Tab; then a signed COPD report is
amended to name a pneumothorax: the Amend form asks for the communication record, keeps Sign
amendment disabled until it is complete, and the new version shows the record (the database's
audit row checked). Screenshots go to docs/screenshots/workstation/ (09-11).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from core.reports import DraftText, save_draft, sign_draft
from core.runtime import open_runtime
from core.settings import REPO_ROOT
from core.store.models import AuditLog, Report, User
from core.worklist import worklist
from tests.browser_support import BROWSER_MARKS, chromium_page, served_copy, wait_idle
from tests.conftest import make_settings, scan_of
from tests.test_app_support import log_in, user_of
from tests.test_worklist_paging import _generate

pytestmark = BROWSER_MARKS
SHOTS = REPO_ROOT / "docs" / "screenshots" / "workstation"


@pytest.fixture()
def server(
    demo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, Path, str, int, int]]:
    """The app (20 studies a page) over a demo copy with 300 more studies and a signed COPD report;
    yields the base URL, the root, the COPD scan, its report and how many studies the worklist lists."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("CASEBOOK_UI__PAGE_SIZE", "20")  # the server takes the test's environment
    with served_copy(demo_root, tmp_path, tmp_path / "streamlit.log") as app:
        rt = open_runtime(make_settings(app.root))
        _generate(rt)
        with rt.db.read_only() as s:
            doctor = int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)
        copd = scan_of(rt, "rahul.mehta")
        report = sign_draft(rt.db, save_draft(rt.db, copd, doctor, DraftText("Emphysema, upper zones.", "COPD.", "")), doctor)
        listed = worklist(rt.db, user_of(rt, "dr.chen"), rt.settings.reports.critical_findings, status=["unread", "draft"])
        rt.db.dispose()
        yield app.base, app.root, copd, report, len(listed)


def test_worklist_pages_by_keyboard_and_an_amendment_records_its_critical_result(
    server: tuple[str, Path, str, int, int],
) -> None:
    from playwright.sync_api import expect

    base, root, copd, report, total = server
    pages = math.ceil(total / 20)
    with chromium_page(1000, failure=root / "failure.png") as page:
        log_in(page, base, "dr.chen")
        expect(page.get_by_role("heading", name="Worklist")).to_be_visible()
        expect(page.get_by_text(f"Page 1 of {pages} · studies 1–20 of {total}")).to_be_visible()
        wait_idle(page)
        page.keyboard.press("Alt+PageDown")
        expect(page.get_by_text(f"Page 2 of {pages} · studies 21–40 of {total}")).to_be_visible()
        wait_idle(page)
        page.screenshot(path=str(SHOTS / "09-worklist-pages.png"))
        # Tab from the search box reaches Next page in a few presses; Enter turns the page
        page.get_by_role("textbox", name="Search").focus()
        for _ in range(4):
            page.keyboard.press("Tab")
            if page.evaluate("() => (document.activeElement?.innerText || '').includes('Next page')"):
                break
        else:
            pytest.fail("Next page is not reachable by Tab from the search box")
        page.keyboard.press("Enter")
        expect(page.get_by_text(f"Page 3 of {pages} · studies 41–60 of {total}")).to_be_visible()

        page.goto(f"{base}/report_draft?scan={copd}")
        expect(page.get_by_role("heading", name="Report Draft")).to_be_visible()
        page.get_by_text(f"Amend report #{report}", exact=False).click()
        findings = page.get_by_role("textbox", name="FINDINGS").last
        findings.fill("Emphysema, upper zones. Large right pneumothorax.")
        findings.press("Tab")
        record = page.locator(".st-key-amend-critical-record")
        expect(record).to_contain_text("newly named: pneumothorax")
        page.get_by_role("textbox", name="Reason for the amendment").fill("Missed finding.")
        page.get_by_role("textbox", name="Reason for the amendment").press("Tab")
        wait_idle(page)
        page.get_by_text("I sign this amendment").click()
        wait_idle(page)
        expect(page.get_by_role("button", name="Sign amendment")).to_be_disabled()  # no record yet
        record.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "10-amend-critical-record.png"))
        record.get_by_role("textbox", name="Told to (name and role)").fill("Dr. B. Mensah, surgical registrar")
        record.get_by_role("textbox", name="Told to (name and role)").press("Tab")
        wait_idle(page)
        expect(page.get_by_role("button", name="Sign amendment")).to_be_disabled()  # not read back yet
        record.get_by_text("The recipient read the result back").click()
        wait_idle(page)
        page.get_by_role("button", name="Sign amendment").click()
        expect(page.get_by_text("Signed amended report", exact=False)).to_be_visible()
        rt = open_runtime(make_settings(root))
        with rt.db.read_only() as s:
            v2 = s.scalars(select(Report).where(Report.supersedes_id == report)).one()
            rows = [a.detail for a in s.scalars(select(AuditLog).where(AuditLog.action == "critical.communicated"))]
        rt.db.dispose()
        assert [r["method"] for r in rows if r.get("report_id") == v2.id] == ["phone"]
        shown = page.locator(f".st-key-report-{v2.id}")
        expect(shown).to_contain_text("CRITICAL RESULT: communicated to Dr. B. Mensah, surgical registrar by phone")
        wait_idle(page)
        shown.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "11-amended-with-critical-record.png"))
