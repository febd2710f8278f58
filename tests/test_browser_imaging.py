"""The image viewer end to end in real headless Chromium, on the demo data's images.

A doctor opens the COPD patient's newest scan, sees its image, changes the window
(preset) and scrolls the series in the viewer component, compares with the prior scan in the
second pane (window and relative slice linked), opens a similar case from its card beside the current
image (its age band, sex, date and what drives the similarity on the card), finds a real
multi-frame DICOM series (the ultrasound cine from pydicom's test files) on an
abdomen scan, and imports a real DICOM file through the Import images page (it has similar cases at once).
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
from tests.browser_support import (
    ARTIFACTS,
    BROWSER_MARKS,
    BROWSER_TIMEOUT_MS,
    chromium_page,
    open_patient,
    served_copy,
    wait_idle,
)
from tests.conftest import make_settings, scan_of
from tests.imaging_support import packaged
from tests.test_app_support import log_in

pytestmark = BROWSER_MARKS
SHOTS = REPO_ROOT / "docs" / "screenshots" / "imaging"
TIMEOUT_MS = BROWSER_TIMEOUT_MS  # the shared ceiling (CASEBOOK_TEST_BROWSER_TIMEOUT_S); tests wait for state


@pytest.fixture()
def server(demo_root: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """The app over a private copy of the demo database, indexes and image store."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_copy(demo_root, tmp_path, tmp_path / "streamlit.log") as app:
        yield app.base, app.root


def _settle(page: Any) -> None:
    """Wait until Streamlit has replaced every stale element of the last rerun (for clean screenshots)."""
    page.wait_for_timeout(300)
    wait_idle(page)


def _shot(page: Any, name: str) -> None:
    _settle(page)
    page.screenshot(path=str(SHOTS / name))


def _viewer(page: Any, showing: str = "", *, closed: bool = False) -> Any:
    """The viewer component's frame, once it has shown its images (its panes' key containing ``showing``;
    with ``closed``, once it shows one pane): the component's own done state."""
    frame = page.frame_locator(".st-key-viewer iframe")
    ready = f"body[data-ready*='{showing}']" if showing else "body[data-ready]"
    if closed:
        ready = "body[data-ready]:not([data-ready*='|'])"
    frame.locator(ready).wait_for(timeout=TIMEOUT_MS)
    return frame


def _centre(locator: Any) -> tuple[float, float, float, float]:
    box = locator.bounding_box()
    assert box is not None
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, box["width"], box["height"]


def _drag(page: Any, x0: float, y0: float, x1: float, y1: float, button: str = "left") -> None:
    page.mouse.move(x0, y0)
    page.mouse.down(button=button)
    page.mouse.move(x1, y1, steps=8)
    page.mouse.up(button=button)


def _place(pane: Any, measured: Any) -> dict[str, str | None]:
    """Where the doctor is in a pane (slice, window, zoom, pan) and the measurements listed under the image."""
    place: dict[str, str | None] = {a: pane.get_attribute(f"data-{a}") for a in ("slice", "window", "zoom", "pan")}
    place["measurements"] = measured.inner_text()
    return place


