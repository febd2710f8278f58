"""``reports verify`` / ``audit verify`` (chains, seals, checkpoint), ``store app-role`` (grants), ``store new-key``.

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

    s = settings_from_args(args)
    db = Database(s.database_url, key_file=s.record_key_path)
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


def _app_role(args: argparse.Namespace) -> int:
    from sqlalchemy import text

    from core.store.roles import app_role_sql

    statements = app_role_sql(args.role)
    if args.apply:
        db = _db(args)
        try:
            if db.is_sqlite:
                print("SQLite has no roles; the triggers alone guard the record there.")
                return 0
            with db.engine.begin() as c:
                tables = set(c.execute(text("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")).scalars())
                statements = app_role_sql(args.role, tables)
                for stmt in statements:
                    c.execute(text(stmt))
        finally:
            db.dispose()
    for stmt in statements:
        print(stmt + ";")
    return 0


def _new_key(args: argparse.Namespace) -> int:
    from core.store.keys import add_key

    path = settings_from_args(args).record_key_path
    kid = add_key(path)
    print(f"record key {kid} added to {path}; new records are sealed with it, older keys still verify")
    return 0


def _lines(what: str, checked: int, problems: list[str]) -> list[str]:
    head = f"{checked} {what} checked: " + ("all verify" if not problems else f"{len(problems)} problem(s)")
    return [head, *(f"  - {p}" for p in problems)]


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``reports verify``, ``audit verify`` and ``store app-role``."""
    for name, func, helptext in (
        ("reports", _reports_verify, "Signed reports: verify every version's sha256 and amendment chain."),
        ("audit", _audit_verify, "Audit log: verify the hash chain from the first row to the head."),
    ):
        p = sub.add_parser(name, help=helptext)
        verbs = p.add_subparsers(dest=f"{name}_command", required=True)
        v = verbs.add_parser("verify", help=helptext)
        v.add_argument("--json", action="store_true", help="Print one JSON document.")
        v.set_defaults(func=func)
    p = sub.add_parser("store", help="Relational store administration.")
    verbs = p.add_subparsers(dest="store_command", required=True)
    r = verbs.add_parser(
        "app-role",
        help="PostgreSQL: the app role's grants, generated from the privilege matrix (core/store/roles.py).",
    )
    r.add_argument("role", help="The role the app connects as (it must exist).")
    r.add_argument("--apply", action="store_true", help="Run the statements as the configured connection.")
    r.set_defaults(func=_app_role)
    k = verbs.add_parser("new-key", help="Rotate the record key: append a new key (it seals from now on).")
    k.set_defaults(func=_new_key)
