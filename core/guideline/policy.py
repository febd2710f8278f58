"""The policy stage: what Guideline QA refuses after its hand rules, by meaning and by the label's doses.

Three checks, in order, each refusing at stage ``policy`` before any answer is drafted:

1. the refusal patterns and the instruction detector (:func:`core.guideline.router.is_refused`), a
   floor of hand rules, in the router;
2. the request guard (:mod:`core.guideline.request_guard`): a question one of whose clauses reads,
   by meaning, as a request to refuse (an injection in any wording, a forged source, a demanded
   safety promise, self-harm, dosing hidden from the care team);
3. a dose the question proposes above everything the curated label documents for that drug and
   group (:func:`core.guideline.conflicts.asked_dose_conflict`): "confirm rifampicin 1200 mg daily
   for my patient" is refused with the label's own line, since Guideline QA does not confirm a dose
   its source contradicts. Ordinary dosing questions state no dose, or one the label documents.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from core.config.guideline import GuidelineQASettings
from core.guideline.conflicts import asked_dose_conflict, asked_dose_reason, drug_keys
from core.guideline.request_guard import RequestGuard
from core.guideline.sources import question_population
from core.kb.lexicon import DrugLexicon
from core.kb.protocols import Retriever

__all__ = ["PolicyRefusal", "policy_refusal"]

_AMOUNT = re.compile(r"\d\s*(?:mg|g|mcg|µg|micrograms?|milligrams?|grams?)\b", re.IGNORECASE)


@dataclass(frozen=True)
class PolicyRefusal:
    """A refused question: the reason shown, which check refused it, and what it measured."""

    reason: str
    check: str  # request_guard | asked_dose
    detail: dict[str, Any]


def policy_refusal(
    question: str, guard: RequestGuard | None, retriever: Retriever, cfg: GuidelineQASettings, lexicon: DrugLexicon,
) -> PolicyRefusal | None:  # fmt: skip
    """The refusal of ``question`` by checks 2 and 3 above, or ``None`` (an ordinary question)."""
    if guard is not None:
        p, clause = guard.score(question)
        if p >= guard.threshold:
            return PolicyRefusal(cfg.refusal_message, "request_guard", {"p_refuse": round(p, 4), "clause": clause})
    if _AMOUNT.search(question):  # only a question stating an amount proposes a dose
        keys = drug_keys(lexicon, cfg.drug_aliases)
        found = asked_dose_conflict(question, retriever, cfg, keys, question_population(question, cfg))
        if found is not None:
            return PolicyRefusal(asked_dose_reason(found), "asked_dose",
                                 {"stated": found.stated, "label": found.label, "drug": found.drug})  # fmt: skip
    return None
