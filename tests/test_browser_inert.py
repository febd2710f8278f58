"""Class 3 of issue 26 in real headless Chromium: hostile text typed into every field makes no outside request.

Hostile Markdown and HTML (images and links to an outside host, raw ``<img>``, autolinks,
``:colour[]`` directives, formulas) is planted in every field a person types and a page shows:
a signed report's findings, impression and recommendations, an amendment's text and reason, a
saved draft, a chat question and answer, and the doctor's display name (shown as the signer and
in the sidebar). Each field names its own outside host, so a leak says which field it came from.

Every page is then opened as the doctor and the patient's own page as the patient, with
Playwright intercepting every request of the browser: any request to a host other than the
app's is recorded and refused, and the test fails if there was one. Screenshots go to
``test-artifacts/browser/inert-*.png``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from sqlalchemy import select, update

from core.reports import DraftText, amend_report, save_draft
from core.runtime import open_runtime
from core.store.models import Conversation, Message, Report, User
from tests.browser_support import ARTIFACTS, BROWSER_MARKS, chromium_page, served_copy, wait_idle
from tests.conftest import make_settings, plant_signed_report, scan_of
from tests.test_app_support import log_in

pytestmark = BROWSER_MARKS


def hostile(field: str) -> str:
    """Markdown and HTML that would fetch from ``evil-<field>.example`` if rendered live."""
    host = f"evil-{field}.example"
    return (
        f"Note ![x](http://{host}/md.png) <img src='http://{host}/html.png'> [open](http://{host}/link) "
        f"<https://{host}/auto> www.{host} **bold** :red[red] $x^2$ &lt;b&gt; "
        f'<iframe src="http://{host}/frame"></iframe> <svg><image href="http://{host}/svg.png"/></svg>'
    )


def _plant(root: Path) -> tuple[str, str]:
    """Write the hostile text into every field; returns (the oldest scan with the report, the newest scan)."""
    rt = open_runtime(make_settings(root))
    newest = plant_signed_report(rt, hostile("report"))
    oldest = scan_of(rt, "rahul.mehta", 0)
    with rt.db.session() as s:
        doctor = s.scalars(select(User).where(User.username == "dr.chen")).one()
        s.execute(update(User).where(User.id == doctor.id).values(display_name="Dr Chen " + hostile("name")))
        doctor_id = doctor.id
        report_id = s.scalars(select(Report.id).where(Report.scan_id == oldest).order_by(Report.id.desc())).first()
        conv = Conversation(scan_id=newest, doctor_id=doctor_id)
        s.add(conv)
        s.flush()
        s.add_all(
            [
                Message(conversation_id=conv.id, role="user", content=hostile("question")),
                Message(conversation_id=conv.id, role="assistant", content=hostile("answer"), cited_case_ids=[]),
            ]
        )
    assert report_id is not None
    amend_report(
        rt.db, report_id, doctor_id, hostile("amend"), hostile("amend"), hostile("recs"), reason=hostile("reason")
    )
    save_draft(rt.db, newest, doctor_id, DraftText(hostile("draft"), hostile("draft"), hostile("draft")))
    rt.db.dispose()
    return oldest, newest


@pytest.fixture()
def planted(demo_root: Path, tmp_path: Path) -> Iterator[tuple[str, str, str]]:
    """The app over a private demo copy with hostile text planted: (base URL, oldest scan, newest scan)."""
    with served_copy(demo_root, tmp_path, ARTIFACTS / "streamlit-inert.log") as app:
        oldest, newest = _plant(app.root)
        yield app.base, oldest, newest


# what live markup of the planted text would leave in the page: an image, a link, a frame, an SVG image
LIVE = "img[src*='evil'], a[href*='evil'], iframe[src*='evil'], image[href*='evil']"


def _watch(page: Any, base: str) -> list[str]:
    """Refuse and record every request to a host other than the app's, and any to its ``/media/`` endpoint.

    ``/media/`` serves any client holding the URL, session or not: no scan image may go there.
    """
    own = urlsplit(base).netloc
    outside: list[str] = []

    def handle(route: Any) -> None:
        url = urlsplit(route.request.url)
        if (url.scheme in {"http", "https", "ws", "wss"} and url.netloc != own) or url.path.startswith("/media/"):
            outside.append(route.request.url)
            route.abort()
        else:
            route.continue_()

    page.context.route("**/*", handle)
    return outside


def _as_shown(field: str) -> str:
    """The start of a field's hostile text as the page shows it: literally, a word joiner in ``://``."""
    return f"![x](http:\u2060//evil-{field}.example/md.png)"


