"""End to end in headless Chromium: a doctor uploads a document, sees it listed by title, and an answer cites it.

Runs ``streamlit run app.py`` over a private copy of the demo database and knowledge bases
(see tests/test_browser.py). Screenshots go to ``test-artifacts/browser/`` (git-ignored).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from core.kb.base import KnowledgeBase
from core.kb.spaces import DocumentSpaces, owner_key
from core.runtime import open_runtime
from core.settings import REPO_ROOT
from core.store.models import User
from tests.conftest import make_settings
from tests.test_app_support import CHROMIUM, CHROMIUM_ARGS, free_port, log_in, start_server, stop_server, wait_healthy

pytestmark = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium"),
]
ARTIFACTS = REPO_ROOT / "test-artifacts" / "browser"
TIMEOUT_MS = 90_000

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


@pytest.fixture()
def kb_app(demo_kb_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    """The app over a private copy of the demo database and knowledge bases: (base URL, root)."""
    shutil.copytree(demo_kb_root / "data", tmp_path / "data")
    shutil.copytree(demo_kb_root / "indexes", tmp_path / "indexes", symlinks=True)
    monkeypatch.setenv("CASEBOOK_KB__PROGRESS", "false")
    port = free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    proc = start_server(tmp_path, port, ARTIFACTS / "streamlit-mydocs.log")
    try:
        wait_healthy(port, proc)
        yield f"http://127.0.0.1:{port}", tmp_path
    finally:
        stop_server(proc)


def test_a_doctor_uploads_a_document_sees_it_by_title_and_an_answer_cites_it(
    kb_app: tuple[str, Path], tmp_path_factory: pytest.TempPathFactory
) -> None:
    from playwright.sync_api import expect, sync_playwright

    base, root = kb_app
    expect.set_options(timeout=TIMEOUT_MS)  # indexing on a loaded 2-core machine takes a while
    upload = tmp_path_factory.mktemp("upload") / "riverside_isolation.md"
    upload.write_text(PROTOCOL)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1800})
        page.set_default_timeout(TIMEOUT_MS)
        try:
            log_in(page, base, "dr.chen")
            page.get_by_role("link", name="Guideline QA").click()
            expect(page.get_by_role("heading", name="Guideline QA")).to_be_visible()
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

            page.get_by_role("tab", name="Ask").click()
            page.get_by_text("Search my documents only").click()
            page.get_by_role("textbox", name="Question").fill(
                "How long do inpatients with pulmonary tuberculosis stay in isolation?"
            )
            page.get_by_role("button", name="Ask").click()
            expect(page.get_by_text("Riverside Demo Hospital TB Isolation Protocol", exact=False).first).to_be_visible()
            expect(page.get_by_text("three consecutive sputum smears", exact=False).first).to_be_visible()
            page.screenshot(path=str(ARTIFACTS / "14-answer-from-my-document.png"))
        except Exception:
            page.screenshot(path=str(ARTIFACTS / "failure-mydocs.png"))
            raise
        finally:
            browser.close()
    settings = make_settings(root)
    rt = open_runtime(settings)
    with rt.db.read_only() as s:
        chen = s.scalars(select(User).where(User.username == "dr.chen")).one()
    docs = DocumentSpaces(KnowledgeBase(settings)).documents(owner_key(chen.id))
    assert [(d.title, d.file_name, d.shared) for d in docs] == [
        ("Riverside Demo Hospital TB Isolation Protocol", "riverside_isolation.md", False)
    ]
