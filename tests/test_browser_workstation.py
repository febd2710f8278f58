"""The reading workstation end to end in headless Chromium (issue 29's "done when"), on real DICOM.

A doctor lands on the worklist (the tension pneumothorax first), opens it, reads a real CT
series in the viewer (wheel scroll, drag window, pan, a length and an HU value, cine), opens
a similar case beside it, writes the structured pneumothorax report with its critical-result
record, signs it with the attestation and amends it. pydicom ships no multi-slice CT: the
series is its real 512x512 head CT slice (693_J2KI.dcm) as 24 shifted slices
(:func:`tests.imaging_support.real_ct_series`), attached to the demo pneumothorax scan in
the test's private copy. axe-core (npm, installed by ``make browser-deps``) checks the page.
Screenshots go to docs/screenshots/workstation/.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pydicom
import pytest
from sqlalchemy import func, select, update

from core.imaging.importer import import_images
from core.reports import AI_MARK
from core.runtime import open_runtime
from core.settings import REPO_ROOT
from core.store.models import AuditLog, ImageSeries, Report, ReportDraft
from tests.browser_support import (
    ARTIFACTS,
    BROWSER_MARKS,
    BROWSER_TIMEOUT_MS,
    ask_ai,
    chromium_page,
    confirm_ai_statements,
    served_copy,
)
from tests.conftest import make_settings, scan_of
from tests.imaging_support import real_ct_series
from tests.test_app_support import log_in

pytestmark = BROWSER_MARKS
SHOTS = REPO_ROOT / "docs" / "screenshots" / "workstation"
AXE = REPO_ROOT / "components" / "viewer" / "frontend" / "node_modules" / "axe-core" / "axe.min.js"
TIMEOUT_MS = BROWSER_TIMEOUT_MS  # the shared ceiling; the test waits for the page's own state


@pytest.fixture()
def server(demo_root: Path, tmp_path: Path) -> Iterator[tuple[str, Path, str]]:  # base URL, root, scan id
    """The app over a private demo copy whose tension-pneumothorax scan also holds a real CT series."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    with served_copy(demo_root, tmp_path, tmp_path / "streamlit.log") as app:
        rt = open_runtime(make_settings(app.root))
        khan = scan_of(rt, "imran.khan")
        summary = import_images(rt.settings, rt.db, [real_ct_series(tmp_path / "ct")], anatomy="lung")
        with rt.db.session() as s:
            s.execute(update(ImageSeries).where(ImageSeries.scan_id == summary.scans[0].scan_id).values(scan_id=khan))
        rt.db.dispose()
        yield app.base, app.root, khan


def _settle(page: Any) -> None:
    page.wait_for_function(
        "!document.querySelector('[data-stale=\"true\"]') && !document.querySelector('[data-testid=\"stStatusWidget\"]')"
    )


def _shot(page: Any, name: str) -> None:
    _settle(page)
    page.screenshot(path=str(SHOTS / name))


def _viewer(page: Any, showing: str = "") -> Any:
    """The viewer's frame once it shows its panes (their key containing ``showing``): the component's done state."""
    frame = page.frame_locator(".st-key-viewer iframe")
    frame.locator(f"body[data-ready*='{showing}']" if showing else "body[data-ready]").wait_for(timeout=TIMEOUT_MS)
    return frame


def _place(pane: Any, measured: Any) -> dict[str, str | None]:
    """Where the doctor is in a pane (slice, window, zoom, pan) and the measurements listed under the image."""
    place: dict[str, str | None] = {a: pane.get_attribute(f"data-{a}") for a in ("slice", "window", "zoom", "pan")}
    place["measurements"] = measured.inner_text()
    return place


def _centre(locator: Any) -> tuple[float, float, float, float]:
    box = locator.bounding_box()
    assert box is not None
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, box["width"], box["height"]


def _drag(page: Any, x0: float, y0: float, x1: float, y1: float, button: str = "left") -> None:
    page.mouse.move(x0, y0)
    page.mouse.down(button=button)
    page.mouse.move(x1, y1, steps=8)
    page.mouse.up(button=button)


