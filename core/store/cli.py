"""``python -m core reports verify`` and ``python -m core audit verify``: check the hash chains.

Both exit 0 when every row verifies and 1 (with the problems listed) when one
does not, so a cron job or CI step can alarm on tampering.
"""

from __future__ import annotations

import argparse
from typing import Any

from core.cli import emit, settings_from_args

__all__ = ["register"]


def _db(args: argparse.Namespace) -> Any:
    from core.store.db import Database

    db = Database(settings_from_args(args).database_url)
    db.migrate()
    return db


def _reports_verify(args: argparse.Namespace) -> int:
    from core.reports import verify_reports

    db = _db(args)
    try:
        result = verify_reports(db)
    finally:
        db.dispose()
    emit(result.as_dict() if args.json else _lines("signed report versions", result.checked, result.problems), args.json)
    return 0 if result.ok else 1


def _audit_verify(args: argparse.Namespace) -> int:
    from core.audit import verify

    db = _db(args)
    try:
        result = verify(db)
    finally:
        db.dispose()
    if args.json:
        emit(result.as_dict(), True)
    else:
        emit(_lines("audit rows", result.checked, result.problems), False)
        print(f"head: seq {result.head_seq} sha256 {result.head_hash} (note it elsewhere to detect a re-headed chain)")
    return 0 if result.ok else 1


def _lines(what: str, checked: int, problems: list[str]) -> list[str]:
    head = f"{checked} {what} checked: " + ("all verify" if not problems else f"{len(problems)} problem(s)")
    return [head, *(f"  - {p}" for p in problems)]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``reports verify`` and ``audit verify``."""
    for name, func, helptext in (
        ("reports", _reports_verify, "Signed reports: verify every version's sha256 and amendment chain."),
        ("audit", _audit_verify, "Audit log: verify the hash chain from the first row to the head."),
    ):
        p = sub.add_parser(name, help=helptext)
        verbs = p.add_subparsers(dest=f"{name}_command", required=True)
        v = verbs.add_parser("verify", help=helptext)
        v.add_argument("--json", action="store_true", help="Print one JSON document.")
        v.set_defaults(func=func)
