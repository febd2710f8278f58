"""The prompt a language model sees: the contract's rules and the de-identified bundle."""

from __future__ import annotations

import hashlib
import json
import re

from core.contracts import INSUFFICIENT_DATA, BundleResult
from core.llm.base import Message
from core.privacy.egress import outbound_evidence

__all__ = ["SYSTEM_PROMPT", "ask_grammar", "ask_messages", "draft_messages", "prompt_hash", "relative_dates"]

SYSTEM_PROMPT = """You are a medical reasoning assistant for radiologists.
You MUST only use the provided scan data, similar historical cases and prior reports (the JSON below).
Allowed: compare cases, mention similarity percentages, say "Based on similar cases...", cite case IDs in parentheses such as (HC-00012), acknowledge uncertainty.
Forbidden: statistics that are not in the data, outside or internet knowledge, "studies show", diagnoses that no similar case has, treatment advice, drug or procedure suggestions, definitive recommendations.
Cite the case IDs each statement relies on, in parentheses: "Based on similar cases (HC-00012, HC-00004), ...".
If the data cannot answer the question, reply exactly: "Insufficient data to answer this question based on available cases."
When FACTS are given, they were computed from the data: answer by restating them in plain words, keeping every number and case ID exactly as written; never compute a new number.
Answer in at most five short sentences."""

DRAFT_PROMPT = """You are drafting a radiology report for a doctor to edit and sign.
Use only the provided scan data, similar historical cases and prior reports (the JSON below).
Write two sections headed IMPRESSION: and RECOMMENDATIONS:.
IMPRESSION describes the current scan's AI reading as not verified; never name case IDs and never present a prior report's findings as current.
RECOMMENDATIONS may only suggest follow-up imaging; never treatment, drugs or procedures.
Do not invent measurements or statistics."""


def _evidence(result: BundleResult) -> str:
    # allow-listed bundle fields, free text de-identified (core.privacy.egress); case ids stay for citing
    return json.dumps(outbound_evidence(result), ensure_ascii=False)


_DATED = re.compile(r"(\bof )?\b(\d{4}-\d{2}-\d{2})\b")


def relative_dates(text: str, result: BundleResult) -> str:
    """``text`` with every absolute date replaced: a prior report's signing date by its interval
    ("an earlier report, 74 days before this scan"), any other date by "an earlier date"."""
    days = dict(zip(result.prior_dates, result.prior_days_before, strict=False))

    def one(m: re.Match[str]) -> str:
        n = days.get(m.group(2))
        if n is None:
            return f"{m.group(1) or ''}an earlier date"
        when = "on the day of this scan" if n == 0 else f"{n} day{'s' if n != 1 else ''} before this scan"
        return f"signed {when}" if m.group(1) else when

    return _DATED.sub(one, text)


def ask_messages(result: BundleResult, question: str, facts: str | None = None) -> list[Message]:
    """Messages for a grounded answer; nothing identifying a patient is included.

    ``facts`` is the answer computed in code (:mod:`core.answer.compose`); the model may only
    rephrase it. No absolute date is sent: a prior report's signing date becomes its interval
    before this scan ("74 days before this scan"), any other date "an earlier date".
    """
    user = f"DATA:\n{_evidence(result)}\n\n"
    if facts:
        user += f"FACTS:\n{relative_dates(facts, result)}\n\n"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": f"{user}QUESTION: {question.strip()}"}]


def ask_grammar(result: BundleResult) -> str:
    """A llama.cpp GBNF grammar for an Ask AI answer: at most five sentences before and after one that
    cites this bundle's cases in parentheses, ``(HC-00012, HC-00004)``; or the exact
    insufficient-data reply.

    The service uses a model answer only when it cites a case of the bundle; a small local model
    often leaves the citation out, and this makes it impossible. Measured on the default model
    (docs/PRIVACY.md): a citation forced to the end of every sentence cut answers short ("Based
    on similar cases (HC-01007)."), and one forced into every sentence made the model ramble
    where a sentence had no case to cite ("no signed prior report"); so one cited sentence is
    required, anywhere. A sentence holds no full stop except inside one decimal number ("91.5",
    never "0.99.1"), nor a line break, link, markup or question mark. Only the ``llamacpp``
    backend honours it (:class:`~core.llm.base.GenParams`).
    """
    ids = " | ".join(json.dumps(i) for i in dict.fromkeys(result.case_ids)) or '"none"'
    return "\n".join(
        (
            f"root ::= {json.dumps(INSUFFICIENT_DATA)} | (plain \" \"){{0,4}} cited (\" \" (plain | cited)){{0,4}}",
            'plain ::= [A-Z0-9] body "."',
            'cited ::= [A-Z0-9] body? cite (body? cite)* body? "."',
            'cite ::= " (" id (", " id){0,4} ")"',
            "body ::= number? (char+ number?)+ | number",
            "char ::= [^.!?()0-9\\n\\r<>\\[\\]*#`|]",
            'number ::= [0-9]+ ("." [0-9]+)?',
            f"id ::= {ids}",
        )
    )


def draft_messages(result: BundleResult) -> list[Message]:
    """Messages for a report draft."""
    return [{"role": "system", "content": DRAFT_PROMPT}, {"role": "user", "content": f"DATA:\n{_evidence(result)}"}]


def prompt_hash(messages: list[Message]) -> str:
    """sha256 of the exact prompt, for the audit log (the text itself is never stored)."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()
