"""In headless Chromium: two uploaded guidelines that disagree are answered side by side, each document named.

A doctor uploads the two ward handbooks of tests/test_guideline_disagree_page.py through My documents, asks
when to start antiretroviral therapy with "Search my documents only", and sees "Sources differ on ..." with
one column per handbook holding its own value. Then a third upload states an isoniazid dose the curated
label contradicts, and the answer shows it beside the label's own lines, marked as a conflict. The
screenshots go to docs/screenshots/guideline/ (committed: docs/GUIDELINE_QA.md shows them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser_support import ARTIFACTS, BROWSER_MARKS, BROWSER_TIMEOUT_MS, ServedApp, chromium_page, served_copy
from tests.test_browser_mydocs import _open_guideline_qa
from tests.test_guideline_disagree_page import WARD_A, WARD_B

pytestmark = BROWSER_MARKS
SHOTS = Path(__file__).resolve().parents[1] / "docs" / "screenshots" / "guideline"
WARD_C = b"""# Ward C isoniazid note

Demo data, not for clinical use.

## Isoniazid dose

The adult dose of isoniazid is 3000 mg once daily.
"""


@pytest.fixture()
def app(demo_kb_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[ServedApp]:
    """The app over a private copy of the demo database and knowledge bases (extractive Guideline QA)."""
    monkeypatch.setenv("CASEBOOK_KB__PROGRESS", "false")
    monkeypatch.setenv("CASEBOOK_GUIDELINE__WRITER", "extractive")
    with served_copy(demo_kb_root, tmp_path, ARTIFACTS / "streamlit-guideline-sources.log") as served:
        yield served


def test_two_uploaded_guidelines_that_disagree_are_shown_side_by_side(
    app: ServedApp, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from playwright.sync_api import expect

    folder = tmp_path_factory.mktemp("upload")
    files = [folder / "ward-a.md", folder / "ward-b.md"]
    for path, text in zip(files, (WARD_A, WARD_B), strict=True):
        path.write_bytes(text)
    ward_c = folder / "ward-c.md"
    ward_c.write_bytes(WARD_C)
    SHOTS.mkdir(parents=True, exist_ok=True)
    with chromium_page(1400, BROWSER_TIMEOUT_MS, ARTIFACTS / "failure-guideline-sources.png") as page:
        _open_guideline_qa(page, app.base)
        page.get_by_role("tab", name="My documents").click()
        page.locator("input[type='file']").first.set_input_files([str(p) for p in files])
        page.get_by_role("button", name="Add documents").click()
        expect(page.get_by_text("Added 2 document(s) to your documents")).to_be_visible()
        page.get_by_role("tab", name="Ask").click()
        page.get_by_text("Search my documents only").click()
        page.get_by_role("textbox", name="Question").fill("When should antiretroviral therapy be started in TB and HIV?")
        page.get_by_role("button", name="Ask").click()
        expect(page.get_by_text("Sources differ on duration or timing", exact=False)).to_be_visible()
        columns = page.locator("[data-testid='stColumn']").filter(has_text="handbook")
        expect(columns.filter(has_text="Ward A TB and HIV handbook").filter(has_text="2 weeks").first).to_be_visible()
        expect(columns.filter(has_text="Ward B TB and HIV handbook").filter(has_text="8 weeks").first).to_be_visible()
        page.get_by_text("Sources differ on duration or timing", exact=False).scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "01-sources-differ.png"))

        # an upload's dose that contradicts the curated label: beside the label's own lines, never the answer
        page.get_by_role("tab", name="My documents").click()
        page.locator("input[type='file']").first.set_input_files(str(ward_c))
        page.get_by_role("button", name="Add documents").click()
        expect(page.get_by_text("Added 1 document(s) to your documents")).to_be_visible()
        page.get_by_role("tab", name="Ask").click()
        page.get_by_text("Search my documents only").click()  # off: the curated label is searched too
        page.get_by_role("textbox", name="Question").fill("What is the adult dose of isoniazid?")
        page.get_by_role("button", name="Ask").click()
        conflict = page.get_by_text("Conflict, not an answer", exact=False)
        expect(conflict).to_be_visible()
        expect(page.get_by_text("Sources differ on the dose of isoniazid", exact=False)).to_be_visible()
        expect(page.get_by_text("Isoniazid label", exact=False).first).to_be_visible()
        conflict.scroll_into_view_if_needed()
        page.screenshot(path=str(SHOTS / "02-label-conflict.png"))
