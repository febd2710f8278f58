"""How much grounded text the output guard keeps, and how much hostile text it drops.

Usefulness: the doctor-question set (tests/data/doctor_questions.json, 248
questions over the demo scans) is answered by the extractive composer; every
sentence of every cited answer is text a faithful model could write, so the
guard should keep it. The share it drops is the guard's false-drop rate, with
the reasons counted.

Safety: the hostile sentences of tests/test_hostile_guard.py, checked against
each demo bundle that answers, must all be dropped.

With ``--llm N`` the configured model (``llm.backend``, default the local
llama.cpp model) also answers the first N cited questions (spread over the
scans), and the guard's verdict on each of its sentences is counted and listed.

Run: ``PYTHONPATH=. python bench/guard_bench.py [--llm 12]`` (seeds a demo database in a temp
folder, about two minutes on two shared cores; the model adds 20-60 s per answer on one thread).
"""

from __future__ import annotations

import argparse
import collections
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy import select

from core.answer.guard import enforce
from core.answer.prompt import ask_grammar, ask_messages
from core.answer.service import answer_readonly
from core.demo.seed import seed_demo
from core.errors import CasebookError
from core.runtime import Runtime, open_runtime
from core.settings import load_settings
from core.store.models import Scan, User
from core.text import answer_sentences

ROOT = Path(__file__).resolve().parents[1]


def _scan(rt: Runtime, username: str, index: int) -> str:
    with rt.db.read_only() as s:
        ids = s.scalars(
            select(Scan.id)
            .join(User, User.id == Scan.patient_id)
            .where(User.username == username)
            .order_by(Scan.created_at)
        ).all()
    return str(ids[index])


def main() -> None:
    """Seed, answer, guard, print."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--llm", type=int, default=0, help="also guard the configured model's answers to N questions")
    ap.add_argument(
        "--unconstrained", action="store_true", help="ask the model without Ask AI's citation grammar (as before issue 27)"
    )
    args = ap.parse_args()
    items = json.loads((ROOT / "tests" / "data" / "doctor_questions.json").read_text())["items"]
    from tests.test_hostile_guard import (  # the hostile lists live with their tests
        DIAGNOSIS_CASES,
        DRUG_CASES,
        NUMBER_CASES,
        OUTSIDE_CASES,
        PROCEDURE_CASES,
        UNICODE_CASES,
    )

    hostile = DRUG_CASES + PROCEDURE_CASES + NUMBER_CASES + UNICODE_CASES + OUTSIDE_CASES + DIAGNOSIS_CASES
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        settings = load_settings(
            "test", paths={"data_dir": root / "data", "index_dir": root / "indexes"}
        )
        rt = open_runtime(settings)
        seed_demo(rt.settings, rt.db)
        rt.case_search.open()
        kept = dropped = answers = kept_facts = 0
        hostile_kept = hostile_checked = hostile_kept_facts = 0
        reasons: collections.Counter[str] = collections.Counter()
        reasons_facts: collections.Counter[str] = collections.Counter()
        started = time.perf_counter()
        for item in items:
            result, res = answer_readonly(rt, _scan(rt, item["user"], item["scan"]), item["question"])
            if not res.answer.citedCaseIds or result.bundle is None:
                continue
            answers += 1
            a, b = (result.case_ids * 2)[:2]
            for sentence in answer_sentences(res.answer.answer):
                report = enforce(sentence, result)
                kept += len(report.kept)
                dropped += len(report.removed)
                reasons.update(r.split(":")[0] for _, r in report.removed)
                with_facts = enforce(sentence, result, facts=res.facts)  # the answer's computed facts
                kept_facts += len(with_facts.kept)
                reasons_facts.update(r.split(":")[0] for _, r in with_facts.removed)
            for text in hostile:
                hostile_checked += 1
                shaped = text.replace("HC-00012", a).replace("HC-00004", b)
                hostile_kept += bool(enforce(shaped, result).kept)
                hostile_kept_facts += bool(enforce(shaped, result, facts=res.facts).kept)
        elapsed = time.perf_counter() - started
        model_lines = _model_run(rt, items, args.llm, not args.unconstrained) if args.llm else []
        rt.db.dispose()
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"answers with citations: {answers} of {len(items)} questions")
    print(f"grounded sentences kept: {kept} of {kept + dropped} ({kept / max(1, kept + dropped):.1%})")
    print(f"drop reasons: {dict(reasons.most_common())}")
    print(f"with the answer's computed facts: kept {kept_facts} of {kept + dropped} ({kept_facts / max(1, kept + dropped):.1%})")
    print(f"drop reasons with facts: {dict(reasons_facts.most_common())}")
    print(f"hostile sentences kept: {hostile_kept} of {hostile_checked}; with facts {hostile_kept_facts}")
    print(f"{elapsed:.1f} s for answering and guarding; load average {load} (2 shared cores)")
    print("\n".join(model_lines))


def _model_run(rt: Runtime, items: list[dict[str, Any]], n: int, constrained: bool) -> list[str]:
    """Guard the configured model's answers to ``n`` cited questions, one per scan first.

    ``constrained``: with Ask AI's citation grammar, as the service asks (llama.cpp only).
    """
    llm = rt.llm
    if llm is None:
        return ["no model configured (llm.backend is extractive)"]
    picked: list[dict[str, Any]] = []
    seen: set[tuple[object, object]] = set()
    for item in items:  # one question per scan first, so the sample spans anatomies
        if (item["user"], item["scan"]) not in seen and item["split"] == "test":
            seen.add((item["user"], item["scan"]))
            picked.append(item)
    lines: list[str] = []
    kept = total = answers_kept = unchanged = 0
    reasons: collections.Counter[str] = collections.Counter()
    for item in picked[:n]:
        result, res = answer_readonly(rt, _scan(rt, str(item["user"]), int(item["scan"])), str(item["question"]))
        if result.bundle is None or not res.answer.citedCaseIds:
            continue
        started = time.perf_counter()
        try:
            messages = ask_messages(result, str(item["question"]), res.answer.answer)
            text = llm.chat(messages, grammar=ask_grammar(result) if constrained else None).text
        except CasebookError as exc:  # a slow machine: count it and go on
            lines.append(f"- {item['id']} model failed: {type(exc).__name__}")
            continue
        report = enforce(text, result, facts=res.facts)
        kept += len(report.kept)
        total += len(report.kept) + len(report.removed)
        answers_kept += bool(report.kept and report.cited)
        unchanged += bool(report.kept and report.cited and not report.removed)  # passed the guard whole
        reasons.update(r.split(":")[0] for _, r in report.removed)
        lines.append(f"- {item['id']} ({time.perf_counter() - started:.0f} s) {item['question']}")
        lines += [f"    kept: {k}" for k in report.kept]
        lines += [f"    DROPPED ({why}): {sentence}" for sentence, why in report.removed]
    head = [
        f"model {llm.backend}/{llm.model} ({'citation grammar' if constrained else 'unconstrained'}): {answers_kept} answers usable (kept text with a citation), "
        f"{unchanged} unchanged (no sentence dropped), of {len([ln for ln in lines if ln.startswith('- ')])}; "
        f"sentences kept {kept} of {total}",
        f"model drop reasons: {dict(reasons.most_common())}",
    ]
    return head + lines


if __name__ == "__main__":
    main()
