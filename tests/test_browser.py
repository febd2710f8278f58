"""End to end in real headless Chromium: a doctor reviews the COPD scan, asks, drafts, signs; a patient sees no chat.

Runs ``streamlit run app.py`` on a free 127.0.0.1 port over a private copy of the
demo database and drives Debian's chromium through Playwright. Screenshots go
to ``test-artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from core.runtime import open_runtime
from core.settings import REPO_ROOT
from core.store.models import AuditLog, Message, Report, ReportDraft
from tests.conftest import make_settings, scan_of
from tests.test_app_support import CHROMIUM, CHROMIUM_ARGS, free_port, log_in, start_server, stop_server, wait_healthy

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (make browser-deps)"
    ),
]
ARTIFACTS = REPO_ROOT / "test-artifacts" / "browser"
TIMEOUT_MS = 30_000


@pytest.fixture()
def server(demo_root: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A running app over a private copy of the demo database: (base URL, data root)."""
    shutil.copytree(demo_root / "data", tmp_path / "data")
    shutil.copytree(demo_root / "indexes", tmp_path / "indexes", symlinks=True)
    port = free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    proc = start_server(tmp_path, port, ARTIFACTS / "streamlit.log")
    try:
        wait_healthy(port, proc)
        yield f"http://127.0.0.1:{port}", tmp_path
    finally:
        stop_server(proc)


def test_doctor_review_flow_and_patient_view(server: tuple[str, Path]) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, root = server
    rt = open_runtime(make_settings(root))
    copd_scan = scan_of(rt, "rahul.mehta")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 2600})
        page.set_default_timeout(TIMEOUT_MS)
        try:
            # log in as a doctor and open the COPD patient's newest scan by name search
            log_in(page, base, "dr.chen")
            expect(page.get_by_role("heading", name="Scan Review")).to_be_visible()
            search = page.get_by_role("textbox", name="Search patients")
            search.fill("mehta")
            search.press("Enter")
            expect(page.get_by_text("COPD with emphysema · AI reading")).to_be_visible()
            page.wait_for_url(f"**scan={copd_scan}**")
            assert "mehta" not in page.url.lower() and "rahul" not in page.url.lower()
            cards = page.locator("[class*='st-key-case-HC-']")
            expect(cards).to_have_count(rt.settings.search.top_k)
            expect(page.get_by_text("AI output is a draft for review")).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "01-scan-review.png"))

            # ask a question: a cited answer with chips and a confidence badge
            chat = page.get_by_placeholder("Ask about this scan…")
            chat.fill("What happened to similar patients?")
            chat.press("Enter")
            chip = page.locator("[class*='st-key-chip-']").first
            expect(chip).to_be_visible()
            expect(page.get_by_text("confidence", exact=False).first).to_be_visible()
            cited = chip.inner_text().strip().lstrip("🔗").strip()
            assert cited.startswith("HC-")
            chip.locator("button").click()
            card = page.locator(f".st-key-case-{cited}")
            expect(card).to_contain_text("📌")
            expect(card).to_have_css("outline-style", "solid")  # the cited card is highlighted
            page.screenshot(path=str(ARTIFACTS / "02-ask-ai-cited.png"))

            # generate, edit, save and sign a draft
            page.get_by_role("button", name="Generate draft").click()
            expect(page.get_by_text("Unsaved draft")).to_be_visible()
            impression = page.get_by_label("IMPRESSION")
            impression.fill(impression.input_value() + " Reviewed in the browser test.")
            impression.press("Control+Enter")
            page.screenshot(path=str(ARTIFACTS / "03-unsaved-draft.png"))
            page.get_by_role("button", name="Save draft").click()
            expect(page.get_by_text("Saved draft #")).to_have_count(2)  # the notice and the badge
            page.get_by_text("I have reviewed this draft and sign it as my report").click()
            sign = page.get_by_role("button", name="Sign report")
            expect(sign).to_be_enabled()
            sign.click()
            expect(page.get_by_text("It is now read-only")).to_be_visible()
            expect(page.locator("[class*='st-key-report-']")).to_contain_text("Reviewed in the browser test.")
            page.screenshot(path=str(ARTIFACTS / "04-signed.png"))

            # the database holds exactly what the doctor did
            with rt.db.read_only() as s:
                report = s.scalars(select(Report).where(Report.scan_id == copd_scan)).one()
                draft = s.scalars(select(ReportDraft).where(ReportDraft.scan_id == copd_scan)).one()
                answers = s.scalar(select(func.count()).select_from(Message).where(Message.role == "assistant"))
                asks = s.scalar(select(func.count()).select_from(AuditLog).where(AuditLog.action == "ask"))
            assert report.impression.endswith("Reviewed in the browser test.") and report.signed_at is not None
            assert draft.status == "signed" and draft.report_id == report.id
            assert answers == 1 and asks == 1

            # the explorer pages keep the scan picked in this session
            page.get_by_role("link", name="Similar Cases").click()
            expect(page.get_by_role("heading", name="Similar Cases")).to_be_visible()
            expect(page.locator(".stPlotlyChart")).to_have_count(2)
            expect(page.get_by_text("Neighbours of the COPD with emphysema scan")).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "06-similar-cases.png"))
            page.get_by_role("link", name="Patient Explorer").click()
            expect(page.locator(".st-key-evidence-heatmap, .stPlotlyChart").first).to_be_visible()
            expect(page.get_by_text("3 scan(s)")).to_be_visible()
            expect(page.get_by_placeholder("Ask about this scan…")).to_have_count(0)
            page.screenshot(path=str(ARTIFACTS / "07-patient-explorer.png"))

            # a patient sees their own scans and no chat
            page.get_by_role("button", name="Log out").click()
            log_in(page, base, "rahul.mehta")
            expect(page.get_by_role("heading", name="My scans")).to_be_visible()
            expect(page.get_by_text("Reviewed in the browser test.")).to_be_visible()  # the signed report
            expect(page.get_by_placeholder("Ask about this scan…")).to_have_count(0)
            expect(page.get_by_role("button", name="Generate draft")).to_have_count(0)
            expect(page.get_by_role("textbox", name="Search patients")).to_have_count(0)
            page.screenshot(path=str(ARTIFACTS / "05-patient-view.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "failure.png"))
            raise
        finally:
            browser.close()
            rt.db.dispose()
