"""End to end in headless Chromium: a doctor uploads a document, sees it listed by title, and an answer cites it.

Then the demo content is made stale and rebuilt by ``core setup``'s KB step (``make run`` runs it before the app):
the demo KBs are rebuilt, the document survives, and after a restart it still answers.
Runs ``streamlit run app.py`` over a private copy of the demo database and knowledge bases
(see tests/test_browser.py). Screenshots go to ``test-artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from core.artifacts import MANIFEST
from core.audit import UPLOAD
from core.kb import ensure_demo_kb
from core.kb.base import KnowledgeBase
from core.kb.index.builder import kb_link
from core.kb.spaces import DocumentSpaces, owner_key
from core.runtime import open_runtime
from core.store.models import AuditLog, User
from tests.browser_support import (
    ARTIFACTS,
    BROWSER_MARKS,
    BROWSER_TIMEOUT_MS,
    ServedApp,
    chromium_page,
    served_copy,
    wait_idle,
)
from tests.conftest import make_settings
from tests.test_app_support import log_in

pytestmark = BROWSER_MARKS
TIMEOUT_MS = BROWSER_TIMEOUT_MS  # the shared ceiling (CASEBOOK_TEST_BROWSER_TIMEOUT_S); tests wait for state

PROTOCOL = """---
title: Riverside Demo Hospital TB Isolation Protocol
organisation: Riverside Demo Hospital (fictional)
year: 2026
---

# Riverside Demo Hospital TB Isolation Protocol

DEMO DATA, NOT FOR CLINICAL USE.

## Isolation of inpatients with pulmonary tuberculosis

At Riverside Demo Hospital, adults admitted with pulmonary tuberculosis stay in a negative-pressure single
room until three consecutive sputum smears, collected on three different days, are negative for acid-fast
bacilli. Visitors to the isolation room wear a fitted particulate respirator.

## Discharge of patients with tuberculosis

Patients may go home before the smears turn negative when nobody in the household is a young child or
immunocompromised and a treatment supporter has been named.
"""

CORRECTED = "Riverside Demo Hospital TB Isolation Protocol, 2nd revision"  # contains the original title


@pytest.fixture()
def kb_app(demo_kb_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedApp]:
    """The app over a private copy of the demo database and knowledge bases."""
    monkeypatch.setenv("CASEBOOK_KB__PROGRESS", "false")
    with served_copy(demo_kb_root, tmp_path, ARTIFACTS / "streamlit-mydocs.log") as app:
        yield app


def _open_guideline_qa(page: object, base: str) -> None:
    """Log in as dr.chen, wait for the worklist (a doctor's landing page) to settle, then open Guideline QA."""
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    log_in(page, base, "dr.chen")
    expect(page.get_by_role("heading", name="Worklist")).to_be_visible()
    wait_idle(page)  # a link clicked during the log-in rerun is lost
    page.get_by_role("link", name="Guideline QA").click()
    expect(page.get_by_role("heading", name="Guideline QA")).to_be_visible()
    wait_idle(page)


def _ask_my_documents(page: object, shot: str) -> None:
    """Ask the isolation question with "Search my documents only" and check the answer cites the upload."""
    from playwright.sync_api import Page, expect

    assert isinstance(page, Page)
    page.get_by_role("tab", name="Ask").click()
    page.get_by_text("Search my documents only").click()
    page.get_by_role("textbox", name="Question").fill(
        "How long do inpatients with pulmonary tuberculosis stay in isolation?"
    )
    page.get_by_role("button", name="Ask").click()
    expect(page.get_by_text("Riverside Demo Hospital TB Isolation Protocol", exact=False).first).to_be_visible()
    expect(page.get_by_text("three consecutive sputum smears", exact=False).first).to_be_visible()
    expect(page.get_by_text("Your documents").first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / shot))


def _make_demo_stale(root: Path, kb: str) -> str:
    """Change the demo fingerprint in ``kb``'s manifest (as a code or source change would); the old value."""
    folder = kb_link(root / "indexes", kb).resolve()
    assert folder.is_relative_to(root)  # a private copy, never the shared fixture
    manifest = json.loads((folder / MANIFEST).read_text())
    old = str(manifest["demo_fingerprint"])
    manifest["demo_fingerprint"] = "stale"
    (folder / MANIFEST).write_text(json.dumps(manifest))
    return old


