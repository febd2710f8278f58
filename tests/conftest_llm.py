"""Pytest plugin: the loopback LLM server as a fixture.

Registered in ``tests/conftest.py`` with ``pytest_plugins = ["tests.conftest_llm"]``::

    def test_no_names_leave(llm_server):
        settings = load_settings(llm=llm_server.llm_overrides("openai"))
        ...
        assert "Jane Doe" not in llm_server.requests[-1].text()
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.llm_server import FakeLLMServer


@pytest.fixture
def llm_server() -> Iterator[FakeLLMServer]:
    """A started :class:`~tests.llm_server.FakeLLMServer` on 127.0.0.1, stopped after the test."""
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def groq_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A dummy ``GROQ_API_KEY`` in the environment (the loopback server accepts any key)."""
    monkeypatch.setenv("GROQ_API_KEY", "gsk_test_loopback")
    return "gsk_test_loopback"


BURNER = Path(__file__).resolve().parents[1] / "scripts" / "cpu_burner.py"


@contextmanager
def cpu_burner(procs: int = 2, seconds: float = 60.0) -> Iterator[None]:
    """``scripts/cpu_burner.py`` spinning ``procs`` processes for the block (a loaded shared server)."""
    proc = subprocess.Popen([sys.executable, str(BURNER), "--procs", str(procs), "--seconds", str(seconds)])
    time.sleep(0.5)  # the workers are spinning
    try:
        yield
    finally:
        proc.terminate()
        proc.wait(timeout=30)
