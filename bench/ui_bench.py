"""UI benchmark in real headless Chromium: first paint and the Ask AI round trip.

Measures, over a seeded demo database and the ``test`` preset (extractive answers):

* cold first paint: ``streamlit run`` started -> log-in form visible in the browser;
* warm first paint: a new browser tab -> log-in form visible (server already up);
* log-in to review: "Log in" clicked -> Scan Review with its similar-case cards visible;
* Ask AI round trip: question sent -> the cited answer's chips visible.

Usage, from the repository root: ``.venv/bin/python -m bench.ui_bench [--root DIR] [--reps 5]``.
Without ``--root`` the demo data is seeded into a temporary folder first (about a minute).
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.test_app_support import CHROMIUM, CHROMIUM_ARGS, free_port, start_server, stop_server, wait_healthy

QUESTIONS = [
    "What happened to similar patients?",
    "How severe are the closest cases?",
    "How does this compare with the prior report?",
    "What is the diagnosis and how confident is it?",
    "What outcomes did the similar cases have?",
]


def seed(root: Path) -> None:
    """The demo database and case index under ``root`` (test preset)."""
    from core.demo.seed import seed_demo
    from core.runtime import open_runtime
    from core.settings import load_settings

    paths = {"data_dir": root / "data", "index_dir": root / "indexes", "model_dir": root / "models"}
    rt = open_runtime(load_settings("test", paths=paths))
    seed_demo(rt.settings, rt.db)
    rt.case_search.open()
    rt.db.dispose()


def timed(fn: Callable[[], Any]) -> float:
    """Seconds ``fn`` took."""
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def summary(xs: list[float]) -> str:
    """``median (min-max)`` in milliseconds."""
    return f"{statistics.median(xs) * 1000:.0f} ms ({min(xs) * 1000:.0f}-{max(xs) * 1000:.0f})"


def cold_paints(root: Path, reps: int, browser: Any, log: Path) -> tuple[list[float], list[float]]:
    """Server start -> healthy, and server start -> log-in form painted, each on a fresh server."""
    healthy, painted = [], []
    for _ in range(reps):
        port = free_port()
        t = time.perf_counter()
        proc = start_server(root, port, log)
        try:
            wait_healthy(port, proc)
            healthy.append(time.perf_counter() - t)
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            page.get_by_role("button", name="Log in").wait_for()
            painted.append(time.perf_counter() - t)
            page.close()
        finally:
            stop_server(proc)
    return healthy, painted


def warm_runs(base: str, reps: int, browser: Any) -> dict[str, list[float]]:
    """Warm first paint, log-in to review, and Ask AI round trips on one running server."""
    out: dict[str, list[float]] = {"warm": [], "login": [], "ask": []}
    for i in range(reps):
        ctx = browser.new_context(viewport={"width": 1400, "height": 2600})
        page = ctx.new_page()
        page.set_default_timeout(60_000)

        def paint(p: Any = page) -> None:
            p.goto(base + "/")
            p.get_by_role("button", name="Log in").wait_for()

        out["warm"].append(timed(paint))
        page.get_by_label("Username").fill("dr.chen")
        page.get_by_role("textbox", name="Password").fill("casebook-demo")

        def login(p: Any = page) -> None:
            p.get_by_role("button", name="Log in").click()
            p.locator("[class*='st-key-case-HC-']").first.wait_for()

        out["login"].append(timed(login))
        chips = page.locator("[class*='st-key-chips-']")
        before = chips.count()
        chat = page.get_by_placeholder("Ask about this scan…")
        chat.fill(QUESTIONS[i % len(QUESTIONS)])

        def ask(p: Any = page, c: Any = chat, n: int = before) -> None:
            c.press("Enter")
            p.wait_for_function(
                "n => document.querySelectorAll(\"[class*='st-key-chips-']\").length > n", arg=n, polling=25
            )

        try:
            out["ask"].append(timed(ask))
        except Exception:
            page.screenshot(path="test-artifacts/ui-bench-failure.png")
            raise
        print(f"rep {i + 1}: ask {out['ask'][-1]:.2f} s", flush=True)
        ctx.close()
    return out


def versions() -> str:
    """Chromium, Streamlit and Python versions, and the core count."""
    chromium = subprocess.run([str(CHROMIUM), "--version"], capture_output=True, text=True).stdout.strip()
    import streamlit

    return f"{chromium}; Streamlit {streamlit.__version__}; Python {platform.python_version()}; {os.cpu_count()} cores"


def main() -> None:
    """Run the benchmark and write the Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, help="a folder holding a seeded data/ and indexes/ (copied, not changed)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--cold-reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("docs/benchmarks/ui.md"))
    args = ap.parse_args()
    if not CHROMIUM.exists():
        sys.exit("needs /usr/bin/chromium (make browser-deps)")
    from playwright.sync_api import sync_playwright

    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        if args.root:
            shutil.copytree(args.root / "data", root / "data")
            shutil.copytree(args.root / "indexes", root / "indexes", symlinks=True)
        else:
            print("seeding the demo data…", flush=True)
            seed(root)
        log = root / "streamlit.log"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            healthy, cold = cold_paints(root, args.cold_reps, browser, log)
            port = free_port()
            proc = start_server(root, port, log)
            try:
                wait_healthy(port, proc)
                warm = warm_runs(f"http://127.0.0.1:{port}", args.reps, browser)
            finally:
                stop_server(proc)
                browser.close()
    rows = [
        ("Server start -> `/_stcore/health` ok", healthy),
        ("Cold first paint: server start -> log-in form visible", cold),
        ("Warm first paint: new tab -> log-in form visible", warm["warm"]),
        ("Log in -> Scan Review with similar cases visible", warm["login"]),
        ("Ask AI round trip: Enter -> cited answer (chips) visible", warm["ask"]),
    ]
    lines = [
        "# UI benchmark (headless Chromium)",
        "",
        f"Measured {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC with `bench/ui_bench.py` "
        f"(`--reps {args.reps} --cold-reps {args.cold_reps}`): {versions()}.",
        "Preset `test` (extractive answers, no language model), seeded demo database (5,000 cases). "
        f"1-minute load average {load_before:.1f} before and {os.getloadavg()[0]:.1f} after the run "
        "(the machine is shared: read the medians, not the maxima).",
        "",
        "| step | runs | median (min-max) |",
        "|---|---|---|",
        *[f"| {name} | {len(xs)} | {summary(xs)} |" for name, xs in rows],
        "",
        "How to read it: the cold first paint includes Python importing Streamlit and `core`, the first",
        "script run and Chromium loading Streamlit's frontend bundle; the warm first paint is a fresh",
        "browser context (no cache) on a running server, so it is mostly the frontend bundle and the",
        "websocket handshake. Log in -> review includes the bcrypt check, opening the runtime on the",
        "first log-in of a server, the scan list and the cached similar-case search. The Ask AI round",
        "trip (extractive backend) covers the rate-limit write, the context bundle, the composed answer,",
        "the history and audit writes and the re-render with citation chips; with a language model",
        "configured the instant answer appears after the same time and the model's text streams after it.",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
