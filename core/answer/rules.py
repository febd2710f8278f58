"""The contract's answer rules as data and pure functions.

Allowed: comparing cases, similarity percentages, "Based on similar cases...",
case IDs, uncertainty. Forbidden: invented statistics, outside knowledge,
diagnoses beyond the evidence, "studies show", treatment advice, definitive
recommendations. These functions find the forbidden parts; :mod:`core.answer.guard`
removes them. What a *question* may ask is no longer decided by a word list here:
:mod:`core.answer.understand` recognises its intent and the entities it names.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.answer.vocabulary import known_condition_names
from core.contracts import ContextBundle

__all__ = [
    "CASE_ID_RE",
    "allowed_numbers",
    "forbidden_reason",
    "known_conditions",
    "numbers_in",
    "unsupported_conditions",
]

CASE_ID_RE = re.compile(r"\b[A-Z]{1,6}-\d{1,9}\b")
NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")

# Outside knowledge and appeals to literature.
_OUTSIDE = re.compile(
    r"\b(studies|research|literature|trials?|guidelines?|meta-analys\w*|evidence suggests|it is well known|"
    r"in the general population|statistically|according to)\b",
    re.I,
)
# Treatment advice: drugs, procedures and instructions to treat.
_TREATMENT = re.compile(
    r"\b(treat(?:ment|ed|ing)?|therap(?:y|ies|eutic)|prescri\w+|medicat\w+|drugs?|dos(?:e|es|age|ing)|mg|"
    r"antibiotics?|steroids?|corticosteroids?|chemotherap\w*|radiotherap\w*|surgery|surgical|operat(?:e|ion)|"
    r"resect\w*|chest drain|decompress\w*|bronchodilat\w*|inhaler|oxygen therapy|administer\w*|"
    r"start(?:ing)? (?:on|with)|should (?:receive|take|be given|be started))\b",
    re.I,
)
# Definitive recommendations and certainty the evidence cannot carry.
_DEFINITIVE = re.compile(
    r"\b(must|definitely|certainly|undoubtedly|guaranteed?|always|never|will (?:recover|die|survive|progress)|"
    r"(?:i|we) recommend|is recommended|the patient has)\b",
    re.I,
)

def numbers_in(text: str) -> list[str]:
    """Numbers in ``text``, ignoring the digits inside case IDs."""
    return NUMBER_RE.findall(CASE_ID_RE.sub(" ", text))


def allowed_numbers(bundle: ContextBundle) -> set[str]:
    """Every number an answer may state: those in the bundle, its percentages and counts."""
    allowed: set[str] = set(numbers_in(bundle.model_dump_json()))
    sims = [c.similarity for c in bundle.similarCases] + [bundle.currentScan.confidence]
    for s in sims:
        for digits in (0, 1):
            allowed.add(f"{round(s * 100, digits):g}")
    allowed |= {str(i) for i in range(len(bundle.similarCases) + 1)}
    return allowed


def known_conditions() -> set[str]:
    """Condition names the product knows of (the shipped vocabulary), lower case."""
    return set(known_condition_names())


def forbidden_reason(sentence: str) -> str | None:
    """Why a sentence breaks the answer rules, or ``None`` when it is allowed."""
    for name, pattern in (
        ("outside knowledge", _OUTSIDE),
        ("treatment advice", _TREATMENT),
        ("definitive recommendation", _DEFINITIVE),
    ):
        m = pattern.search(sentence)
        if m:
            return f"{name}: {m.group(0)!r}"
    return None


def unsupported_conditions(sentence: str, present: Iterable[str]) -> list[str]:
    """Known condition names in ``sentence`` that the bundle does not contain."""
    low = sentence.lower()
    have = {p.lower() for p in present}
    return [c for c in known_conditions() if c in low and c not in have]
