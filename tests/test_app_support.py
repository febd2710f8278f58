"""Helpers for the AppTest suites (no tests here): point the app at a database, sign a user in."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from core.auth import CurrentUser
from core.runtime import Runtime
from core.settings import REPO_ROOT
from core.store.models import User

PAGES = REPO_ROOT / "pages"

# The ceiling of one AppTest script run and of a served app's start: the page's own state decides,
# and this only bounds a hang (a first run builds the runtime: minutes on a loaded 2-core CPU).
APPTEST_TIMEOUT_S = float(os.environ.get("CASEBOOK_TEST_APPTEST_TIMEOUT_S", "300"))


def use_root(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the app (which reads settings from the environment) use the database under ``root``."""
    monkeypatch.setenv("CASEBOOK_PRESET", "test")
    monkeypatch.setenv("CASEBOOK_PATHS__DATA_DIR", str(root / "data"))
    monkeypatch.setenv("CASEBOOK_PATHS__INDEX_DIR", str(root / "indexes"))


def user_of(rt: Runtime, username: str) -> CurrentUser:
    """The signed-in form of a demo user."""
    with rt.db.read_only() as s:
        u = s.scalars(select(User).where(User.username == username)).one()
        return CurrentUser(u.id, "doctor" if u.role == "doctor" else "patient", u.display_name)


def page(name: str, user: CurrentUser | None = None, scan: str | None = None) -> AppTest:
    """An AppTest of ``pages/<name>.py`` (or ``app.py``) with ``user`` signed in and ``scan`` in the URL."""
    path = REPO_ROOT / "app.py" if name == "app" else PAGES / f"{name}.py"
    at = AppTest.from_file(str(path), default_timeout=APPTEST_TIMEOUT_S)
    if user is not None:
        at.session_state["user"] = user
    if scan is not None:
        at.query_params["scan"] = scan
    return at


def texts(at: AppTest) -> str:
    """Every markdown, caption, info, warning, success and error text of a run, joined, as a reader sees it."""
    kinds = ("markdown", "caption", "info", "warning", "success", "error")
    return "\n".join(shown(str(getattr(e, "value", ""))) for kind in kinds for e in at.get(kind))


def shown(markdown: str) -> str:
    """``markdown`` without the escapes and word joiners of ``pages._text.inert``: the characters a reader sees."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", markdown).replace("\u2060", "")


# -- a real server and a real browser (tests/test_browser.py, bench/ui_bench.py) -------------------

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(root: Path, port: int, log: Path, script: str = "app.py") -> subprocess.Popen[bytes]:
    """``streamlit run app.py`` (or ``script``) on 127.0.0.1:``port`` over the database under ``root`` (test preset)."""
    env = dict(os.environ)
    env.update(
        CASEBOOK_PRESET="test",
        CASEBOOK_PATHS__DATA_DIR=str(root / "data"),
        CASEBOOK_PATHS__INDEX_DIR=str(root / "indexes"),
        HF_HUB_OFFLINE="1",
        TRANSFORMERS_OFFLINE="1",
    )
    cmd = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(REPO_ROOT / script),
        "--server.port",
        str(port),
        "--server.address",
        "127.0.0.1",
        "--server.headless",
        "true",
        "--server.fileWatcherType",
        "none",
        "--browser.gatherUsageStats",
        "false",
    ]
    out = log.open("wb")
    return subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def wait_healthy(port: int, proc: subprocess.Popen[bytes], timeout_s: float = APPTEST_TIMEOUT_S) -> None:
    """Block until ``/_stcore/health`` answers ``ok``; raise if the server exits or times out."""
    import urllib.error
    import urllib.request

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                if r.read().strip() == b"ok":
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    raise TimeoutError(f"streamlit did not become healthy within {timeout_s} s")


def stop_server(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server started by :func:`start_server`."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def log_in(page: Any, base: str, username: str, password: str = "casebook-demo") -> None:
    """Open the home page, fill the log-in form and submit it (the caller waits for what should appear)."""
    page.goto(base + "/")
    sign_in(page, username, password)


def sign_in(page: Any, username: str, password: str = "casebook-demo") -> None:
    """Fill the log-in form already on the page and submit it (the caller waits for what should appear)."""
    page.get_by_label("Username").fill(username)
    page.get_by_role("textbox", name="Password").fill(password)
    page.get_by_role("button", name="Log in").click()
