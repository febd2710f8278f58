"""What the browser suites share (no tests here): their marks, a served app over a private copy, a Chromium page.

Every tests/test_browser*.py runs ``streamlit run app.py`` on a free 127.0.0.1 port over a
private copy of a demo folder and drives Debian's chromium through Playwright. The server
and browser primitives underneath are in :mod:`tests.test_app_support` (bench/ui_bench.py
uses them too); this module is the set-up the suites repeated around them. Screenshots and
server logs go to ``test-artifacts/browser/`` (git-ignored) unless a suite says otherwise.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from core.settings import REPO_ROOT
from tests.conftest import copy_data
from tests.test_app_support import CHROMIUM, CHROMIUM_ARGS, free_port, start_server, stop_server, wait_healthy

if TYPE_CHECKING:
    from playwright.sync_api import Page

__all__ = [
    "ARTIFACTS",
    "BROWSER_MARKS",
    "BROWSER_TIMEOUT_MS",
    "ServedApp",
    "ask_ai",
    "chromium_page",
    "confirm_ai_statements",
    "open_patient",
    "served_copy",
    "to_scan_review",
    "wait_idle",
]

ARTIFACTS = REPO_ROOT / "test-artifacts" / "browser"
# The ceiling of any one wait in a browser test. Tests wait for the page's own state (an answer, an
# abstention card, the end of a rerun) and this only bounds a hang: an answer that takes 5 s on a quiet
# bf16 machine takes minutes on a loaded 2-core CPU without bf16 (issue 31). Raise it on slower machines.
BROWSER_TIMEOUT_MS = float(os.environ.get("CASEBOOK_TEST_BROWSER_TIMEOUT_S", "300")) * 1000
# A browser suite's ``pytestmark``: slow, browser, and skipped where Debian's chromium is missing.
BROWSER_MARKS = [
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.skipif(
        not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium (make browser-deps)"
    ),
]


@dataclass
class ServedApp:
    """The running app over ``root``; :meth:`restart` stops it and starts it again (as ``make run`` would)."""

    root: Path
    port: int
    proc: subprocess.Popen[bytes]

    @property
    def base(self) -> str:
        """The app's base URL."""
        return f"http://127.0.0.1:{self.port}"

    def restart(self, log: Path) -> None:
        """Stop the server and start it again on the same port, its output now going to ``log``."""
        stop_server(self.proc)
        self.proc = start_server(self.root, self.port, log)
        wait_healthy(self.port, self.proc)


@contextmanager
def served_copy(source: Path, tmp_path: Path, log: Path) -> Iterator[ServedApp]:
    """The app over a private copy (in ``tmp_path``) of ``source``'s database and indexes; stopped on exit.

    The server's output goes to ``log`` (its folder is created).
    """
    copy_data(source / "data", tmp_path / "data")
    shutil.copytree(source / "indexes", tmp_path / "indexes", symlinks=True)
    port = free_port()
    log.parent.mkdir(parents=True, exist_ok=True)
    app = ServedApp(tmp_path, port, start_server(tmp_path, port, log))
    try:
        wait_healthy(port, app.proc)
        yield app
    finally:
        stop_server(app.proc)


@contextmanager
def chromium_page(height: int, timeout_ms: float | None = None, failure: Path | None = None) -> Iterator[Page]:
    """A page of headless Chromium, 1400 px wide and ``height`` tall.

    Every wait of the page and of Playwright's ``expect`` defaults to :data:`BROWSER_TIMEOUT_MS`
    (or ``timeout_ms`` where a test asks for longer), never Playwright's own 5 s.

    When the body raises and ``failure`` is given, the newest open page (a test may open
    another through ``page.context.browser``) is saved there first. The browser closes on exit.
    """
    from playwright.sync_api import expect, sync_playwright

    ceiling = max(timeout_ms or 0.0, BROWSER_TIMEOUT_MS)
    expect.set_options(timeout=ceiling)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": height})
        page.set_default_timeout(ceiling)
        try:
            yield page
        except Exception:
            if failure is not None:
                failure.parent.mkdir(parents=True, exist_ok=True)
                newest = [pg for context in browser.contexts for pg in context.pages][-1]
                newest.screenshot(path=str(failure))
            raise
        finally:
            browser.close()


def to_scan_review(page: Page) -> None:
    """Open Scan Review (a doctor lands on the Worklist after log-in).

    A navigation click during the log-in rerun can be lost, so this waits for the log-in's own
    done-state (the session cookie is set) and opens the page's URL, as a bookmark would.
    """
    from urllib.parse import urlsplit

    from playwright.sync_api import expect

    page.wait_for_function("document.cookie.includes('casebook_session=')")
    url = urlsplit(page.url)
    page.goto(f"{url.scheme}://{url.netloc}/scan_review")
    expect(page.get_by_role("heading", name="Scan Review")).to_be_visible()


def ask_ai(page: Page, question: str) -> None:
    """Submit ``question`` in Ask AI and wait until it shows; a rerun still painting the page may swallow
    the first Enter, so it tries again (the caller waits for the answer it expects)."""
    from playwright.sync_api import expect

    asked = page.locator("[data-testid='stChatMessage']").filter(has_text=question)
    for _ in range(3):
        wait_idle(page)
        chat = page.get_by_placeholder("Ask about this scan…")
        chat.fill(question)
        chat.press("Enter")
        try:
            # a third of the ceiling per try: a swallowed Enter is retried, a slow rerun is waited for
            expect(asked.first).to_be_visible(timeout=BROWSER_TIMEOUT_MS / 3)
            return
        except AssertionError:
            continue
    expect(asked.first).to_be_visible()


def confirm_ai_statements(page: Page) -> int:
    """Tick "Confirmed" for every AI-derived sentence of the saved draft (signing needs each); returns how many."""
    from playwright.sync_api import expect

    boxes = page.locator(".st-key-attest [data-testid='stCheckbox']")
    expect(boxes.first).to_be_visible()
    wait_idle(page)  # count only once the run is done: a busy machine shows the statements one by one
    n = boxes.count()
    for i in range(n):
        boxes.nth(i).locator("label").click()  # Streamlit's input is hidden behind its label
        expect(boxes.nth(i).get_by_role("checkbox")).to_be_checked()
        wait_idle(page)
    assert boxes.count() == n, "an AI-derived statement appeared after the count"
    return n


def open_patient(page: Page, name: str) -> None:
    """Search the Scan Review page for a patient by ``name`` (the caller waits for what should appear).

    From any other page (the Worklist a doctor lands on) it goes to Scan Review first.
    """
    search = page.get_by_role("textbox", name="Search patients")
    if not page.get_by_role("heading", name="Scan Review").is_visible():
        to_scan_review(page)
    search.fill(name)
    search.press("Enter")


def wait_idle(page: Page) -> None:
    """Wait until the app's script run has finished: no "Running" status and no stale element left.

    This is the page's own done state; use it after an action whose result may take long on a
    slow CPU, before asserting on what the run leaves (or does not leave) on the page.
    """
    page.wait_for_function(
        "!document.querySelector('[data-stale=\"true\"]')"
        " && !document.querySelector('[data-testid=\"stStatusWidget\"]')"
    )
