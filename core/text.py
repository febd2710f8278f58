"""One text toolkit: word tokens, stems, sentences, stop words, number words and phrase matching.

Shared by the answer guard (:mod:`core.answer.guard`, which checks a model's text after
:func:`core.privacy.text.normalise`) and the Guideline QA gates (:mod:`core.guideline.gates`,
which compare bullets with guideline and label chunks). Where the two need different rules
both live here, named for what they read, so neither grows its own copy:

========================  ====================================  ==================================
                          model answers (the guard)             guideline evidence (the gates)
========================  ====================================  ==================================
words                     :func:`content_words` (letters,       :func:`key_tokens` (letters and
                          possessives stripped)                 digits, inner ``-'.`` kept)
stems                     :func:`stem` (a light suffix strip)   :func:`fold_plural` (plurals only)
sentences                 :func:`answer_sentences` (a line      :func:`chunk_sentences` (one per
                          break always splits)                  line, bullets and pipes stripped)
stop words                :data:`STOPWORDS` plus the guard's    :data:`STOPWORDS` plus the
                          own (``guard_lexicon``)               ``guideline.stopwords`` setting
========================  ====================================  ==================================

:func:`number_values` reads numbers in digits or words ("nine in ten", "five hundred");
:func:`phrase_pattern` and :func:`find_phrases` match whole words. All pure functions.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Collection, Iterable

__all__ = [
    "LETTERS",
    "STOPWORDS",
    "answer_sentences",
    "chunk_sentences",
    "contains_phrase",
    "content_words",
    "find_phrases",
    "fold_plural",
    "jaccard",
    "key_tokens",
    "number_values",
    "overlap_ratio",
    "phrase_pattern",
    "stem",
]

# English function words both the guard and the guideline gates treat as carrying no content.
STOPWORDS = frozenset(
    ["a", "about", "above", "after", "again", "against", "all", "also", "an", "and", "any", "are", "as", "at", "be", "been", "before", "being", "below", "between", "both", "but", "by", "can", "could", "did", "do", "does", "down", "during", "each", "few", "for", "from", "further", "had", "has", "have", "he", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "just", "me", "more", "most", "my", "no", "nor", "not", "of", "off", "on", "once", "only", "or", "other", "our", "out", "over", "own", "per", "same", "she", "so", "some", "such", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too", "under", "until", "up", "very", "was", "we", "were", "what", "when", "where", "which", "while", "who", "whom", "why", "will", "with", "within", "without", "would", "you", "your"]
)
LETTERS = re.compile(r"[a-z]+")

# --- words and stems ------------------------------------------------------------------------------------
_KEY_TOKEN = re.compile(r"[a-z0-9]+(?:[-'.][a-z0-9]+)*")
_CONTENT_WORD = re.compile(r"[a-z][a-z'-]*")
_SUFFIXES = ("ations", "ation", "ness", "ments", "ment", "ously", "ous", "ies", "ied", "ing", "ed", "ly", "s")


def fold_plural(token: str) -> str:
    """Fold simple English plurals so ``tests``/``test`` and ``doses``/``dose`` compare equal."""
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def key_tokens(text: str, stopwords: Collection[str]) -> set[str]:
    """Lowercase word tokens of ``text`` without stopwords and one-letter tokens, plurals folded."""
    return {fold_plural(t) for t in _KEY_TOKEN.findall(text.lower()) if t not in stopwords and len(t) > 1}


def content_words(text: str) -> list[str]:
    """Lower-case words of normalised ``text``, possessives and edge hyphens stripped."""
    out = []
    for w in _CONTENT_WORD.findall(text):
        w = w.strip("'-")
        w = w.removesuffix("'s").removesuffix("'")
        if w:
            out.append(w)
    return out


def stem(word: str) -> str:
    """A light suffix strip so inflections meet ("relapses"/"relapse", "recovery"/"recovered", "cases"/"case")."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:-1] if len(word) > 4 and word.endswith(("e", "y")) else word


