"""Shared fixtures: a seeded demo database built once per session, and fresh copies for writers."""

from __future__ import annotations

import multiprocessing as mp
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from core.demo.seed import seed_demo
from core.runtime import Runtime, open_runtime
from core.settings import REPO_ROOT, Settings, load_settings
from core.store.models import Report, Scan, User, utcnow

# tests.backends: one PostgreSQL cluster and one demo template database for the whole session,
# shared by every module (a template per module re-read the demo SQLite file late in the run).
pytest_plugins = ["tests.conftest_llm", "tests.backends"]


def copy_data(source: Path, target: Path) -> None:
    """Copy a demo data folder; the image store's objects are hard-linked (read-only and content-addressed).

    The demo images are about 220 MB: a byte copy per test cost seconds, a link costs nothing and is safe
    because no code writes into a published object.
    """
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("images"))
    if (source / "images").exists():
        shutil.copytree(source / "images", target / "images", copy_function=_link_or_copy)


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # another file system
        shutil.copy2(src, dst)


def make_settings(root: Path, **overrides: Any) -> Settings:
    """Test settings whose every path lives under ``root``."""
    paths = {"data_dir": root / "data", "index_dir": root / "indexes", "model_dir": root / "models"}
    paths.update(overrides.pop("paths", {}))
    return load_settings("test", paths=paths, **overrides)


@pytest.fixture()
def spawn_ctx(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A ``spawn`` multiprocessing context whose children do not re-run ``__main__``.

    Streamlit's AppTest leaves a page script registered as ``__main__``; a spawned child
    would re-execute it. Targets must live in importable test modules.
    """
    monkeypatch.delattr(sys.modules["__main__"], "__file__", raising=False)
    return mp.get_context("spawn")


@pytest.fixture(scope="session")
def demo_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the seeded demo database and its case index (read-only use)."""
    root = tmp_path_factory.mktemp("demo")
    rt = open_runtime(make_settings(root))
    seed_demo(rt.settings, rt.db)
    rt.case_search.open()
    rt.db.dispose()
    return root


@pytest.fixture(scope="session")
def demo_kb_root(demo_root: Path) -> Path:
    """``demo_root`` with the demo knowledge bases (guidelines, drug labels) built, once per session."""
    from core.kb import build_demo_kb

    reports = build_demo_kb(make_settings(demo_root, kb={"progress": False}))
    assert all(not r.errors for r in reports), [r.errors for r in reports]
    return demo_root


@pytest.fixture(scope="session")
def demo(demo_root: Path) -> Iterator[Runtime]:
    """The shared demo runtime. Tests using it must not write."""
    rt = open_runtime(make_settings(demo_root))
    yield rt
    rt.db.dispose()


@pytest.fixture()
def fresh(demo_root: Path, tmp_path: Path) -> Iterator[Runtime]:
    """A private copy of the demo database and index that a test may change."""
    copy_data(demo_root / "data", tmp_path / "data")
    shutil.copytree(demo_root / "indexes", tmp_path / "indexes", symlinks=True)
    rt = open_runtime(make_settings(tmp_path))
    yield rt
    rt.db.dispose()


def scan_of(rt: Runtime, username: str, index: int = -1) -> str:
    """The id of a demo patient's scan (oldest first; -1 is the newest)."""
    with rt.db.read_only() as s:
        ids = s.scalars(
            select(Scan.id)
            .join(User, User.id == Scan.patient_id)
            .where(User.username == username)
            .order_by(Scan.created_at)
        ).all()
    return ids[index]


def plant_signed_report(rt: Runtime, text: str) -> str:
    """Sign ``text`` as dr.chen's report of Rahul Mehta's oldest scan, straight into the table.

    Returns his newest scan, whose context bundle holds the report as a prior one.
    """
    with rt.db.read_only() as s:
        doctor = int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)
    with rt.db.session() as s:
        scans = s.scalars(
            select(Scan)
            .join(User, User.id == Scan.patient_id)
            .where(User.username == "rahul.mehta")
            .order_by(Scan.created_at)
        ).all()
        s.add(
            Report(
                scan_id=scans[0].id,
                author_id=doctor,
                findings=text,
                impression=text,
                recommendations="",
                signed_at=utcnow(),
            )
        )
        return scans[-1].id


def run_cli(root: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m core ARGS`` as a user runs it (a subprocess, test preset) over the database under ``root``.

    ``env`` adds environment variables (``CASEBOOK_PATHS__ASSETS_DIR``...).
    """
    env = {
        **os.environ,
        "CASEBOOK_PRESET": "test",
        "CASEBOOK_PATHS__DATA_DIR": str(root / "data"),
        "CASEBOOK_PATHS__INDEX_DIR": str(root / "indexes"),
        **(env or {}),
    }
    return subprocess.run(
        [sys.executable, "-m", "core", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=300,
        check=False,
    )
