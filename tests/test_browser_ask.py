"""Ask AI and report drafts in real headless Chromium (issues 13, 23): count, two parts, treatment pointer, draft.

A doctor asks a count question about the tension-pneumothorax scan and gets the number
computed from the cited cases; asks a two-part question and gets both parts (a count and
"Haemothorax is not recorded"); asks a treatment question Guideline QA does not cover and is
told so; asks one it covers (pneumonia) and is pointed to Guideline QA
with the question carried over; then generates, saves and signs a COPD draft whose
COMPARISON section holds the dated prior reports and whose text carries no case ID.
A second test drafts with a slow model (the loopback server, one token every 0.15 s):
the clock and the checked sections show while it writes, and Cancel stops it, hangs
up on the server and saves nothing.
Screenshots go to ``test-artifacts/browser/`` (git-ignored), names ``ask-*.png``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import select

from core.answer.compose import OUT_OF_SCOPE
from core.answer.rules import CASE_ID_RE
from core.runtime import open_runtime
from core.store.models import Report, ReportDraft
from tests.browser_support import (
    ARTIFACTS,
    BROWSER_MARKS,
    BROWSER_TIMEOUT_MS,
    ask_ai,
    chromium_page,
    confirm_ai_statements,
    open_patient,
    served_copy,
)
from tests.conftest import make_settings, scan_of
from tests.llm_server import FakeLLMServer
from tests.test_app_support import log_in

if TYPE_CHECKING:
    from playwright.sync_api import Page

pytestmark = BROWSER_MARKS
TIMEOUT_MS = BROWSER_TIMEOUT_MS  # the shared ceiling (CASEBOOK_TEST_BROWSER_TIMEOUT_S); tests wait for state


@pytest.fixture()
def server(demo_kb_root: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A running app over a private copy of the demo database and knowledge bases: (base URL, data root)."""
    with served_copy(demo_kb_root, tmp_path, ARTIFACTS / "streamlit-ask.log") as app:
        yield app.base, app.root


@pytest.fixture()
def slow_model_server(
    demo_root: Path, tmp_path: Path, llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, Path]]:
    """The app over the demo database, its language model a loopback server writing one token every 0.15 s."""
    llm_server.reply = (
        "IMPRESSION: COPD with emphysema.\nRECOMMENDATIONS: Follow-up imaging as clinically indicated.\n"
        "FINDINGS: " + "unchanged " * 300  # about 45 s of tokens if nothing stops them
    )
    llm_server.token_delay_s = 0.15
    for name, value in llm_server.llm_env("openai", timeout_s=60.0).items():
        monkeypatch.setenv(name, value)
    with served_copy(demo_root, tmp_path, ARTIFACTS / "streamlit-draft-cancel.log") as app:
        yield app.base, app.root


def _open_patient(page: Page, name: str) -> None:
    """Open a patient by name search and wait for their similar-case cards."""
    from playwright.sync_api import expect

    open_patient(page, name)
    expect(page.locator("[class*='st-key-case-HC-']").first).to_be_visible(timeout=TIMEOUT_MS)