def overlap_ratio(claim: set[str], evidence: set[str]) -> float:
    """|K_evidence ∩ K_claim| / |K_claim|; 0.0 for an empty claim (nothing to support)."""
    return len(claim & evidence) / len(claim) if claim else 0.0


def jaccard(a: set[str], b: set[str]) -> float:
    """|A ∩ B| / |A ∪ B|; 0.0 when both are empty."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


# --- sentences ------------------------------------------------------------------------------------------
_NEXT = r"(?=[A-Z0-9(\"'\[<!])"
_ANSWER_END = re.compile(rf"(?<=[.!?])\s+{_NEXT}|(?<=[.!?][\"')\]])\s+{_NEXT}|\n+")
_CHUNK_END = re.compile(r"(?<=[.!?;])\s+(?=[(\"'A-Z0-9•*-])")  # a chunk's ';' ends a clause worth its own line
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def answer_sentences(text: str) -> list[str]:
    """Sentences of a model's text (keeps decimals and case ids intact; a line break always splits)."""
    return [p.strip(" -•*\t>#") for p in _ANSWER_END.split(text.strip()) if p and p.strip(" -•*\t>#")]


def chunk_sentences(text: str) -> list[str]:
    """Sentences of an evidence chunk: one per line (lists, table rows), long lines split at sentence ends."""
    out: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line.strip()).strip(" |")
        if not line or line.startswith(">"):
            continue
        out.extend(s.strip() for s in _CHUNK_END.split(line) if s.strip())
    return out


# --- numbers --------------------------------------------------------------------------------------------
_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40,
    "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12,
}  # fmt: skip
_SCALES = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_FRACTIONS = {"half": 50.0, "halves": 50.0, "third": 33.0, "thirds": 33.0, "quarter": 25.0, "quarters": 25.0}
_DIGITS = re.compile(r"(?<![\w.])\d{1,3}(?:,\d{3})+(?![\d])|(?<![\w.])\d+(?:\.\d+)?")


def number_values(text: str) -> list[float]:
    """Every number in normalised ``text``: digits, number words ("five hundred", "twenty-five"), halves."""
    values = [float(m.group(0).replace(",", "")) for m in _DIGITS.finditer(text)]
    words = LETTERS.findall(text.replace("-", " "))
    current: float | None = None
    total = 0.0
    for w in [*words, ""]:
        if w in _UNITS:
            current = (current or 0) + _UNITS[w]
        elif w in _SCALES and (current is not None or total):
            total += (current or 1) * _SCALES[w]
            current = None
        elif w == "and" and (current is not None or total):
            continue
        else:
            if current is not None or total:
                values.append(total + (current or 0))
            current, total = None, 0.0
            if w in _FRACTIONS:
                values.append(_FRACTIONS[w])
    return values


# --- phrases --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=4096)
def phrase_pattern(phrase: str) -> re.Pattern[str]:
    """``phrase`` as whole words (no word character on either side); matched as given, so lower it first."""
    return re.compile(rf"(?<!\w){re.escape(phrase)}(?!\w)")


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words (case-insensitive)."""
    return bool(phrase_pattern(phrase.lower()).search(text.lower()))


def find_phrases(text: str, phrases: Iterable[str], prefix: bool = False) -> list[str]:
    """The phrases that occur in ``text`` (case-insensitive), in the order given.

    A phrase matches as whole words with an optional inflection (``test`` matches
    ``tests``, ``tested``, ``testing``), or, with ``prefix``, as a word start
    (``contraindicat`` matches ``contraindicated``).
    """
    lowered = text.lower()
    tail = "" if prefix else r"(?:s|es|d|ed|ing)?(?!\w)"
    return [p for p in phrases if re.search(rf"(?<!\w){re.escape(p.lower())}{tail}", lowered)]
