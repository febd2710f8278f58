"""The ``core`` package has no import cycles between its modules.

The graph is read from the source with :mod:`ast`, never by importing: an edge
``a -> b`` is an ``import`` or ``from ... import`` that runs when ``a`` is
imported (module level, class bodies, ``try`` and plain ``if`` blocks). Imports
inside functions run later and ``if TYPE_CHECKING:`` blocks never run, so
neither counts. ``from p import x`` points at ``p.x`` when that is a module,
else at ``p``. A package's ``__init__`` re-exporting its modules is a facade
and counts as the module ``p`` itself; importing ``p.m`` is not counted as an
edge to ``p``.

Inside ``core.kb`` not even deferred imports may form a cycle: both cycles the
package split broke were function-level imports.

The last test builds a tiny package in ``tmp_path`` with one cycle in it and
checks that the same code finds it, so the others can fail.
"""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[1] / "core"


def _modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file, for every module of the package at ``root``."""
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_time(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """The import statements of ``body`` that run when the module is imported."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                found += _import_time(node.body)
            found += _import_time(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                found += _import_time(block)
        elif isinstance(node, ast.ClassDef | ast.With):
            found += _import_time(node.body)
    return found


def _every_import(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement of ``body``, deferred ones (in functions, under TYPE_CHECKING) included."""
    return [node for stmt in body for node in ast.walk(stmt) if isinstance(node, ast.Import | ast.ImportFrom)]


def import_graph(root: Path, deferred: bool = False) -> dict[str, set[str]]:
    """Module -> the package's modules it imports at import time (with ``deferred``: anywhere)."""
    collect = _every_import if deferred else _import_time
    modules = _modules(root)
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        for node in collect(ast.parse(path.read_text(encoding="utf-8")).body):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:  # relative: resolve against this module's package
                    package = name.split(".") if is_pkg else name.split(".")[:-1]
                    anchor = package[: len(package) - node.level + 1]
                    base = ".".join([*anchor, *([base] if base else [])])
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            graph[name] |= {t for t in targets if t in modules and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as ``[a, b, ..., a]``, or ``None`` (iterative depth-first search)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for start in sorted(graph):
        if start in state:
            continue
        path: list[str] = [start]
        stack = [iter(sorted(graph[start]))]
        state[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                state[path.pop()] = 2
                stack.pop()
            elif state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            elif nxt not in state:
                state[nxt] = 1
                path.append(nxt)
                stack.append(iter(sorted(graph[nxt])))
    return None


def test_core_has_no_import_cycles() -> None:
    graph = import_graph(CORE)
    assert len(graph) > 100 and graph["core.kb.corpus.serve"], "the graph was not read"
    assert "core.kb.corpus.layout" in graph["core.kb.corpus.build"]
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_core_kb_has_no_cycles_even_through_deferred_imports() -> None:
    # Both cycles the split broke (docparse <-> guidelines, corpus <-> corpus_build) hid in function-level imports.
    graph = import_graph(CORE, deferred=True)
    kb = {m: {t for t in targets if t.startswith("core.kb.")} for m, targets in graph.items() if m.startswith("core.kb.")}
    cycle = find_cycle(kb)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_cycle_in_a_package_is_found(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "from pkg.sub.a import A\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/a.py": "from pkg.sub import b\nclass A: ...\n",
            "pkg/sub/b.py": (
                "from __future__ import annotations\nfrom typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from pkg.sub.a import A\n"
                "def late() -> None:\n    from pkg.sub import a\n"
                "from . import c\n"
            ),
            "pkg/sub/c.py": "import pkg.other\n",
            "pkg/other.py": "",
        },
    )
    graph = import_graph(tmp_path / "pkg")
    assert graph["pkg.sub.b"] == {"pkg.sub.c"}  # neither TYPE_CHECKING nor a function's import counts
    assert graph["pkg.sub.c"] == {"pkg.other"}
    assert find_cycle(graph) is None
    assert find_cycle(import_graph(tmp_path / "pkg", deferred=True)) == ["pkg.sub.a", "pkg.sub.b", "pkg.sub.a"]
    # A module-level import back from c to a closes a -> b -> c -> a.
    (tmp_path / "pkg" / "sub" / "c.py").write_text("import pkg.other\nfrom .a import A\n", encoding="utf-8")
    assert find_cycle(import_graph(tmp_path / "pkg")) == ["pkg.sub.a", "pkg.sub.b", "pkg.sub.c", "pkg.sub.a"]
