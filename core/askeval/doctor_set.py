"""``eval-ask``: the doctor-question set (tests/data/doctor_questions.json) against Ask AI.

Each item names a demo patient and scan, a question and the expected behaviour:
an answer (with facts that must appear), the out-of-scope pointer to Guideline QA,
the contract's "Insufficient data..." or the fixed no-comparable-cases answer.
The run reads only (no rate limit, history or audit) and reports, per split:
answer rate and fact accuracy on answerable items, correct handling of
absent-condition and out-of-scope items, invalid citations, numbers not in the
evidence and time per question. The targets are issue 13's, on the test split.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select

from core.answer.compose import is_pointer
from core.answer.rules import allowed_numbers, numbers_in
from core.answer.service import answer_readonly
from core.contracts import INSUFFICIENT_DATA, NO_COMPARABLE_CASES
from core.errors import NotFoundError
from core.llm.base import LLM
from core.runtime import Runtime
from core.store.models import Scan, User

__all__ = ["TARGETS", "ItemResult", "load_questions", "required_facts", "run_eval", "summarise"]

# Issue 13's targets for the frozen test split on the extractive path.
TARGETS = {"answer_rate": 0.90, "handled_rate": 0.98, "invalid_citations": 0, "numbers_not_in_evidence": 0}


@dataclass(frozen=True)
class ItemResult:
    """One question's outcome."""

    id: str
    split: str
    behaviour: str
    category: str
    ok: bool
    answered: bool
    facts_ok: bool
    invalid_citations: int
    stray_numbers: tuple[str, ...]
    seconds: float
    intent: str | None
    answer: str
    expected_intent: str = ""
    path: str = ""
    reason: str | None = None


def load_questions(path: Path) -> list[dict[str, Any]]:
    """The items of a doctor-question file."""
    return list(json.loads(path.read_text())["items"])


def _scan_ids(rt: Runtime) -> dict[tuple[str, int], str]:
    with rt.db.read_only() as s:
        rows = s.execute(
            select(User.username, Scan.id).join(User, User.id == Scan.patient_id).order_by(Scan.created_at)
        ).all()
    per_user: dict[str, list[str]] = {}
    for user, sid in rows:
        per_user.setdefault(user, []).append(sid)
    return {(u, i): ids[i] for u, ids in per_user.items() for i in range(-len(ids), len(ids))}


_SEVERITY_ORDER = ("critical", "high", "moderate", "low")


def required_facts(exp: dict[str, Any], outcomes: list[str | None], severities: list[str | None]) -> list[str]:
    """The strings an answer must contain, from the item and the cited cases (a reference count, kept simple)."""
    need = list(exp.get("must_contain", []))
    if exp.get("all_outcomes"):
        need += sorted({o for o in outcomes if o})
    if exp.get("most_severe"):
        need += [next((s for s in _SEVERITY_ORDER if s in severities), "not recorded")]
    if count := exp.get("count"):
        n = len(outcomes)
        if "severity" in count:
            need.append(f"{sum(s == count['severity'] for s in severities)} of {n}")
        else:
            kw = count["keyword"]
            low = [(o or "").lower() for o in outcomes]
            if not any(kw in o for o in low):
                need.append("not recorded")
            else:
                hits = sum(kw in o and not re.search(rf"\bno (?:new )?{re.escape(kw)}", o) for o in low)
                need.append(f"{hits} of {n}")
    return need