def _hu(series: Path, frame: int) -> np.ndarray:
    """Slice ``frame`` of the imported series as pydicom reads it, in HU: stored * RescaleSlope + RescaleIntercept."""
    ds = pydicom.dcmread(series / f"ct{frame:03d}.dcm")
    return ds.pixel_array.astype(np.float64) * float(ds.RescaleSlope) + float(ds.RescaleIntercept)


def _focus(page: Any) -> dict[str, Any]:
    """What has the keyboard focus in the page: tag, placeholder, text, and whether it is in a citation group."""
    return dict(page.evaluate(
        "() => { const e = document.activeElement; return {tag: e?.tagName || '', text: (e?.innerText || '').trim(),"
        " placeholder: e?.getAttribute('placeholder') || '', group: !!e?.closest(\"[class*='st-key-chips-']\")}; }"
    ))  # fmt: skip


def test_read_report_critical_result_sign_and_amend(server: tuple[str, Path, str]) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    base, root, khan = server
    series = root / "ct"  # the imported slices (the fixture's real_ct_series): the numpy reference reads them
    with chromium_page(768, TIMEOUT_MS, ARTIFACTS / "workstation-failure.png") as page:
        page.set_viewport_size({"width": 1366, "height": 768})
        # the worklist: critical AI readings first
        log_in(page, base, "dr.chen")
        expect(page.get_by_role("heading", name="Worklist")).to_be_visible()
        first = page.locator("[class*='st-key-wl-scan_']").first
        expect(first).to_contain_text("Imran Khan")
        expect(first).to_contain_text("Critical")
        _shot(page, "01-worklist.png")
        page.get_by_role("link", name="Open Imran Khan").click()
        page.wait_for_url(f"**scan={khan}**")
        expect(page.get_by_role("heading", name="Scan Review")).to_be_visible()
        _viewer(page)

        # the real CT series: every slice in the browser, orientation markers from its header
        _settle(page)
        page.locator(".st-key-viewer [data-testid='stSelectbox']").click()
        page.get_by_role("option", name="CT series 1").click()
        frame = page.frame_locator(".st-key-viewer iframe")
        vp = frame.locator("[data-testid='viewport-current']")
        expect(vp).to_have_attribute("aria-label", re.compile(r"slice 13 of 24"))
        expect(frame.locator(".ov-left")).to_have_text("R")
        expect(frame.locator(".ov-right")).to_have_text("L")
        expect(frame.locator(".ov-top")).to_have_text("A")
        x, y, w, h = _centre(vp)
        assert y + h / 2 <= 768, "the image is above the fold at 1366x768"
        _shot(page, "02-ct-in-viewer.png")

        # wheel scroll: three notches, three slices
        page.mouse.move(x, y)
        for _ in range(3):
            page.mouse.wheel(0, 100)
        expect(vp).to_have_attribute("data-slice", "16")
        # drag window/level (the left button's default tool)
        before = vp.get_attribute("data-window")
        _drag(page, x, y, x + 60, y + 40)
        expect(vp).not_to_have_attribute("data-window", before or "")
        # pan with the Pan tool
        frame.get_by_role("button", name="Pan (left drag)", exact=False).click()
        _drag(page, x, y, x + 50, y + 30)
        expect(vp).not_to_have_attribute("data-pan", "0,0")
        # a length and an HU value
        frame.get_by_role("button", name="Length (left drag)", exact=False).click()
        _drag(page, x - w / 5, y, x + w / 5, y)
        measured = frame.locator("#measurements")
        expect(measured).to_contain_text(re.compile(r"Length \d+\.\d mm"))
        frame.get_by_role("button", name="HU probe (left drag)", exact=False).click()
        page.mouse.click(x, y + h / 6)
        expect(measured).to_contain_text(re.compile(r"Point -?\d+ HU"))
        # the HU value is the stored value of the DICOM under the probe: stored * slope + intercept (numpy)
        probe = vp.evaluate(
            "() => casebookViewer.annotations().filter(a => a.tool === 'Probe')"
            ".map(a => { const [t, st] = Object.entries(a.stats)[0]; return [t, st.index, st.value]; })"
        )
        (target, index, value), shown_slice = probe[0], int(vp.get_attribute("data-slice") or 0)
        k = int(target.rsplit(":", 1)[1])
        assert k == shown_slice - 1 and value == _hu(series, k)[index[1], index[0]]
        # an ROI: Cornerstone's mean, SD, min, max and area against numpy on pydicom's pixels under the rectangle
        frame.get_by_role("button", name="ROI (left drag)", exact=False).click()
        _drag(page, x - w / 8, y - h / 8, x + w / 9, y + h / 10)
        expect(measured).to_contain_text(re.compile(r"ROI mean -?\d+\.\d ± \d+\.\d HU, min -?\d+ max -?\d+, area"))
        # the component's own done state: statistics computed for the rectangle's final corners, and listed
        viewer_frame = measured.element_handle().owner_frame()
        assert viewer_frame is not None
        viewer_frame.wait_for_function(
            "() => { const r = casebookViewer.rois(); return r.length === 1 && !r[0].stale"
            " && document.getElementById('measurements').dataset.rois === JSON.stringify(r); }"
        )
        (roi,) = json.loads(measured.get_attribute("data-rois") or "[]")
        (ci0, cj0), (ci1, cj1) = roi["corners"]  # continuous pixel indices: an integer is a pixel's centre
        i0, i1 = int(np.ceil(min(ci0, ci1))), int(np.floor(max(ci0, ci1)))  # the pixels whose centres lie inside
        j0, j1 = int(np.ceil(min(cj0, cj1))), int(np.floor(max(cj0, cj1)))
        pixels = _hu(series, roi["frame"])[j0 : j1 + 1, i0 : i1 + 1]
        row_mm, col_mm = (float(v) for v in pydicom.dcmread(series / "ct000.dcm").PixelSpacing)
        assert roi["frame"] == shown_slice - 1 and pixels.size >= 100 and roi["unit"] == "HU"
        assert (roi["min"], roi["max"]) == (pixels.min(), pixels.max())
        assert roi["mean"] == pytest.approx(pixels.mean(), rel=1e-9)
        assert roi["sd"] == pytest.approx(pixels.std(), rel=1e-9)  # the population SD (numpy's default, ddof=0)
        assert roi["area"] == pytest.approx(abs(ci1 - ci0) * col_mm * abs(cj1 - cj0) * row_mm, rel=1e-6)  # mm²
        expect(measured).to_contain_text(
            f"ROI mean {pixels.mean():.1f} ± {pixels.std():.1f} HU, min {pixels.min():.0f} max {pixels.max():.0f}, "
            f"area {roi['area']:.1f} mm"
        )
        print(f"ROI {pixels.shape} px on slice {roi['frame'] + 1}: browser {roi}; numpy mean {pixels.mean():.6f} "
              f"sd {pixels.std():.6f} min {pixels.min()} max {pixels.max()}")  # fmt: skip
        _shot(page, "03-measured.png")
        # cine: the slice moves by itself, then stops
        shown = vp.get_attribute("data-slice")
        frame.get_by_role("button", name="Play or stop cine", exact=False).click()
        expect(frame.locator("body")).to_have_attribute("data-cine", "playing")
        expect(vp).not_to_have_attribute("data-slice", shown or "")
        frame.get_by_role("button", name="Play or stop cine", exact=False).click()
        expect(frame.locator("body")).to_have_attribute("data-cine", "stopped")

        # Ask AI: a cited answer, whose citations are one keyboard group (one "Sources" tab stop)
        ask_ai(page, "how many of the similar pts died?")
        sources = page.locator("[class*='st-key-chips-']").first
        expect(sources).to_contain_text(re.compile(r"Sources: HC-\d+"))
        _settle(page)
        # the chat box is within three Tab presses of the image, with the cited answer on the page
        vp.focus()
        presses = 0
        while presses < 3:
            page.keyboard.press("Tab")
            presses += 1
            if _focus(page)["placeholder"].startswith("Ask about"):
                break
        else:
            pytest.fail(f"the chat box is more than three Tab presses from the image (focus on {_focus(page)})")
        print(f"Tab presses from the image to the chat box: {presses}")
        # one Tab on from the box is the answer's Sources; the next leaves the group, whatever it cites
        page.keyboard.press("Tab")
        here = _focus(page)
        assert here["group"] and here["tag"] == "SUMMARY" and "Sources: HC-" in here["text"], here
        page.keyboard.press("Tab")
        assert not _focus(page)["group"], "one tab stop for the whole group"
        page.keyboard.press("Shift+Tab")
        page.keyboard.press("Enter")  # opens the disclosure: its chips are reachable inside it
        page.wait_for_function(  # the disclosure's own state: open, its opening animation over
            "() => { const d = document.activeElement?.closest('details');"
            " return !!d && d.open && d.getAnimations({subtree: true}).length === 0; }"
        )
        page.keyboard.press("Tab")
        chip = _focus(page)
        assert chip["group"] and chip["tag"] == "BUTTON" and re.fullmatch(r"HC-\d+", chip["text"]), chip
        _shot(page, "03b-ask-ai-sources.png")  # the Sources opened from the keyboard, its first chip focused
        page.keyboard.press("Enter")
        expect(page.locator(f".st-key-case-{chip['text']}")).to_contain_text("📌")  # the cited card, highlighted

        # a similar case beside the current image: the current pane keeps the doctor's place (slice, dragged
        # window, zoom, pan, the length, HU probe and ROI), and the case opens linked, on the current window
        _settle(page)
        place = _place(vp, measured)
        assert all(kind in (place["measurements"] or "") for kind in ("Length", "Point", "ROI mean")), place
        thumbs = page.locator(".st-key-neighbour-thumbs")
        opened = thumbs.get_by_role("button", name=re.compile(r"^HC-\d+$")).first
        case_id = opened.inner_text().strip()
        opened.click()
        frame = _viewer(page, "|beside:")
        beside = frame.locator("[data-testid='viewport-beside']")
        expect(beside).to_be_visible()
        expect(frame.get_by_text(f"Similar case {case_id}")).to_be_visible()
        assert _place(frame.locator("[data-testid='viewport-current']"), frame.locator("#measurements")) == place
        assert beside.get_attribute("data-window") == place["window"]
        page.locator(".st-key-viewer").scroll_into_view_if_needed()
        _shot(page, "04-similar-case-beside.png")

        # the structured pneumothorax report: AI-prefilled fields marked, the doctor fills the rest
        form = page.locator(".st-key-structured")
        form.scroll_into_view_if_needed()
        expect(form.get_by_text("Tension · AI")).to_be_visible()
        form.get_by_role("combobox", name="Size").click()
        page.get_by_role("option", name="large (rim 2 cm or more at the hilum)").click()
        form.get_by_role("combobox", name="Mediastinal shift").click()
        page.get_by_role("option", name="shifted away from the pneumothorax").click()
        form.get_by_role("combobox", name=re.compile("^Side")).click()
        page.get_by_role("option", name="right", exact=True).click()
        form.get_by_role("button", name="Write into the draft").click()
        findings = page.get_by_role("textbox", name="FINDINGS")
        expect(findings).to_have_value(re.compile(r"Size: large \(rim 2 cm or more at the hilum\)\."))
        expect(findings).to_have_value(re.compile(r"Tension: signs of tension \(AI reading, not verified\)\."))
        page.get_by_role("button", name="Save draft").click()
        expect(page.get_by_text("Saved draft #")).to_have_count(2)  # the notice and the badge
        # sign: the AI sentence confirmed, the critical result recorded with its read-back
        assert confirm_ai_statements(page) == 2  # the tension value and the impression that names it
        record = page.locator(".st-key-critical-record")
        record.get_by_role("textbox", name="Told to (name and role)").fill("Dr. A. Osei, emergency registrar")
        record.get_by_role("textbox", name="Told to (name and role)").press("Tab")
        _settle(page)
        record.get_by_text("The recipient read the result back").click()
        page.get_by_text("I have reviewed this draft and sign it as my report").click()
        _shot(page, "05-structured-report-critical-record.png")
        page.get_by_role("button", name="Sign report").click()
        expect(page.get_by_text("It is now read-only.")).to_be_visible()
        signed = page.locator(".st-key-signed-reports")
        expect(signed.get_by_text("CRITICAL RESULT: communicated to Dr. A. Osei", exact=False)).to_be_visible()
        expect(signed.get_by_text("ATTESTATION: I, Dr. Sarah Chen", exact=False)).to_be_visible()
        expect(signed.get_by_text("AI reading, not verified", exact=False)).to_have_count(0)
        signed.scroll_into_view_if_needed()
        _shot(page, "06-signed-with-attestation.png")

        # the shortcuts overlay
        page.get_by_role("button", name="Keyboard shortcuts").click()
        expect(page.get_by_role("dialog")).to_contain_text("next study on the worklist")
        _shot(page, "07-shortcuts.png")
        page.keyboard.press("Escape")

        # axe-core on the page and the viewer frame: no serious or critical violation. Streamlit's own
        # sidebar navigation (section headings inside its <ul>) is excluded: that markup is the library's.
        assert AXE.exists(), "axe-core is missing: run `make browser-deps` (npm ci in components/viewer/frontend)"
        _settle(page)  # a rerun in progress fades the page: check the settled page
        page.add_script_tag(path=str(AXE))
        for f in page.frames[1:]:
            f.add_script_tag(path=str(AXE))
        found = page.evaluate(
            "async () => (await axe.run({exclude: [['[data-testid=stSidebarNav]']]}, {resultTypes: ['violations']}))"
            ".violations"
            ".filter(v => ['serious', 'critical'].includes(v.impact)).map(v => v.id + ': ' + v.nodes.length)"
        )
        assert found == [], found

        # amend on the Report Draft page
        page.get_by_role("link", name="Report Draft").click()
        expect(page.get_by_role("heading", name="Report Draft")).to_be_visible()
        rt = open_runtime(make_settings(root))
        with rt.db.read_only() as s:
            report = s.scalars(select(Report).where(Report.scan_id == khan)).one()
            events = list(s.scalars(select(AuditLog.action).where(AuditLog.scan_ref == khan)))
        assert "critical.communicated" in events and "draft.sign" in events
        page.get_by_text(f"Amend report #{report.id}", exact=False).click()
        amend_recs = page.get_by_role("textbox", name="RECOMMENDATIONS").last
        expect(amend_recs).not_to_have_value(re.compile("ATTESTATION"))  # the signed version keeps its own
        # a sentence pasted from an AI draft keeps its mark: the amendment must attest it as signing does
        ai = f"Small residual apical pneumothorax after drainage ({AI_MARK})."
        page.get_by_role("textbox", name="IMPRESSION").last.fill(f"{report.impression} Chest drain placed. {ai}")
        page.get_by_role("textbox", name="Reason for the amendment").fill("Drain placement recorded after signing.")
        page.get_by_role("textbox", name="Reason for the amendment").press("Tab")
        _settle(page)
        page.get_by_text("I sign this amendment").click()
        attest = page.locator(".st-key-amend-attest [data-testid='stCheckbox']")
        expect(attest).to_have_count(1)
        expect(page.get_by_role("button", name="Sign amendment")).to_be_disabled()
        attest.first.locator("label").click()
        _settle(page)
        page.get_by_role("button", name="Sign amendment").click()
        expect(page.get_by_text("Signed amended report", exact=False)).to_be_visible()
        with rt.db.read_only() as s:
            v2 = s.scalars(select(Report).where(Report.supersedes_id == report.id)).one()
            kept = s.scalars(select(ReportDraft).where(ReportDraft.report_id == v2.id)).one()
            amended = s.scalars(select(AuditLog).where(AuditLog.action == "report.amend")).one()
            assert s.scalar(select(func.count()).where(Report.scan_id == khan)) == 2
        assert AI_MARK not in v2.impression and "Small residual apical pneumothorax after drainage." in v2.impression
        assert v2.recommendations.count("ATTESTATION:") == 1 and "CRITICAL RESULT: communicated to Dr. A. Osei" in v2.recommendations
        assert "amended report (amending version 1) and sign it as my own. Its 1 AI-derived" in v2.recommendations
        assert ai in kept.impression and amended.detail["ai_confirmed"] == 1, "the AI provenance stays in the history"
        new = page.locator(f".st-key-report-{v2.id}")
        expect(new).to_contain_text("ATTESTATION: I, Dr. Sarah Chen, reviewed the images and this amended report")
        expect(new).not_to_contain_text(AI_MARK)
        new.scroll_into_view_if_needed()
        _shot(page, "08-amended.png")
