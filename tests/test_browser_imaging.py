"""The image viewer end to end in real headless Chromium, on the demo data's images.

A doctor opens the COPD patient's newest scan, sees its image, changes the window
(preset), scrolls the series, compares with the prior scan (same window, same
relative slice), opens a similar case's thumbnail large, and finds a real
multi-frame DICOM series (the ultrasound cine from pydicom's test files) on an
abdomen scan, and imports a real DICOM file through the Import images page.
A patient sees their own image and no AI reading. Screenshots go to
docs/screenshots/imaging/ (committed: docs/IMAGING.md shows them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.runtime import open_runtime
from core.settings import REPO_ROOT
from tests.browser_support import ARTIFACTS, BROWSER_MARKS, chromium_page, open_patient, served_copy
from tests.conftest import make_settings, scan_of
from tests.imaging_support import packaged
from tests.test_app_support import log_in

pytestmark = BROWSER_MARKS
SHOTS = REPO_ROOT / "docs" / "screenshots" / "imaging"
TIMEOUT_MS = 30_000


@pytest.fixture()
def server(demo_root: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The app over a private copy of the demo database, indexes and image store."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_copy(demo_root, tmp_path, tmp_path / "streamlit.log") as app:
        yield app.base, app.root


def _settle(page: Any) -> None:
    """Wait until Streamlit has replaced every stale element of the last rerun (for clean screenshots)."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "!document.querySelector('[data-stale=\"true\"]') && !document.querySelector('[data-testid=\"stStatusWidget\"]')"
    )


def _shot(page: Any, name: str) -> None:
    _settle(page)
    page.screenshot(path=str(SHOTS / name))


def _src(page: Any, selector: str) -> str:
    return str(page.locator(selector).first.get_attribute("src"))


def test_viewer_window_scroll_prior_and_neighbour(server: tuple[str, Path]) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)  # the first render builds the case index
    base, root = server
    rt = open_runtime(make_settings(root))
    copd = scan_of(rt, "rahul.mehta")
    viewer_img = ".st-key-viewer [data-testid='stImage'] img"
    with chromium_page(1500, TIMEOUT_MS, ARTIFACTS / "imaging-failure.png") as page:
        log_in(page, base, "dr.chen")
        open_patient(page, "mehta")
        page.wait_for_url(f"**scan={copd}**")
        viewer = page.locator(".st-key-viewer")
        expect(viewer.get_by_text("Current · slice 8/16 · W 1500 / L -600")).to_be_visible()
        expect(viewer.get_by_text("Synthetic demo CT volume", exact=False)).to_be_visible()
        expect(viewer.get_by_text("COPD with emphysema")).to_be_visible()  # the AI reading, beside the image
        first = _src(page, viewer_img)
        _shot(page, "01-viewer.png")

        # a window preset: new pixels, the caption names the window
        viewer.get_by_text("bone", exact=True).click()
        expect(viewer.get_by_text("Current · slice 8/16 · W 1800 / L 400")).to_be_visible()
        bone = _src(page, viewer_img)
        assert bone != first
        _shot(page, "02-bone-window.png")

        # scroll the series with the keyboard
        viewer.get_by_role("slider").last.focus()
        for _ in range(4):
            page.keyboard.press("ArrowRight")
        expect(viewer.get_by_text("Current · slice 12/16 · W 1800 / L 400")).to_be_visible()
        assert _src(page, viewer_img) != bone

        # the prior side by side, same window and relative slice
        viewer.get_by_text("Compare with prior").click()
        prior_caption = viewer.get_by_text("Prior 2025-", exact=False)
        expect(prior_caption).to_be_visible()
        expect(prior_caption).to_contain_text("slice 12/16")
        expect(page.locator(viewer_img)).to_have_count(2)
        _shot(page, "03-prior-side-by-side.png")

        # a real multi-frame DICOM series (pydicom's ultrasound cine, attached to the demo lung scans)
        _settle(page)
        viewer.locator("[data-testid='stSelectbox']").click()
        page.get_by_role("option").filter(has_text="Real ultrasound cine").click()
        expect(viewer.get_by_text("Current · slice 15/30 · auto window")).to_be_visible()
        cine = _src(page, viewer_img)
        viewer.get_by_role("slider").last.focus()
        page.keyboard.press("End")
        expect(viewer.get_by_text("Current · slice 30/30 · auto window")).to_be_visible()
        assert _src(page, viewer_img) != cine
        _shot(page, "04-real-dicom-cine.png")

        # a similar case's thumbnail opens large
        thumbs = page.locator(".st-key-neighbour-thumbs")
        expect(thumbs.locator("img").first).to_be_visible()
        assert thumbs.locator("img").count() >= 3
        opened = thumbs.get_by_role("button", name=re.compile(r"^HC-\d+$")).first
        case_id = opened.inner_text().strip()
        opened.click()
        dialog = page.get_by_role("dialog")
        expect(dialog.locator("img").first).to_be_visible()
        expect(dialog.get_by_text(case_id, exact=False).first).to_be_visible()
        _shot(page, "05-neighbour-opened.png")
        page.keyboard.press("Escape")
        expect(dialog).to_have_count(0)

        # a doctor imports a real DICOM file through the page, then opens the new scan
        page.get_by_role("link", name="Import images").click()
        expect(page.get_by_role("heading", name="Import images")).to_be_visible()
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(packaged("CT_small.dcm")))
        expect(page.get_by_text("CT_small.dcm")).to_be_visible()
        page.get_by_role("combobox", name="Anatomy").click()
        page.get_by_role("option", name="abdomen", exact=True).click()
        page.get_by_role("button", name="Import").click()
        expect(page.get_by_text("Imported 1 file(s) as 1 scan(s).")).to_be_visible()
        expect(page.get_by_text("no embedding", exact=False)).to_be_visible()
        _shot(page, "06-import-page.png")
        page.get_by_role("link", name="Open the abdomen scan", exact=False).click()
        expect(page.locator(".st-key-viewer").get_by_text("Current · auto window")).to_be_visible()
        expect(page.get_by_role("combobox", name="Patient")).to_have_value(re.compile(r"^Imported patient [0-9A-F]{6}$"))
        expect(page.locator(".st-key-viewer").get_by_text("Awaiting AI reading")).to_be_visible()

        # a patient sees their own image, no AI reading
        page.get_by_role("button", name="Log out").click()
        log_in(page, base, "rahul.mehta")
        expect(page.locator(viewer_img).first).to_be_visible()
        expect(page.locator(".st-key-viewer").get_by_text("AI reading")).to_have_count(0)
        _shot(page, "07-patient-view.png")