def _one(rt: Runtime, item: dict[str, Any], scan_id: str, llm: LLM | None) -> ItemResult:
    exp = item["expect"]
    started = time.perf_counter()
    result, res = answer_readonly(rt, scan_id, item["question"], llm)
    seconds = time.perf_counter() - started
    a = res.answer
    behaviour = exp["behaviour"]
    answered = res.path in {"extractive", "llm"}
    cited_ok = set(a.citedCaseIds) <= set(result.case_ids)
    stray: tuple[str, ...] = ()
    facts_ok = False
    if result.bundle is not None and answered:
        allowed = allowed_numbers(result.bundle) | (res.facts.numbers() if res.facts else set())
        stray = tuple(n for n in numbers_in(a.answer) if n not in allowed)
        n = min(len(result.case_ids), rt.settings.ask.max_cited_cases)
        need = required_facts(
            exp, [c.outcome for c in result.bundle.similarCases[:n]], list(result.severities[:n])
        )
        facts_ok = all(f.lower() in a.answer.lower() for f in need)
    if behaviour == "answer":
        ok = facts_ok
    elif behaviour == "guideline":
        carried = "ask it there" in a.answer  # the pointer says whether Guideline QA covers it
        want = item["question"].strip() if carried else None
        ok = is_pointer(a.answer) and not a.citedCaseIds and res.guideline_question == want
    elif behaviour == "insufficient":
        ok = a.answer == INSUFFICIENT_DATA and not a.citedCaseIds
    else:
        ok = a.answer == NO_COMPARABLE_CASES
    return ItemResult(
        id=item["id"],
        split=item["split"],
        behaviour=behaviour,
        category=exp.get("category", "answerable"),
        ok=ok,
        answered=answered,
        facts_ok=facts_ok,
        invalid_citations=0 if cited_ok else len(set(a.citedCaseIds) - set(result.case_ids)),
        stray_numbers=stray,
        seconds=seconds,
        intent=res.intent,
        answer=a.answer,
        expected_intent=item.get("intent", ""),
        path=res.path,
        reason=res.reason,
    )


def run_eval(rt: Runtime, items: list[dict[str, Any]], llm: LLM | None = None) -> list[ItemResult]:
    """Answer every item on ``rt`` (a runtime over the seeded demo data)."""
    scans = _scan_ids(rt)
    out = []
    for item in items:
        sid = scans.get((item["user"], int(item["scan"])))
        if sid is None:
            raise NotFoundError(
                f"Demo scan {item['user']}[{item['scan']}] is missing",
                hint="The evaluation needs the demo data: run `python -m core seed-demo` first.",
            )
        out.append(_one(rt, item, sid, llm))
    return out


def _rate(results: list[ItemResult]) -> float | None:
    return round(sum(r.ok for r in results) / len(results), 4) if results else None


def summarise(results: list[ItemResult]) -> dict[str, Any]:
    """Metrics of one split (see the module docstring) and whether the targets hold."""
    answerable = [r for r in results if r.behaviour == "answer"]
    handled = [r for r in results if r.category in {"absent_condition", "out_of_scope"}]
    secs = [r.seconds for r in results] or [0.0]
    out: dict[str, Any] = {
        "items": len(results),
        "answerable": len(answerable),
        "answer_rate": round(sum(r.answered for r in answerable) / len(answerable), 4) if answerable else None,
        "fact_accuracy": _rate(answerable),
        "absent_condition_handled": _rate([r for r in handled if r.category == "absent_condition"]),
        "out_of_scope_handled": _rate([r for r in handled if r.category == "out_of_scope"]),
        "handled_rate": _rate(handled),
        "fail_closed_handled": _rate([r for r in results if r.category == "fail_closed"]),
        "invalid_citations": sum(r.invalid_citations for r in results),
        "numbers_not_in_evidence": sum(len(r.stray_numbers) for r in results),
        "seconds_per_question": {
            "mean": round(statistics.fmean(secs), 4),
            "p50": round(statistics.median(secs), 4),
            "max": round(max(secs), 4),
        },
        "by_intent": {},
    }
    answered = [r for r in results if r.answered]
    out["model_answers"] = sum(r.path == "llm" for r in answered)
    out["model_fallbacks"] = dict(Counter(r.reason or "" for r in answered if r.path == "extractive" and r.reason))
    labelled = [r for r in results if r.category not in {"absent_condition", "fail_closed"}]
    # How often the recognised intent equals the item's label (reported, not a target: the behaviour is).
    out["intent_accuracy"] = (
        round(sum(r.intent == r.expected_intent for r in labelled) / len(labelled), 4) if labelled else None
    )
    for intent in sorted({r.intent or "none" for r in results}):
        group = [r for r in results if (r.intent or "none") == intent]
        out["by_intent"][intent] = {"items": len(group), "ok": sum(r.ok for r in group)}
    out["targets_met"] = bool(
        (out["answer_rate"] or 0) >= TARGETS["answer_rate"]
        and (out["handled_rate"] or 0) >= TARGETS["handled_rate"]
        and out["invalid_citations"] == 0
        and out["numbers_not_in_evidence"] == 0
    )
    return out
