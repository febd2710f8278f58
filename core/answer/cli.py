"""Sub-commands ``ask`` and ``draft``."""

from __future__ import annotations

import argparse

from sqlalchemy import select

from core.cli import emit, settings_from_args
from core.errors import NotFoundError

__all__ = ["register"]


def _doctor_id(rt, username: str) -> int:  # type: ignore[no-untyped-def]
    from core.store.models import User

    with rt.db.read_only() as s:
        uid = s.scalar(select(User.id).where(User.username == username, User.role == "doctor"))
    if uid is None:
        raise NotFoundError(f"No doctor named {username!r}", hint="Demo doctors: dr.chen, dr.hassan.")
    return int(uid)


def _llm(rt, args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from core.llm.factory import make_llm

    return None if args.extractive else make_llm(rt.settings)


def _ask(args: argparse.Namespace) -> int:
    from core.answer.service import ask_question
    from core.runtime import open_runtime

    rt = open_runtime(settings_from_args(args))
    res = ask_question(rt, args.scan_id, args.question, _doctor_id(rt, args.doctor), _llm(rt, args))
    out = res.answer.model_dump() | {"path": res.path, "reason": res.reason, "removed": [r for _, r in res.removed]}
    emit(out if args.json else res.answer.answer, args.json)
    return 0


def _draft(args: argparse.Namespace) -> int:
    from core.answer.drafts import generate_report_draft
    from core.runtime import open_runtime

    rt = open_runtime(settings_from_args(args))
    draft = generate_report_draft(rt, args.scan_id, _llm(rt, args))
    if args.json:
        emit(draft.as_contract() | {"path": draft.path, "saved": False}, True)
    else:
        print(
            f"FINDINGS: {draft.findings}\n\nIMPRESSION: {draft.impression}\n\nRECOMMENDATIONS: {draft.recommendations}"
        )
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``ask`` and ``draft``."""
    p = sub.add_parser("ask", help="Ask a grounded question about a scan (stored in the doctor's chat history).")
    p.add_argument("scan_id")
    p.add_argument("question")
    p.add_argument("--doctor", default="dr.chen", help="Username of the asking doctor (default: dr.chen).")
    p.add_argument("--extractive", action="store_true", help="Skip the LLM backend; answer from the bundle alone.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_ask)
    p = sub.add_parser("draft", help="Generate a report draft for a scan (never saved).")
    p.add_argument("scan_id")
    p.add_argument("--extractive", action="store_true", help="Skip the LLM backend.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_draft)