def test_viewer_window_scroll_prior_and_neighbour(server: tuple[str, Path]) -> None:
    from playwright.sync_api import expect

    base, root = server
    rt = open_runtime(make_settings(root))
    copd = scan_of(rt, "rahul.mehta")
    with chromium_page(1500, TIMEOUT_MS, ARTIFACTS / "imaging-failure.png") as page:
        log_in(page, base, "dr.chen")
        open_patient(page, "mehta")
        page.wait_for_url(f"**scan={copd}**")
        frame = _viewer(page)
        current = frame.locator("[data-testid='viewport-current']")
        expect(current).to_have_attribute("data-slice", "9")
        expect(current).to_have_attribute("data-window", "W 1500 / L -600")
        expect(page.locator(".st-key-viewer").get_by_text("Synthetic demo CT volume", exact=False).first).to_be_visible()
        expect(page.get_by_text("COPD with emphysema").first).to_be_visible()  # the AI reading, beside the image
        _shot(page, "01-viewer.png")

        # a window preset, in the browser (no rerun)
        frame.get_by_role("button", name="bone window", exact=False).click()
        expect(current).to_have_attribute("data-window", "W 1800 / L 400")
        _shot(page, "02-bone-window.png")

        # scroll the series with the keyboard on the focused image
        current.focus()
        for _ in range(4):
            page.keyboard.press("ArrowDown")
        expect(current).to_have_attribute("data-slice", "13")
        # the doctor's place: an HU probe reading, zoom (right drag) and pan (middle drag)
        x, y, _, h = _centre(current)
        frame.get_by_role("button", name="HU probe (left drag)", exact=False).click()
        page.mouse.click(x, y)
        measured = frame.locator("#measurements")
        expect(measured).to_contain_text(re.compile(r"Point -?\d+ HU"))
        _drag(page, x, y, x, y - h / 10, "right")
        expect(current).not_to_have_attribute("data-zoom", "1.000")
        _drag(page, x, y, x + 30, y + 20, "middle")
        expect(current).not_to_have_attribute("data-pan", "0,0")
        _settle(page)  # the measurement's own rerun is over
        place = _place(current, measured)

        # the prior side by side: its own pane, scrolling and window linked
        page.get_by_role("button", name="Compare with prior", exact=False).click()
        frame = _viewer(page, "|beside:")
        beside = frame.locator("[data-testid='viewport-beside']")
        current = frame.locator("[data-testid='viewport-current']")
        measured = frame.locator("#measurements")
        # the current pane keeps its slice, window, zoom, pan and measurement; the prior opens on its window and slice
        assert _place(current, measured) == place
        assert beside.get_attribute("data-window") == "W 1800 / L 400"
        assert beside.get_attribute("data-slice") == "13"
        # a window dragged in the prior applies to the current image too
        frame.get_by_role("button", name="Window (left drag)", exact=False).click()
        bx, by, _, _ = _centre(beside)
        _drag(page, bx, by, bx + 60, by + 40)
        expect(beside).not_to_have_attribute("data-window", "W 1800 / L 400")
        dragged = beside.get_attribute("data-window")
        expect(current).to_have_attribute("data-window", dragged or "")
        frame.get_by_role("button", name="bone window", exact=False).click()
        expect(beside).to_have_attribute("data-window", "W 1800 / L 400")
        current = frame.locator("[data-testid='viewport-current']")
        current.focus()
        page.keyboard.press("End")
        expect(current).to_have_attribute("data-slice", "16")
        expect(beside).to_have_attribute("data-slice", "16")
        _shot(page, "03-prior-side-by-side.png")
        place = _place(current, measured)
        page.get_by_role("button", name="Close prior scan").click()
        frame = _viewer(page, "", closed=True)
        expect(frame.locator("[data-testid='viewport-beside']")).to_have_count(0)
        # closing the prior keeps the current pane's place too
        assert _place(frame.locator("[data-testid='viewport-current']"), frame.locator("#measurements")) == place
        expect(frame.locator("#measurements")).to_contain_text(re.compile(r"Point -?\d+ HU"))

        # a similar case's card says who and when, and opens it beside the current image in the same window
        card = page.locator("[class*='st-key-case-HC-']").first
        expect(card).to_contain_text("imaged 20")  # the card's age band, sex, date and region line
        expect(card).to_contain_text("Similar in")
        card_id = re.search(r"HC-\d+", card.inner_text())
        assert card_id is not None
        card.get_by_role("button", name="Open beside").click()
        frame = _viewer(page, "|beside:")
        beside = frame.locator("[data-testid='viewport-beside']")
        current = frame.locator("[data-testid='viewport-current']")
        expect(beside).to_be_visible()
        expect(frame.get_by_text(f"Similar case {card_id.group(0)}")).to_be_visible()
        assert beside.get_attribute("data-window") == "W 1800 / L 400"  # the current pane's (bone) window
        frame.get_by_role("button", name="lung window", exact=False).click()  # one window for both
        expect(beside).to_have_attribute("data-window", "W 1500 / L -600")
        expect(current).to_have_attribute("data-window", "W 1500 / L -600")
        page.locator(".st-key-viewer").scroll_into_view_if_needed()
        _shot(page, "05-similar-case-beside.png")
        page.get_by_role("button", name="Close similar case", exact=False).click()
        expect(page.frame_locator(".st-key-viewer iframe").locator("[data-testid='viewport-beside']")).to_have_count(0)

        # a real multi-frame DICOM series (pydicom's ultrasound cine, attached to the demo lung scans)
        _settle(page)
        page.locator(".st-key-viewer [data-testid='stSelectbox']").click()
        page.get_by_role("option").filter(has_text="Real ultrasound cine").click()
        frame = _viewer(page)
        current = frame.locator("[data-testid='viewport-current']")
        expect(current).to_have_attribute("data-slice", "15")
        expect(current).to_have_attribute("aria-label", re.compile("of 30"))
        current.focus()
        page.keyboard.press("End")
        expect(current).to_have_attribute("data-slice", "30")
        _shot(page, "04-real-dicom-cine.png")

        # a similar case's thumbnail opens beside the current image
        thumbs = page.locator(".st-key-neighbour-thumbs")
        expect(thumbs.locator("img").first).to_be_visible()
        assert thumbs.locator("img").count() >= 3
        opened = thumbs.get_by_role("button", name=re.compile(r"^HC-\d+$")).first
        case_id = opened.inner_text().strip()
        opened.click()
        frame = page.frame_locator(".st-key-viewer iframe")
        expect(frame.locator("[data-testid='viewport-beside']")).to_be_visible()
        expect(frame.get_by_text(f"Similar case {case_id}")).to_be_visible()
        page.locator(".st-key-viewer").scroll_into_view_if_needed()
        _shot(page, "05-neighbour-opened.png")

        # a doctor imports a real DICOM file through the page, then opens the new scan
        page.get_by_role("link", name="Import images").click()
        expect(page.get_by_role("heading", name="Import images")).to_be_visible()
        page.locator("[data-testid='stFileUploaderDropzoneInput']").set_input_files(str(packaged("CT_small.dcm")))
        expect(page.get_by_text("CT_small.dcm")).to_be_visible()
        page.get_by_role("combobox", name="Anatomy").click()
        page.get_by_role("option", name="abdomen", exact=True).click()
        page.get_by_role("button", name="Import").click()
        expect(page.get_by_text("Imported 1 file(s) as 1 scan(s).")).to_be_visible()
        expect(page.get_by_text("similar cases are available", exact=False)).to_be_visible()
        _shot(page, "06-import-page.png")
        page.get_by_role("link", name="Open the abdomen scan", exact=False).click()
        _viewer(page)
        expect(page.get_by_role("combobox", name="Patient")).to_have_value(re.compile(r"^Imported patient [0-9A-F]{6}$"))
        expect(page.get_by_text("Awaiting AI reading").first).to_be_visible()
        expect(page.locator("[class*='st-key-case-HC-']").first).to_be_visible()  # look-alikes at once, from pixels

        # a patient sees their own image, no AI reading
        page.get_by_role("button", name="Log out").click()
        expect(page.get_by_label("Username")).to_be_visible()  # the revoking rerun finished before we navigate
        log_in(page, base, "rahul.mehta")
        frame = _viewer(page)
        expect(frame.locator("[data-testid='viewport-current']")).to_be_visible()
        expect(page.get_by_text("AI reading")).to_have_count(0)
        expect(page.get_by_role("button", name="Compare with prior", exact=False)).to_have_count(0)
        _shot(page, "07-patient-view.png")
