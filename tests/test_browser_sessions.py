"""Sessions and the patient shield in real headless Chromium (issue 13, items 5 and 8).

- F5 keeps a doctor signed in (the session cookie, not the URL, carries the token);
  log-out revokes the session, so a reload afterwards shows the log-in form.
- A deep link opened while logged out shows the log-in form (no "Page not found")
  and, once signed in, lands on the linked page and scan.
- A patient account sees no unsigned AI reading, confidence or similar case.

Screenshots go to ``test-artifacts/browser/`` (git-ignored) like tests/test_browser.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from core.runtime import open_runtime
from core.store.models import Scan, UserSession
from tests.browser_support import ARTIFACTS, BROWSER_MARKS, BROWSER_TIMEOUT_MS, chromium_page, served_copy
from tests.conftest import make_settings, scan_of
from tests.test_app_support import log_in, sign_in

pytestmark = BROWSER_MARKS
TIMEOUT_MS = BROWSER_TIMEOUT_MS  # the shared ceiling (CASEBOOK_TEST_BROWSER_TIMEOUT_S); tests wait for state


@pytest.fixture()
def server(demo_root: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The app over a private copy of the demo database: (base URL, data root)."""
    with served_copy(demo_root, tmp_path, ARTIFACTS / "streamlit-sessions.log") as app:
        yield app.base, app.root


def test_reload_keeps_the_session_and_log_out_revokes_it(server: tuple[str, Path]) -> None:
    from playwright.sync_api import expect

    base, root = server
    rt = open_runtime(make_settings(root))
    with rt.db.read_only() as s:  # the demo copy may already hold sessions other tests left behind
        before = set(s.scalars(select(UserSession.id)))
    with chromium_page(1400, TIMEOUT_MS) as page:
        log_in(page, base, "dr.chen")
        expect(page.get_by_role("heading", name="Worklist")).to_be_visible()  # a doctor lands on the worklist
        expect(page.get_by_text("Signed in as")).to_be_visible()
        page.wait_for_function("document.cookie.includes('casebook_session=')")
        cookie = next(c for c in page.context.cookies() if c["name"] == "casebook_session")
        assert cookie["value"] not in page.url and cookie["sameSite"] == "Strict"
        page.reload()  # F5
        expect(page.get_by_role("heading", name="Worklist")).to_be_visible()
        expect(page.get_by_text("Signed in as")).to_be_visible()
        expect(page.get_by_label("Username")).to_have_count(0)
        page.screenshot(path=str(ARTIFACTS / "sessions-01-after-reload.png"))

        page.get_by_role("button", name="Log out").click()
        expect(page.get_by_label("Username")).to_be_visible()
        page.reload()  # the old cookie, if still there, names a revoked session
        expect(page.get_by_label("Username")).to_be_visible()
        expect(page.get_by_text("Signed in as")).to_have_count(0)
        page.screenshot(path=str(ARTIFACTS / "sessions-02-after-logout.png"))
    with rt.db.read_only() as s:
        sessions = [u for u in s.scalars(select(UserSession)) if u.id not in before]
    assert len(sessions) == 1 and sessions[0].revoked_at is not None  # one log-in, one session, revoked
    rt.db.dispose()


def test_a_deep_link_lands_on_its_page_and_scan_after_log_in(server: tuple[str, Path]) -> None:
    from playwright.sync_api import expect

    base, root = server
    rt = open_runtime(make_settings(root))
    scan = scan_of(rt, "imran.khan")
    with chromium_page(1400, TIMEOUT_MS) as page:
        page.goto(f"{base}/report_draft?scan={scan}")
        expect(page.get_by_label("Username")).to_be_visible()
        expect(page.get_by_text("Page not found")).to_have_count(0)
        page.screenshot(path=str(ARTIFACTS / "sessions-03-deep-link-log-in.png"))
        sign_in(page, "dr.chen")
        expect(page.get_by_role("heading", name="Report Draft")).to_be_visible()
        page.wait_for_url(f"**/report_draft?scan={scan}**")
        expect(page.get_by_text("Tension pneumothorax").first).to_be_visible()
        expect(page.get_by_text("Page not found")).to_have_count(0)
        expect(page.get_by_text("Signed in as")).to_be_visible()  # app.py ran: the session was checked
        page.screenshot(path=str(ARTIFACTS / "sessions-04-deep-link-landed.png"))
        page.reload()  # F5 on a page other than the home page
        expect(page.get_by_role("heading", name="Report Draft")).to_be_visible()
        expect(page.get_by_label("Username")).to_have_count(0)
        assert f"scan={scan}" in page.url
    rt.db.dispose()


def test_a_patient_sees_no_unsigned_ai_output(server: tuple[str, Path]) -> None:
    from playwright.sync_api import expect

    base, root = server
    rt = open_runtime(make_settings(root))
    newest = scan_of(rt, "rahul.mehta")  # no signed report yet
    with rt.db.read_only() as s:
        reading = s.scalar(select(Scan.ai_diagnosis).where(Scan.id == newest))
    assert reading
    with chromium_page(1400, TIMEOUT_MS) as page:
        log_in(page, base, "rahul.mehta")
        expect(page.get_by_role("heading", name="My scans")).to_be_visible()
        page.wait_for_url(f"**scan={newest}**")
        expect(page.get_by_text("Awaiting your doctor's review").first).to_be_visible()
        body = page.locator("body").inner_text()
        for leak in (reading, "AI reading", "AI confidence", "Similarity", "HC-"):
            assert leak not in body, leak
        page.screenshot(path=str(ARTIFACTS / "sessions-05-patient-awaiting.png"))
    rt.db.dispose()
