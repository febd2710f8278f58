"""Drafts that survive a reload, in real headless Chromium (issue 27, item 6).

A doctor generates the COPD draft, edits IMPRESSION and leaves the box (Streamlit commits the
text, the editor autosaves it as the doctor's unsigned draft), presses F5 and gets the edit
back with the "restored" note; the database holds one open draft of theirs and no report.
Then they type without leaving the box and reload: the browser's leave warning (beforeunload)
comes up first. The screenshot of the restored draft goes to docs/screenshots/ask/.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from core.runtime import open_runtime
from core.settings import REPO_ROOT
from core.store.models import Report, ReportDraft, User
from tests.browser_support import (
    ARTIFACTS,
    BROWSER_MARKS,
    ServedApp,
    chromium_page,
    open_patient,
    served_copy,
    wait_idle,
)
from tests.conftest import make_settings, scan_of
from tests.test_app_support import log_in

pytestmark = BROWSER_MARKS
SHOTS = REPO_ROOT / "docs" / "screenshots" / "ask"
EDIT = "COPD with emphysema; the doctor's own wording, kept across a reload."


@pytest.fixture()
def app(demo_root: Path, tmp_path: Path) -> Iterator[ServedApp]:
    """The app over a private copy of the demo database (no language model: the template writes the draft)."""
    with served_copy(demo_root, tmp_path, ARTIFACTS / "streamlit-draft-restore.log") as served:
        yield served


def test_an_edited_draft_is_back_after_f5_with_a_restored_note(app: ServedApp) -> None:
    from playwright.sync_api import Dialog, expect

    rt = open_runtime(make_settings(app.root))
    scan = scan_of(rt, "rahul.mehta")
    try:
        with chromium_page(2200, failure=ARTIFACTS / "draft-restore-failure.png") as page:
            log_in(page, app.base, "dr.chen")
            open_patient(page, "mehta")
            page.get_by_role("button", name="Generate draft").click()
            impression = page.get_by_role("textbox", name="IMPRESSION")
            expect(impression).to_have_value(re.compile(r"\S"))
            wait_idle(page)
            impression.fill(EDIT)
            impression.blur()  # leaving the box commits it; the commit autosaves
            expect(
                page.get_by_text(re.compile(r"Draft #\d+ · autosaved \d\d:\d\d:\d\d UTC, not signed"))
            ).to_be_visible()
            with rt.db.read_only() as s:
                doctor = s.scalars(select(User.id).where(User.username == "dr.chen")).one()
                drafts = s.scalars(select(ReportDraft).where(ReportDraft.scan_id == scan)).all()
            assert [(d.author_id, d.status, d.impression) for d in drafts] == [(doctor, "open", EDIT)]

            page.reload()  # F5: a new Streamlit session
            note = page.get_by_text(re.compile(rf"Restored your unsigned draft #{drafts[0].id}, last saved"))
            expect(note).to_be_visible()
            expect(page.get_by_role("textbox", name="IMPRESSION")).to_have_value(EDIT)
            wait_idle(page)
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.mouse.move(0, 0)
            page.locator(".st-key-draft").screenshot(path=str(SHOTS / "02-draft-restored-after-f5.png"))

            # typing without leaving the box: the reload asks first
            seen: list[str] = []

            def answer(dialog: Dialog) -> None:
                seen.append(dialog.type)
                dialog.accept()

            page.on("dialog", answer)
            box = page.get_by_role("textbox", name="IMPRESSION")
            box.click()  # a real click: browsers show the leave warning only after the person used the page
            page.keyboard.type(" Not yet committed.")
            page.reload()
            expect(page.get_by_text(re.compile(r"Restored your unsigned draft"))).to_be_visible()
            assert seen == ["beforeunload"]
            with rt.db.read_only() as s:
                assert s.scalars(select(Report).where(Report.scan_id == scan)).all() == []  # nothing signed
                assert len(s.scalars(select(ReportDraft).where(ReportDraft.scan_id == scan)).all()) == 1
    finally:
        rt.db.dispose()
