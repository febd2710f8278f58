"""``core/answer`` and ``core/reports`` receive their parts; they never import the runtime or the demo data.

Every ``import`` and ``from ... import`` in those packages is read from the source with
:mod:`ast` (module level, inside functions and under ``TYPE_CHECKING`` alike: a lazy
import is still a dependency), so a feature cannot reach for ``core.runtime`` or
``core.demo`` again. The last test runs the same check on a file that does, so the
check itself can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1] / "core"
FORBIDDEN = ("core.runtime", "core.demo")


def _imports(path: Path, root: Path = CORE.parent) -> list[str]:
    """Every module name ``path`` imports (relative imports resolved against its package under ``root``)."""
    package = ".".join(path.relative_to(root).with_suffix("").parts[:-1])
    out: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join([*package.split(".")[: len(package.split(".")) - node.level + 1], base]).strip(".")
            out += [base] + [f"{base}.{a.name}" for a in node.names]
    return out


def _violations(path: Path, root: Path = CORE.parent) -> list[str]:
    return [m for m in _imports(path, root) if any(m == f or m.startswith(f + ".") for f in FORBIDDEN)]


@pytest.mark.parametrize("package", ["answer", "reports"])
def test_features_never_import_the_runtime_or_demo_data(package: str) -> None:
    files = sorted((CORE / package).rglob("*.py"))
    assert files
    bad = {str(p.relative_to(CORE)): v for p in files if (v := _violations(p))}
    assert bad == {}, f"import the parts from core.answer.kit instead: {bad}"


def test_the_check_finds_a_lazy_runtime_import(tmp_path: Path) -> None:
    probe = tmp_path / "core" / "answer" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("def f():\n    from core.runtime import Runtime\n    from ..demo import catalog\n    return Runtime, catalog\n")
    assert _violations(probe, tmp_path) == ["core.runtime", "core.runtime.Runtime", "core.demo", "core.demo.catalog"]


PAGES = [*sorted((CORE.parent / "pages").rglob("*.py")), CORE.parent / "app.py", CORE.parent / "serve.py"]
CONCURRENCY = ("threading", "concurrent", "_thread", "multiprocessing", "asyncio")


def _concurrency(path: Path, root: Path = CORE.parent) -> list[str]:
    return [m for m in _imports(path, root) if any(m == f or m.startswith(f + ".") for f in CONCURRENCY)]


def test_pages_never_run_threads_of_their_own() -> None:
    """Budgets, Cancel and background work live in core (issue 27): a page renders events and holds a choice."""
    assert len(PAGES) > 10
    bad = {str(p.relative_to(CORE.parent)): v for p in PAGES if (v := _concurrency(p))}
    assert bad == {}, f"move the thread, pool or event loop into core and render its events: {bad}"


def test_the_page_check_finds_a_thread(tmp_path: Path) -> None:
    probe = tmp_path / "pages" / "probe.py"
    probe.parent.mkdir(parents=True)
    probe.write_text("import threading as t\ndef f():\n    from concurrent.futures import ThreadPoolExecutor\n    return t, ThreadPoolExecutor\n")
    assert _concurrency(probe, tmp_path) == ["threading", "concurrent.futures", "concurrent.futures.ThreadPoolExecutor"]