# (page, heading, which scan, the planted field whose text shows the page has rendered its content)
DOCTOR_PAGES = [
    ("worklist", "Worklist", None, "name"),
    ("scan_review", "Scan Review", "newest", "question"),
    ("scan_review", "Scan Review", "oldest", "amend"),
    ("report_draft", "Report Draft", "newest", "draft"),
    ("report_draft", "Report Draft", "oldest", "reason"),
    ("similar_cases", "Similar Cases", "newest", "name"),
    ("patient_explorer", "Patient Explorer", "newest", "amend"),
    ("import_images", "Import images", None, "name"),
    ("guideline_qa", "Guideline QA", None, "name"),
    ("evaluation", "Self-reflective RAG", None, "name"),
    ("settings_status", "Settings / Status", None, "name"),
]


def test_no_page_fetches_from_an_outside_host(planted: tuple[str, str, str]) -> None:
    from playwright.sync_api import expect

    base, oldest, newest = planted
    scans = {"newest": newest, "oldest": oldest}
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with chromium_page(2400, failure=ARTIFACTS / "inert-failure.png") as page:  # the shared ceiling
        outside = _watch(page, base)
        log_in(page, base, "dr.chen")
        expect(page.get_by_role("heading", name="Worklist")).to_be_visible()  # a doctor's home page
        page.wait_for_function("document.cookie.includes('casebook_session=')")
        for path, heading, which, field in DOCTOR_PAGES:
            page.goto(f"{base}/{path}" + (f"?scan={scans[which]}" if which else ""))
            expect(page.get_by_role("heading", name=heading).first).to_be_visible()
            expect(page.get_by_text(_as_shown(field), exact=False).first).to_be_visible()  # shown, as typed
            wait_idle(page)
            page.screenshot(path=str(ARTIFACTS / f"inert-doctor-{path}-{which or 'page'}.png"))
        # the typed text is on the page, shown as typed (a literal "![x](http://evil-…" is no image)
        page.goto(f"{base}/report_draft?scan={oldest}")
        expect(page.get_by_text(_as_shown("reason"), exact=False).first).to_be_visible()
        expect(page.get_by_text(_as_shown("name"), exact=False).first).to_be_visible()
        wait_idle(page)
        assert page.locator(LIVE).count() == 0, page.locator(LIVE).first.evaluate("e => e.outerHTML")
        page.get_by_role("button", name="Log out").click()
        expect(page.get_by_label("Username")).to_be_visible()

        log_in(page, base, "rahul.mehta")
        expect(page.get_by_text("Signed in as")).to_be_visible()
        page.wait_for_function("document.cookie.includes('casebook_session=')")  # a new page load keeps the session
        # the patient's own pages: the newest scan (awaiting review), then the oldest with the planted report
        for which, shows in (("newest", "Awaiting your doctor's review"), ("oldest", _as_shown("amend"))):
            page.goto(f"{base}/?scan={scans[which]}")  # the patient's home page
            expect(page.get_by_text(shows, exact=False).first).to_be_visible()
            wait_idle(page)
            page.screenshot(path=str(ARTIFACTS / f"inert-patient-scan_review-{which}.png"))
        assert page.locator(LIVE).count() == 0, page.locator(LIVE).first.evaluate("e => e.outerHTML")
    leaked = sorted({urlsplit(u).netloc for u in outside})
    assert not outside, f"the browser asked outside hosts or /media/ {leaked}: {outside[:5]}"
