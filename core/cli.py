"""``python -m core``: the command line.

Each feature area registers its own sub-commands through a ``register(sub)``
function in its ``cli`` module (see ``_AREAS``), so this file stays small.
Commands that take ``--json`` print one JSON document on stdout; errors go to
stderr as ``error: ...`` plus a hint, with exit code 2.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

from core.errors import CasebookError

__all__ = ["emit", "main", "settings_from_args"]

# Modules that add sub-commands; each defines ``register(sub: argparse._SubParsersAction) -> None``.
_AREAS = (
    "core.cases.cli",
    "core.askeval.cli",
    "core.llm.cli",
    "core.kb.cli",
    "core.guideline.cli",
    "core.selfrag.cli",
    "core.imaging.cli",
    "core.store.cli",
    "core.pacs.cli",
)

Handler = Callable[[argparse.Namespace], int]


def settings_from_args(args: argparse.Namespace) -> Any:
    """Settings for this invocation (``--preset`` and ``--set group.field=value``)."""
    from core.settings import load_settings

    overrides: dict[str, Any] = {}
    for item in getattr(args, "set", None) or []:
        key, _, value = item.partition("=")
        node = overrides
        *parents, leaf = key.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    return load_settings(getattr(args, "preset", None), **overrides)


def emit(payload: Any, as_json: bool) -> None:
    """Print ``payload`` as JSON, or as readable lines."""
    if as_json:
        print(json.dumps(payload, indent=2, ensure_ascii=False, default=str))
        return
    if isinstance(payload, list):
        for row in payload:
            print(row)
    else:
        print(payload)


def _settings_doc(args: argparse.Namespace) -> int:
    from core.settings_doc import render_settings_doc

    print(render_settings_doc(), end="")
    return 0


def _setup(args: argparse.Namespace) -> int:
    from core.setup import prepare

    prepare(settings_from_args(args), say=lambda m: print(m, file=sys.stderr))
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The full parser with every area's sub-commands."""
    parser = argparse.ArgumentParser(prog="python -m core", description="Casebook command line.")
    parser.add_argument("--preset", default=None, help="Settings preset name or YAML path (default: CASEBOOK_PRESET).")
    parser.add_argument(
        "--set", action="append", metavar="GROUP.FIELD=VALUE", help="Override one setting (repeatable)."
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="Log progress to stderr.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("settings-doc", help="Print docs/SETTINGS.md generated from the settings model.")
    p.set_defaults(func=_settings_doc)
    p = sub.add_parser("setup", help="Prepare the demo database, indexes and models (idempotent).")
    p.set_defaults(func=_setup)
    for name in _AREAS:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, stream=sys.stderr)
    func: Handler = args.func
    try:
        return func(args)
    except CasebookError as exc:
        print(f"error: {exc}\nhint: {exc.hint}", file=sys.stderr)
        return 2
