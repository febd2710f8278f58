"""The contract's answer rules as data and pure functions.

Allowed: comparing cases, similarity percentages, "Based on similar cases...",
case IDs, uncertainty. Forbidden: invented statistics, outside knowledge,
diagnoses beyond the evidence, "studies show", treatment advice, definitive
recommendations. These functions find the forbidden parts; :mod:`core.answer.guard`
removes them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.contracts import ContextBundle
from core.demo.catalog import CATALOG

__all__ = [
    "CASE_ID_RE",
    "allowed_numbers",
    "bundle_vocabulary",
    "content_tokens",
    "forbidden_reason",
    "known_conditions",
    "numbers_in",
    "split_sentences",
]

CASE_ID_RE = re.compile(r"\b[A-Z]{1,6}-\d{1,9}\b")
NUMBER_RE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?")
WORD_RE = re.compile(r"[a-z][a-z0-9'-]*")

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

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "been",
        "being",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "for",
        "from",
        "had",
        "has",
        "have",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "of",
        "on",
        "or",
        "our",
        "so",
        "than",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "to",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "any",
        "all",
        "about",
        "also",
        "there's",
        "it's",
        "what's",
        "he",
        "she",
        "his",
        "her",
        "him",
        "patient's",
        "scan's",
    ]
)
# Words a question about this scan may use without them being evidence: question forms,
# the product's own vocabulary, and generic clinical-course words.
QUESTION_VOCAB = frozenset(
    [
        "prognosis",
        "prognostic",
        "outcome",
        "outcomes",
        "likely",
        "likelihood",
        "expected",
        "expect",
        "similar",
        "similarity",
        "cases",
        "case",
        "compare",
        "comparison",
        "compared",
        "versus",
        "vs",
        "severity",
        "severe",
        "critical",
        "serious",
        "mild",
        "moderate",
        "high",
        "low",
        "risk",
        "risks",
        "diagnosis",
        "diagnoses",
        "diagnosed",
        "confidence",
        "confident",
        "certain",
        "certainty",
        "finding",
        "findings",
        "report",
        "reports",
        "prior",
        "previous",
        "earlier",
        "past",
        "change",
        "changes",
        "changed",
        "progression",
        "progress",
        "progressing",
        "course",
        "happen",
        "happened",
        "next",
        "follow-up",
        "followup",
        "follow",
        "up",
        "typical",
        "typically",
        "common",
        "commonly",
        "usual",
        "usually",
        "recover",
        "recovery",
        "recovered",
        "survive",
        "survival",
        "mortality",
        "die",
        "died",
        "death",
        "deaths",
        "patient",
        "patients",
        "scan",
        "scans",
        "image",
        "imaging",
        "study",
        "studies",
        "show",
        "tell",
        "explain",
        "summarise",
        "summarize",
        "summary",
        "look",
        "looks",
        "looking",
        "like",
        "ai",
        "model",
        "reading",
        "result",
        "results",
        "most",
        "least",
        "many",
        "much",
        "more",
        "less",
        "better",
        "worse",
        "difference",
        "different",
        "differ",
        "same",
        "other",
        "others",
        "rate",
        "age",
        "old",
        "young",
        "sex",
        "male",
        "female",
        "man",
        "woman",
        "history",
        "historical",
        "memory",
        "evidence",
        "based",
        "shown",
        "seen",
        "see",
        "mean",
        "means",
        "meaning",
        "match",
        "matches",
        "matching",
        "top",
        "best",
        "closest",
        "nearest",
        "why",
        "should",
        "consider",
        "considered",
        "region",
        "anatomy",
        "kind",
        "type",
        "status",
        "current",
        "now",
        "time",
        "over",
        "years",
        "months",
        "weeks",
        "stable",
        "stability",
        "worsening",
        "improve",
        "improving",
        "improved",
        "any",
        "does",
        "did",
        "do",
        "anything",
        "something",
        "since",
        "agree",
        "agreement",
        "agrees",
        "consistent",
        "consistency",
        "support",
        "supports",
        "supported",
        "recent",
        "latest",
        "newest",
        "oldest",
    ]
)


def split_sentences(text: str) -> list[str]:
    """Sentences of an answer (keeps case IDs and decimals intact)."""
    parts = re.split(r"(?<=[.!?])\s+(?=[A-Z(\"'])|\n+", text.strip())
    return [p.strip(" -•*\t") for p in parts if p.strip(" -•*\t")]


def content_tokens(text: str) -> set[str]:
    """Lower-case words of ``text`` without stopwords."""
    return {w.strip("'-") for w in WORD_RE.findall(text.lower())} - STOPWORDS - {""}


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


def bundle_vocabulary(bundle: ContextBundle) -> set[str]:
    """Content words that occur in the bundle (diagnoses, outcomes, reports, anatomy, region)."""
    text = bundle.model_dump_json().replace("_", " ")
    return content_tokens(text)


def known_conditions() -> set[str]:
    """Condition names the product knows of (the case catalogue), lower case."""
    return {c.diagnosis.lower() for c in CATALOG}


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