def test_count_treatment_pointer_and_signable_draft(server: tuple[str, Path]) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)  # the reading page (viewer, chat, draft) is heavier on a busy machine

    base, root = server
    rt = open_runtime(make_settings(root))
    copd_scan = scan_of(rt, "rahul.mehta")
    try:
        with chromium_page(2600, TIMEOUT_MS, ARTIFACTS / "ask-failure.png") as page:
            log_in(page, base, "dr.chen")
            expect(page.get_by_role("heading", name="Worklist")).to_be_visible()  # a doctor lands on the worklist

            # a count question is answered with the number computed from the cited cases
            _open_patient(page, "khan")
            ask_ai(page, "how many of the similar pts died?")
            answer = page.get_by_text(re.compile(r"\d of 5 similar cases record death"))
            expect(answer).to_be_visible(timeout=TIMEOUT_MS)
            expect(page.locator("[class*='st-key-chips-']").first).to_contain_text(re.compile(r"Sources: HC-"))
            page.screenshot(path=str(ARTIFACTS / "ask-01-count.png"))

            # issue 23: a two-part question gets both parts: the count, and the term no case records
            ask_ai(page, "any deaths among them, and any haemothorax?")
            both = page.locator("[data-testid='stChatMessage']").filter(has_text="Haemothorax is not recorded")
            expect(both.last).to_be_visible(timeout=TIMEOUT_MS)
            expect(both.last).to_contain_text(re.compile(r"\d of 5 similar cases record death"))
            both.last.scroll_into_view_if_needed()
            page.screenshot(path=str(ARTIFACTS / "ask-01b-two-parts.png"))

            # a treatment question Guideline QA does not cover says so: no source here, nothing carried over
            ask_ai(page, "Should we insert a chest drain now?")
            expect(page.get_by_text("no source in Casebook covers this question").last).to_be_visible(timeout=TIMEOUT_MS)
            expect(page.get_by_role("button", name="Ask Guideline QA instead")).to_have_count(0)

            # one it covers (pneumonia) is pointed to Guideline QA, no case cited, the question carried over
            _open_patient(page, "nair")
            question = "Which antibiotic should we start?"
            ask_ai(page, question)
            expect(page.get_by_text(OUT_OF_SCOPE).last).to_be_visible(timeout=TIMEOUT_MS)
            link = page.get_by_role("button", name="Ask Guideline QA instead")
            expect(link).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "ask-02-treatment.png"))
            link.click()
            expect(page.get_by_role("heading", name="Guideline QA")).to_be_visible(timeout=TIMEOUT_MS)
            expect(page.get_by_role("textbox", name="Question")).to_have_value(question, timeout=TIMEOUT_MS)
            page.screenshot(path=str(ARTIFACTS / "ask-03-guideline-qa.png"))

            # a signable draft: dated COMPARISON, current FINDINGS marked unverified, no case IDs anywhere
            page.get_by_role("link", name="Scan Review").click()
            _open_patient(page, "mehta")
            page.get_by_role("button", name="Generate draft").click()
            comparison = page.get_by_role("textbox", name="COMPARISON")
            expect(comparison).to_have_value(re.compile(r"^Prior signed report of 2025-11-07 \(prior\):"), timeout=TIMEOUT_MS)
            expect(page.get_by_role("textbox", name="FINDINGS")).to_have_value(re.compile(r"^AI reading, not verified"))
            texts = [page.get_by_role("textbox", name=s).input_value() for s in ("COMPARISON", "FINDINGS", "IMPRESSION")]
            texts.append(page.get_by_role("textbox", name="RECOMMENDATIONS").input_value())
            assert not CASE_ID_RE.search(" ".join(texts)), texts
            expect(page.get_by_text("Written by the template")).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "ask-04-draft.png"))
            page.get_by_role("button", name="Save draft").click()
            assert confirm_ai_statements(page) >= 1  # the template's AI reading, confirmed sentence by sentence
            page.get_by_text("I have reviewed this draft and sign it as my report").click()
            sign = page.get_by_role("button", name="Sign report")
            expect(sign).to_be_enabled()
            sign.click()
            expect(page.get_by_text("It is now read-only")).to_be_visible(timeout=TIMEOUT_MS)
            page.screenshot(path=str(ARTIFACTS / "ask-05-signed.png"))
            with rt.db.read_only() as s:
                report = s.scalars(select(Report).where(Report.scan_id == copd_scan)).one()
            assert report.findings.startswith("COMPARISON: Prior signed report of 2025-11-07 (prior):")
            assert not CASE_ID_RE.search(f"{report.findings} {report.impression} {report.recommendations}")
    finally:
        rt.db.dispose()


def test_draft_shows_its_clock_and_cancel_stops_the_model(
    slow_model_server: tuple[str, Path], llm_server: FakeLLMServer
) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)  # the reading page (viewer, chat, draft) is heavier on a busy machine

    base, root = slow_model_server
    rt = open_runtime(make_settings(root))
    copd_scan = scan_of(rt, "rahul.mehta")
    with chromium_page(2600, TIMEOUT_MS, ARTIFACTS / "ask-failure.png") as page:
        log_in(page, base, "dr.chen")
        _open_patient(page, "mehta")
        page.get_by_role("button", name="Generate draft").click()
        expect(page.get_by_text(re.compile(r"The model \(openai\) is writing… \d+ s of 60 s"))).to_be_visible()
        expect(page.get_by_text("IMPRESSION (checked): COPD with emphysema.")).to_be_visible()  # streamed, checked
        cancel = page.get_by_role("button", name="Cancel")
        expect(cancel).to_be_visible()
        page.mouse.move(0, 0)  # no tooltip over the box in the screenshot
        page.screenshot(path=str(ARTIFACTS / "ask-06-draft-writing.png"))
        cancel.click()
        expect(page.get_by_text(re.compile(r"Cancelled after \d+ s: the model was stopped"))).to_be_visible()
        expect(page.get_by_text("No draft in progress for this scan.")).to_be_visible()
        expect(page.get_by_role("button", name="Cancel")).to_have_count(0)
        page.screenshot(path=str(ARTIFACTS / "ask-07-draft-cancelled.png"))
        deadline = time.monotonic() + TIMEOUT_MS / 1000  # the server notices the hang-up at its next token
        while not llm_server.dropped and time.monotonic() < deadline:
            page.wait_for_timeout(100)
        assert llm_server.dropped == 1 and llm_server.streamed[-1] < len(llm_server.tokens()) - 100
        with rt.db.read_only() as s:
            assert s.scalars(select(ReportDraft).where(ReportDraft.scan_id == copd_scan)).all() == []
