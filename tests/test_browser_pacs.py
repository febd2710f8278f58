"""The PACS page end to end in real headless Chromium against the real Orthanc.

A doctor searches the PACS by patient id, ticks the study in the study list, imports it
(progress bar, then a link to the new scan, which opens in the viewer), and, once a report
of it is signed, sends it back from the "Reports to the PACS" tab with the Send button.
Screenshots go to docs/screenshots/pacs/ (committed: docs/INTEGRATION.md shows them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from core.pacs.client import PacsClient
from core.reports import DraftText, save_draft, sign_draft
from core.runtime import open_runtime
from core.settings import REPO_ROOT
from core.store.models import PacsStudyLink, User
from tests.browser_support import ARTIFACTS, BROWSER_MARKS, chromium_page, served_copy
from tests.conftest import make_settings
from tests.pacs_support import PacsStudy, make_study, orthanc_or_skip
from tests.test_app_support import log_in

pytestmark = [*BROWSER_MARKS, pytest.mark.pacs]
SHOTS = REPO_ROOT / "docs" / "screenshots" / "pacs"
TIMEOUT_MS = 30_000
PW_ENV = "CASEBOOK_TEST_PACS_PASSWORD"


@pytest.fixture()
def server(demo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path, PacsStudy]]:
    """The app over a private copy of the demo data, configured for the test Orthanc; one new study stored there."""
    orthanc = orthanc_or_skip()
    SHOTS.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv(PW_ENV, orthanc.password)
    for key, value in {
        "URL": orthanc.url, "USERNAME": orthanc.username, "PASSWORD_ENV": PW_ENV,
        "FHIR_FOLDER": str(tmp_path / "outbox"), "RETRIES": "2",
    }.items():  # fmt: skip
        monkeypatch.setenv(f"CASEBOOK_PACS__{key}", value)
    study = make_study("CT_small.dcm")
    PacsClient(make_settings(tmp_path).pacs).store(study.datasets)
    with served_copy(demo_root, tmp_path, tmp_path / "streamlit.log") as app:
        yield app.base, app.root, study


def _settle(page: Any) -> None:
    """Wait until Streamlit has replaced every stale element of the last rerun."""
    page.wait_for_timeout(300)
    page.wait_for_function(
        "!document.querySelector('[data-stale=\"true\"]') && !document.querySelector('[data-testid=\"stStatusWidget\"]')"
    )


def _shot(page: Any, name: str) -> None:
    _settle(page)
    page.screenshot(path=str(SHOTS / name))


def test_doctor_imports_from_the_study_list_and_sends_the_report_back(server: tuple[str, Path, PacsStudy]) -> None:
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    base, root, study = server
    with chromium_page(1300, TIMEOUT_MS, ARTIFACTS / "pacs-failure.png") as page:
        log_in(page, base, "dr.chen")
        expect(page.get_by_role("heading", name="Worklist")).to_be_visible()
        _settle(page)
        page.get_by_role("link", name="PACS").click()
        expect(page.get_by_role("heading", name="PACS")).to_be_visible()
        page.get_by_label("Patient ID").fill(study.patient_id)
        page.get_by_role("button", name="Search the PACS").click()
        expect(page.get_by_text("Studies found: 1")).to_be_visible()
        row = page.get_by_text(f"ID {study.patient_id}", exact=False)
        expect(row).to_be_visible()
        _shot(page, "01-study-list.png")
        row.click()  # the checkbox's label
        _settle(page)  # each widget change reruns the page; a click during that rerun is lost (seen at load)
        page.get_by_role("combobox", name="Anatomy").click()
        page.get_by_role("option", name="lung", exact=True).click()
        _settle(page)
        page.get_by_role("button", name="Import selected studies").click()
        expect(page.get_by_text("1 imported.")).to_be_visible()
        _shot(page, "02-imported.png")
        rt = open_runtime(make_settings(root))
        with rt.db.read_only() as s:
            scan_id = s.scalar(select(PacsStudyLink.scan_id))
            doctor = int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)
        assert scan_id is not None
        page.get_by_role("link", name="Study 1 imported (1 images): open it").click()
        page.wait_for_url(f"**scan={scan_id}**")
        expect(page.get_by_text("Awaiting AI reading").first).to_be_visible()

        # a signed report of it goes back from the reports tab
        draft = DraftText("No focal lesion.", "Normal study.", "No follow-up needed.")
        report = sign_draft(rt.db, save_draft(rt.db, scan_id, doctor, draft, from_ai=False), doctor)
        rt.db.dispose()
        _settle(page)
        page.get_by_role("link", name="PACS").click()
        page.get_by_role("tab", name="Reports to the PACS").click()
        expect(page.get_by_text(f"Report {report} v1", exact=False)).to_be_visible()
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_text(f"Report {report} sent as DICOM SR and FHIR.")).to_be_visible()
        expect(page.get_by_text(f"Report {report} v1", exact=False)).to_contain_text("SR: sent · FHIR: sent")
        _shot(page, "03-report-sent.png")
    srs = [d for d in PacsClient(make_settings(root).pacs).retrieve_study(study.study_uid) if d.Modality == "SR"]
    assert len(srs) == 1 and srs[0].StudyInstanceUID == study.study_uid
