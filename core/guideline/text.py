"""Pure text helpers: key tokens, sentences, phrase matching, overlap and Jaccard.

"Key tokens" are the lowercase word tokens of a text minus the configured
stopwords, with a light plural folding (``tests`` -> ``test``) so a bullet and
its evidence match on meaning rather than inflection. Everything here is a
pure function of its arguments.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable

__all__ = [
    "contains_phrase",
    "find_phrases",
    "jaccard",
    "key_tokens",
    "overlap_ratio",
    "split_sentences",
]

_WORD = re.compile(r"[a-z0-9]+(?:[-'.][a-z0-9]+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+(?=[(\"'A-Z0-9•*-])")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def _fold(token: str) -> str:
    """Fold simple English plurals so ``tests``/``test`` and ``doses``/``dose`` compare equal."""
    if len(token) > 4 and token.endswith("ies"):
        return token[:-3] + "y"
    if len(token) > 3 and token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    return token


def key_tokens(text: str, stopwords: Collection[str]) -> set[str]:
    """Lowercase word tokens of ``text`` without stopwords and one-letter tokens, plurals folded."""
    return {_fold(t) for t in _WORD.findall(text.lower()) if t not in stopwords and len(t) > 1}


def overlap_ratio(claim: set[str], evidence: set[str]) -> float:
    """|K_evidence ∩ K_claim| / |K_claim|; 0.0 for an empty claim (nothing to support)."""
    return len(claim & evidence) / len(claim) if claim else 0.0


def jaccard(a: set[str], b: set[str]) -> float:
    """|A ∩ B| / |A ∪ B|; 0.0 when both are empty."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def split_sentences(text: str) -> list[str]:
    """Sentences of a chunk: one per line (lists, table rows), long lines split at sentence ends."""
    out: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line.strip()).strip(" |")
        if not line or line.startswith(">"):
            continue
        out.extend(s.strip() for s in _SENTENCE_END.split(line) if s.strip())
    return out


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    return re.compile(rf"(?<!\w){re.escape(phrase.lower())}(?!\w)")


def contains_phrase(text: str, phrase: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words (case-insensitive)."""
    return bool(_phrase_pattern(phrase).search(text.lower()))


def find_phrases(text: str, phrases: Iterable[str], prefix: bool = False) -> list[str]:
    """The phrases that occur in ``text`` (case-insensitive), in the order given.

    A phrase matches as whole words with an optional inflection (``test`` matches
    ``tests``, ``tested``, ``testing``), or, with ``prefix``, as a word start
    (``contraindicat`` matches ``contraindicated``).
    """
    lowered = text.lower()
    tail = "" if prefix else r"(?:s|es|d|ed|ing)?(?!\w)"
    return [p for p in phrases if re.search(rf"(?<!\w){re.escape(p.lower())}{tail}", lowered)]
