"""End to end in real headless Chromium: every page of the workbench on the demo data.

The review flow: a doctor opens the COPD scan, asks, drafts, signs; a patient sees no
chat. The knowledge and system flow: Report Draft, Guideline QA (a cited answer and an
abstention), Self-reflective RAG (its trace, with a loopback OpenAI-compatible model) and
Settings / Status. Each runs ``streamlit run app.py`` on a free 127.0.0.1 port over a
private copy of the demo database and drives Debian's chromium through Playwright.
Screenshots go to ``test-artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from core.runtime import open_runtime
from core.store.models import AuditLog, Message, Report, ReportDraft
from tests.browser_support import (
    ARTIFACTS,
    BROWSER_MARKS,
    BROWSER_TIMEOUT_MS,
    chromium_page,
    confirm_ai_statements,
    open_patient,
    served_copy,
)
from tests.conftest import make_settings, scan_of
from tests.llm_server import FakeLLMServer
from tests.test_app_support import log_in

pytestmark = BROWSER_MARKS
TIMEOUT_MS = BROWSER_TIMEOUT_MS  # the shared ceiling (CASEBOOK_TEST_BROWSER_TIMEOUT_S); tests wait for state


@pytest.fixture()
def server(demo_root: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A running app over a private copy of the demo database: (base URL, data root)."""
    with served_copy(demo_root, tmp_path, ARTIFACTS / "streamlit.log") as app:
        yield app.base, app.root


@pytest.fixture()
def kb_server(
    demo_kb_root: Path, tmp_path: Path, llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[str, Path]]:
    """The app over the demo database and knowledge bases, its language model the loopback server."""
    # One scripted reply "B", with Yes/No and utility digits among the alternatives (as in test_selfrag_judge).
    llm_server.reply = "B"
    llm_server.token_probs = {"B": {"B": 0.5, "Yes": 0.2, "No": 0.05, "5": 0.2, "1": 0.05}}
    for name, value in llm_server.llm_env("openai", timeout_s=10.0).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CASEBOOK_KB__PROGRESS", "false")
    with served_copy(demo_kb_root, tmp_path, ARTIFACTS / "streamlit-kb.log") as app:
        yield app.base, app.root


def test_doctor_review_flow_and_patient_view(server: tuple[str, Path]) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)  # the reading page (viewer, chat, draft) is heavier on a busy machine

    base, root = server
    rt = open_runtime(make_settings(root))
    copd_scan = scan_of(rt, "rahul.mehta")
    try:
        with chromium_page(2600, TIMEOUT_MS, ARTIFACTS / "failure.png") as page:
            # log in as a doctor and open the COPD patient's newest scan by name search
            log_in(page, base, "dr.chen")
            expect(page.get_by_role("heading", name="Worklist")).to_be_visible()  # a doctor lands on the worklist
            open_patient(page, "mehta")
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
            sources = page.locator("[class*='st-key-chips-']").first  # an answer's citations: one group
            expect(sources).to_contain_text("Sources: HC-")
            sources.locator("summary").click()
            chip = sources.locator("[class*='st-key-chip-']").first
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
            assert confirm_ai_statements(page) >= 1  # the template's AI reading, confirmed sentence by sentence
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
            expect(page.get_by_label("Username")).to_be_visible()  # the revoking rerun finished
            log_in(page, base, "rahul.mehta")
            expect(page.get_by_role("heading", name="My scans")).to_be_visible()
            expect(page.get_by_text("Reviewed in the browser test.")).to_be_visible()  # the signed report
            expect(page.get_by_placeholder("Ask about this scan…")).to_have_count(0)
            expect(page.get_by_role("button", name="Generate draft")).to_have_count(0)
            expect(page.get_by_role("textbox", name="Search patients")).to_have_count(0)
            page.screenshot(path=str(ARTIFACTS / "05-patient-view.png"))
    finally:
        rt.db.dispose()


