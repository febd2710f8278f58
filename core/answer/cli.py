"""Sub-commands ``ask``, ``draft`` and ``eval-ask``."""

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
    return None if args.extractive else rt.llm


def _ask(args: argparse.Namespace) -> int:
    from core.answer.service import ask_question
    from core.runtime import open_runtime

    rt = open_runtime(settings_from_args(args))
    res = ask_question(rt, args.scan_id, args.question, _doctor_id(rt, args.doctor), _llm(rt, args))
    out = res.answer.model_dump() | {
        "intent": res.intent,
        "path": res.path,
        "reason": res.reason,
        "removed": [r for _, r in res.removed],
    }
    if res.guideline_question:
        out["guidelineQuestion"] = res.guideline_question
    emit(out if args.json else res.answer.answer, args.json)
    return 0


def _draft(args: argparse.Namespace) -> int:
    from core.reports.writer import generate_report_draft
    from core.runtime import open_runtime

    rt = open_runtime(settings_from_args(args))
    draft = generate_report_draft(rt, args.scan_id, _llm(rt, args))
    if args.json:
        extra = {"path": draft.path, "author": draft.author, "reason": draft.reason, "evidence": list(draft.evidence)}
        emit(draft.as_contract() | {"sections": draft.sections()} | extra | {"saved": False}, True)
    else:
        print("\n\n".join(f"{k.upper()}: {v}" for k, v in draft.sections().items() if v))
        print(f"\n(written by the {draft.author}; evidence: {', '.join(draft.evidence) or 'none'})")
    return 0


def _eval(args: argparse.Namespace) -> int:
    from core.answer.evaluate import load_questions, run_eval, summarise
    from core.runtime import open_runtime
    from core.settings import REPO_ROOT

    rt = open_runtime(settings_from_args(args))
    items = load_questions(REPO_ROOT / "tests" / "data" / "doctor_questions.json")
    llm = _llm(rt, argparse.Namespace(extractive=not args.llm))
    chosen = [i for i in items if args.split == "all" or i["split"] == args.split]
    if args.sample:
        import random

        chosen = sorted(random.Random(args.seed).sample(chosen, min(args.sample, len(chosen))), key=lambda i: i["id"])
    results = run_eval(rt, chosen, llm)
    splits = ["train", "test"] if args.split == "all" else [args.split]
    out: dict[str, object] = {"path": "llm" if llm else "extractive"}
    for split in splits:
        out[split] = summarise([r for r in results if r.split == split])
    if args.failures:
        out["failures"] = [
            {"id": r.id, "intent": r.intent, "expected": r.behaviour, "answer": r.answer, "stray": r.stray_numbers}
            for r in results
            if not r.ok or r.stray_numbers or r.invalid_citations
        ]
    if args.json:
        emit(out, True)
    else:
        for split in splits:
            m = out[split]
            assert isinstance(m, dict)
            print(
                f"{split}: {m['items']} items · answered {m['answer_rate']} · facts {m['fact_accuracy']} · "
                f"handled {m['handled_rate']} · invalid citations {m['invalid_citations']} · "
                f"stray numbers {m['numbers_not_in_evidence']} · {m['seconds_per_question']['mean']} s/question"
            )
    test = out.get("test")
    return 0 if not isinstance(test, dict) or test["targets_met"] else 1


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
    p = sub.add_parser("eval-ask", help="Run the doctor-question set against Ask AI (exit 1 when a test-split target is missed).")
    p.add_argument("--llm", action="store_true", help="Also use the configured LLM backend (default: extractive path).")
    p.add_argument("--split", choices=["train", "test", "all"], default="all", help="Which frozen split to run.")
    p.add_argument("--failures", action="store_true", help="List the items that missed their expectation.")
    p.add_argument("--sample", type=int, default=0, help="Run a seeded random sample of N items (0: all).")
    p.add_argument("--seed", type=int, default=13, help="Seed of --sample.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_eval)
