"""Class 9 of issue 26: under ``serve.py`` (Streamlit's ASGI ``st.App``) the session cookie is HttpOnly.

The app is started as ``streamlit run serve.py`` over a private demo copy. After a log-in the
browser holds ``casebook_session`` with HttpOnly and SameSite=Strict, page scripts cannot read
it (``document.cookie``), a reload keeps the session, a spent grant is refused, and log-out
clears the cookie.
"""

from __future__ import annotations

import shutil
import urllib.error
import urllib.request
from pathlib import Path

from tests.browser_support import ARTIFACTS, BROWSER_MARKS, chromium_page, wait_idle
from tests.test_app_support import free_port, log_in, start_server, stop_server, wait_healthy

pytestmark = BROWSER_MARKS


def test_the_session_cookie_is_httponly_under_serve_py(demo_root: Path, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    shutil.copytree(demo_root / "data", tmp_path / "data")
    shutil.copytree(demo_root / "indexes", tmp_path / "indexes", symlinks=True)
    port = free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    proc = start_server(tmp_path, port, ARTIFACTS / "streamlit-httponly.log", script="serve.py")
    base = f"http://127.0.0.1:{port}"
    try:
        wait_healthy(port, proc)
        with chromium_page(1400, failure=ARTIFACTS / "httponly-failure.png") as page:
            with page.expect_response(lambda r: r.url.endswith("/api/session") and r.status == 204):
                log_in(page, base, "dr.chen")  # the route's answer carries the cookie
            expect(page.get_by_text("Signed in as")).to_be_visible()
            cookie = {c["name"]: c for c in page.context.cookies()}["casebook_session"]
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
            assert "casebook_session" not in page.evaluate("document.cookie")  # page scripts cannot read it
            page.reload()  # F5: the HttpOnly cookie is sent, the session holds
            expect(page.get_by_text("Signed in as")).to_be_visible()
            expect(page.get_by_text("Signed in as")).to_be_visible()
            wait_idle(page)
            page.screenshot(path=str(ARTIFACTS / "httponly-after-reload.png"))
            with page.expect_response(lambda r: r.url.endswith("/api/session") and r.status == 204):
                page.get_by_role("button", name="Log out").click()
            expect(page.get_by_label("Username")).to_be_visible()
            assert "casebook_session" not in {c["name"] for c in page.context.cookies()}
        request = urllib.request.Request(f"{base}/api/session", method="POST", headers={"X-Casebook-Grant": "forged"})
        try:
            urllib.request.urlopen(request, timeout=30)
            raise AssertionError("a forged grant was accepted")
        except urllib.error.HTTPError as exc:
            assert exc.code == 403
    finally:
        stop_server(proc)