def test_a_doctor_uploads_a_document_sees_it_by_title_and_an_answer_cites_it(
    kb_app: ServedApp, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from playwright.sync_api import expect

    base, root = kb_app.base, kb_app.root
    upload = tmp_path_factory.mktemp("upload") / "riverside_isolation.md"
    upload.write_text(PROTOCOL)
    with chromium_page(1800, TIMEOUT_MS, ARTIFACTS / "failure-mydocs.png") as page:
        _open_guideline_qa(page, base)
        page.get_by_role("tab", name="My documents").click()
        expect(page.get_by_text("You have no documents yet")).to_be_visible()
        expect(page.get_by_text("20 MB", exact=False).first).to_be_visible()
        expect(page.get_by_text("200MB")).to_have_count(0)  # the uploader states the real limit
        page.locator("input[type='file']").first.set_input_files(str(upload))
        page.get_by_role("button", name="Add documents").click()
        expect(page.get_by_text("Added 1 document(s) to your documents")).to_be_visible()
        expect(page.get_by_text("You have no documents yet")).to_have_count(0)  # the list refreshed
        grid = page.locator("[data-testid='stDataFrame']").first
        expect(grid).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "13-my-documents.png"))
        assert "/tmp" not in page.content() and "casebook-upload" not in page.content()

        # issue 24 item 5: the doctor sees the title, issuer and year read from the file and corrects the title
        page.get_by_text("Title, issuer and year").click()
        expect(page.get_by_role("textbox", name="Issuer")).to_have_value("Riverside Demo Hospital (fictional)")
        page.get_by_role("textbox", name="Title").fill(CORRECTED)
        page.get_by_role("button", name="Save correction").click()
        expect(page.get_by_text("Answers now cite the corrected title")).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "13b-my-documents-corrected.png"))

        _ask_my_documents(page, "14-answer-from-my-document.png")
        expect(page.get_by_text("2nd revision", exact=False).first).to_be_visible()  # the bullet cites the correction

        # `make run`: `core setup` rebuilds the stale demo KBs (its step core.kb:ensure_demo_kb), the app restarts
        old = _make_demo_stale(root, "guidelines")
        ensure_demo_kb(make_settings(root, kb={"progress": False}))
        rebuilt = kb_link(root / "indexes", "guidelines").resolve()
        assert json.loads((rebuilt / MANIFEST).read_text())["demo_fingerprint"] == old  # rebuilt, not kept
        kb_app.restart(ARTIFACTS / "streamlit-mydocs-2.log")
        browser = page.context.browser
        assert browser is not None
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.set_default_timeout(TIMEOUT_MS)
        _open_guideline_qa(page, base)
        page.get_by_role("tab", name="My documents").click()
        expect(page.locator("[data-testid='stDataFrame']").first).to_be_visible()  # the list survived
        expect(page.get_by_text("Riverside Demo Hospital TB Isolation Protocol")).not_to_have_count(0)
        expect(page.get_by_text("You have no documents yet")).to_have_count(0)
        _ask_my_documents(page, "15-answer-after-setup-and-restart.png")
    settings = make_settings(root)
    rt = open_runtime(settings)
    with rt.db.read_only() as s:
        chen = s.scalars(select(User).where(User.username == "dr.chen")).one()
    docs = DocumentSpaces(KnowledgeBase(settings)).documents(owner_key(chen.id))
    assert [(d.title, d.file_name, d.shared) for d in docs] == [
        (CORRECTED, "riverside_isolation.md", False)
    ]  # the corrected title survived the demo rebuild and the restart
    with rt.db.read_only() as s:
        rows = s.scalars(select(AuditLog).where(AuditLog.action == UPLOAD)).all()
    assert [(r.actor_id, r.scan_ref, r.outcome, r.detail["docs"]) for r in rows] == [
        (chen.id, f"user.{owner_key(chen.id)}", "ok", 1)
    ]  # who added how much where; no file name
    assert "riverside" not in json.dumps([r.detail for r in rows])