def test_report_draft_guideline_qa_selfrag_and_status_pages(kb_server: tuple[str, Path]) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)  # the reading page (viewer, chat, draft) is heavier on a busy machine

    base, root = kb_server
    rt = open_runtime(make_settings(root))
    with rt.db.read_only() as s:
        signed_before = s.scalar(select(func.count()).select_from(Report))
    try:
        with chromium_page(2200, TIMEOUT_MS, ARTIFACTS / "failure-kb.png") as page:
            log_in(page, base, "dr.chen")
            expect(page.get_by_role("heading", name="Worklist")).to_be_visible()  # a doctor lands on the worklist

            # Report Draft: generate (the model's reply is no report, so the grounded fallback), save, list
            page.get_by_role("link", name="Report Draft").click()
            expect(page.get_by_role("heading", name="Report Draft")).to_be_visible()
            expect(page.get_by_text("No saved drafts for this scan.")).to_be_visible()
            page.get_by_role("button", name="Generate new draft").click()
            expect(page.get_by_text("Unsaved draft")).to_be_visible()
            expect(page.get_by_label("FINDINGS")).not_to_be_empty()
            page.get_by_role("button", name="Save draft").click()
            expect(page.locator("[class*='st-key-draft-row-']")).to_have_count(1)
            page.screenshot(path=str(ARTIFACTS / "08-report-draft.png"))
            with rt.db.read_only() as s:
                drafts = s.scalars(select(ReportDraft)).all()
                reports = s.scalar(select(func.count()).select_from(Report))
            assert len(drafts) == 1 and drafts[0].status == "open" and drafts[0].findings.strip()

            # Guideline QA: a drug question gets one line per bullet and its named, demo-marked source,
            # the evidence (snippet and word overlap) only behind the toggle; migraine abstains
            page.get_by_role("link", name="Guideline QA").click()
            expect(page.get_by_role("heading", name="Guideline QA")).to_be_visible()
            question = page.get_by_role("textbox", name="Question")
            question.fill("What is the usual adult dose of isoniazid?")
            page.get_by_role("button", name="Ask").click()
            expect(page.get_by_text("Drug label", exact=True)).to_be_visible()
            expect(page.get_by_text("Retrieval confidence")).to_be_visible()
            expect(page.get_by_text("Isoniazid label — Dosage and Administration", exact=False).first).to_be_visible()
            expect(page.get_by_text("demo", exact=True).first).to_be_visible()  # the demo badge
            expect(page.get_by_text("No answer (ABSTAIN)")).to_have_count(0)
            expect(page.get_by_text("word overlap", exact=False)).to_have_count(0)  # evidence hidden by default
            page.get_by_text("Show the evidence behind each bullet").click()
            expect(page.get_by_text("word overlap", exact=False).first).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "09-guideline-qa.png"))
            question.fill("What is the best treatment for migraine headaches?")
            page.get_by_role("button", name="Ask").click()
            expect(page.get_by_text("No answer (ABSTAIN)")).to_be_visible()
            expect(page.get_by_text("Out of scope", exact=True)).to_be_visible()
            expect(page.get_by_text("Stopped at the router step", exact=False)).to_be_visible()
            expect(page.get_by_text("Isoniazid label — Dosage and Administration", exact=False)).to_have_count(0)
            page.screenshot(path=str(ARTIFACTS / "10-guideline-abstain.png"))

            # Self-reflective RAG: one question with its trace (decision, reranked documents, answers)
            page.get_by_role("link", name="Self-reflective RAG").click()
            expect(page.get_by_role("heading", name="Self-reflective RAG")).to_be_visible()
            page.get_by_role("textbox", name="Question").fill("Which drug treats latent tuberculosis?")
            page.get_by_role("textbox", name="Options (optional)").fill("A: Ceftriaxone\nB: Isoniazid")
            # "always": the scripted critic's P(retrieve) (0.20) is under the adaptive threshold, and the
            # trace under test is the one with retrieved, reranked documents
            page.get_by_role("combobox", name="Retrieval").click()
            page.get_by_role("option", name="always", exact=True).click()
            expect(page.get_by_role("combobox", name="Retrieval")).to_have_value("always")
            page.get_by_role("button", name="Run").click()
            expect(page.get_by_text("Answer: B — Isoniazid")).to_be_visible()
            expect(page.get_by_text("Decision (always):", exact=False)).to_be_visible()
            expect(page.get_by_text("Reranked documents")).to_be_visible()
            # top_k 5 retrieved documents, each with its verdict under the relevance floor
            expect(page.get_by_text(re.compile(r"^\d\. .+ \((kept|dropped)\)$"))).to_have_count(5)
            expect(page.locator(".stPlotlyChart")).to_have_count(2)  # critic scores, expected utility
            expect(page.get_by_text("Kept answer 1", exact=False)).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "11-selfrag-trace.png"))

            # Settings / Status: the backend in use, the index version, a guarded rebuild action
            page.get_by_role("link", name="Settings / Status").click()
            expect(page.get_by_role("heading", name="Settings / Status")).to_be_visible()
            expect(page.get_by_text("openai", exact=True)).to_be_visible()
            expect(page.get_by_text(rt.case_search.index.version).first).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "12-settings-status.png"))
    finally:
        rt.db.dispose()
    assert reports == signed_before  # nothing was signed: AI output stays a draft until a doctor signs
