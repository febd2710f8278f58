"""Sub-commands ``ask``, ``draft`` and ``eval-ask``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

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


def _outside_file(questions: str, data: Path) -> Path | None:
    """The outside-format question file ``--questions`` names: the shipped set, a path, or none (doctor set only)."""
    if questions in {"outside", "both"}:
        return data / "ask_outside_questions.json"
    if questions == "doctor":
        return None
    path = Path(questions)
    if not path.is_file():
        raise NotFoundError(f"No question file at {questions!r}", hint="--questions takes outside, doctor, both or the path "
                            "of a JSON file in the outside set's format (tests/data/ask_outside_questions.json).")  # fmt: skip
    return path


def _eval(args: argparse.Namespace) -> int:
    from core.askeval.doctor_set import _scan_ids, load_questions, run_eval, summarise
    from core.askeval.outside_set import run_outside, summarise_outside
    from core.runtime import open_runtime
    from core.settings import REPO_ROOT

    rt = open_runtime(settings_from_args(args))
    data = REPO_ROOT / "tests" / "data"
    llm = _llm(rt, argparse.Namespace(extractive=not args.llm))
    splits = ["train", "test"] if args.split == "all" else [args.split]
    out: dict[str, Any] = {"path": "llm" if llm else "extractive"}
    met = True
    outside = _outside_file(args.questions, data)
    if outside is not None:
        items = [i for i in load_questions(outside) if i["split"] in splits]
        parts = run_outside(rt, items, _scan_ids(rt))
        out["questionFile"] = str(outside)
        out["outside"] = {split: summarise_outside([p for p in parts if p.split == split]) for split in splits}
        if args.failures:  # the train split only: the test split is looked at in aggregate, never item by item
            out["outside_train_failures"] = [
                {"id": p.id, "part": p.part, "intent": p.intent, "read": p.read_intent, "expected": p.why, "answer": p.answer}
                for p in parts
                if p.split == "train" and (not p.ok or p.invented or p.invalid_citations)
            ]
        test = out["outside"].get("test")
        met = met and (test is None or bool(test["targets_met"]))
    if args.questions in {"doctor", "both"}:
        items = [i for i in load_questions(data / "doctor_questions.json") if i["split"] in splits]
        if args.sample:
            import random

            items = sorted(random.Random(args.seed).sample(items, min(args.sample, len(items))), key=lambda i: i["id"])
        results = run_eval(rt, items, llm)
        out["doctor"] = {split: summarise([r for r in results if r.split == split]) for split in splits}
        if args.failures:
            out["doctor_train_failures"] = [
                {"id": r.id, "intent": r.intent, "expected": r.behaviour, "answer": r.answer, "stray": r.stray_numbers}
                for r in results
                if r.split == "train" and (not r.ok or r.stray_numbers or r.invalid_citations)
            ]
        test = out["doctor"].get("test")
        met = met and (test is None or bool(test["targets_met"]))
    if args.json:
        emit(out, True)
    else:
        for name in ("outside", "doctor"):
            for split, m in (out.get(name) or {}).items():
                rate = m.get("useful_rate", m.get("fact_accuracy"))
                print(f"{name} {split}: answerable {rate} · handled {m['handled_rate']} · invalid citations "
                      f"{m['invalid_citations']} · {m['seconds_per_question']['mean']} s/question")  # fmt: skip
    return 0 if met else 1


def _train(args: argparse.Namespace) -> int:
    from core.askeval.train import train
    from core.runtime import open_runtime
    from core.settings import REPO_ROOT

    rt = open_runtime(settings_from_args(args))
    emit(train(rt.embedder, REPO_ROOT / "tests" / "data"), True)
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
    p = sub.add_parser("eval-ask", help="Run the doctor-question set against Ask AI (exit 1 when a test-split target is missed).")
    p.add_argument("--llm", action="store_true", help="Also use the configured LLM backend (doctor set only; default: extractive).")
    p.add_argument(
        "--questions", default="both", metavar="outside|doctor|both|PATH",
        help="Which question set to run: the shipped sets, or the path of a question file in the outside set's format.",
    )
    p.add_argument("--split", choices=["train", "test", "all"], default="all", help="Which frozen split to run.")
    p.add_argument("--failures", action="store_true", help="List the train items that missed their expectation.")
    p.add_argument("--sample", type=int, default=0, help="Run a seeded random sample of N items (0: all).")
    p.add_argument("--seed", type=int, default=13, help="Seed of --sample.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_eval)
    p = sub.add_parser(
        "train-ask-intent",
        help="Train Ask AI's intent classifier on the question sets' train splits (writes core/answer/data/intent_model.npz).",
    )
    p.set_defaults(func=_train)
