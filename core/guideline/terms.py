"""The loaded documents' own words: what a question's shorthand and misspellings stand for (pure).

Scope by coverage (issue 24) asks whether a loaded document covers a question, whatever its words.
A clinician writes "PZA dose, 48 kg", "EMB in a pt with liver disease (intl)", "rifampcin" or
"HWs"; the documents write pyrazinamide, ethambutol, patient, international, rifampicin and health
workers. A :class:`Vocabulary` is read from the documents' chunk text once and resolves a question
word in one of four ways, in order:

1. **known**: the word, or the word less an inflection ending ("monitored", "kidneys"), starts a word
   of the documents (after the misspelling check, a long word is also known by its first ``prefix`` letters);
2. **defined**: the documents define it as an abbreviation, "air changes per hour (ACH)" or an
   abbreviations list line "NTP: National TB Programme" (the Schwartz-Hearst rule: the short form's
   letters appear in order in the long form, the first at a word start);
3. **misspelt**: a word of the documents of the same first letter within edit distance 1 (2 from nine
   letters), the most frequent one when several are;
4. **contracted**: a short word (2-5 letters) whose letters appear in order in a longer word of the
   documents starting with the same letter ("intl" in international, "PZA" in pyrazinamide), the most
   frequent such word.

A word none of these reach is either **everyday** English, a whole word of a general-English WordPiece
vocabulary (:func:`everyday_words`: the one shipped with all-MiniLM-L6-v2, learned from general text:
"goes", "booklet", "timed"), or **unknown**: a specialist word nothing loaded is about (such a
vocabulary splits "paracetamol", "dengue", "isotretinoin" into pieces). :func:`resolve_question`
reports the question's topic words so; Guideline QA answers a question its router calls out of domain
only when no topic word is unknown and everyday words are few beside the known ones (and the retrieval
and gates pass), and adds each resolved word's spelling in the documents to the search query.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from rapidfuzz.distance import Levenshtein

__all__ = ["TermReport", "Vocabulary", "everyday_words", "long_form", "resolve_question", "shipped_everyday_words"]

_WORD = re.compile(r"[a-z][a-z0-9'-]*[a-z0-9]|[a-z]")
# "long form (SF)": a parenthesised short form of 2-10 characters with a capital letter
_PAREN = re.compile(r"\(([A-Za-z][A-Za-z0-9/-]{1,9})\)")
# An abbreviations list line: "- NTP: National TB Programme", "ACH: air changes per hour"
_LIST = re.compile(r"^\s*(?:[-*\u2022]\s*)?([A-Za-z][A-Za-z0-9/-]{1,9}):\s+([A-Za-z][^\n:;]{3,80})$", re.M)


def long_form(short: str, words: str) -> str | None:
    """The shortest tail of ``words`` that ``short`` abbreviates (Schwartz-Hearst), or ``None``.

    Every letter or digit of ``short`` must appear in order in the tail, the first one at the start
    of a word; ``long_form("ACH", "at least 12 air changes per hour")`` is ``"air changes per hour"``.
    """
    sf = [c.lower() for c in short if c.isalnum()]
    lf = words.strip()
    if len(sf) < 2 or not lf or not sf[0].isalpha():
        return None
    s, i = len(sf) - 1, len(lf) - 1
    while s >= 0:
        while i >= 0 and (lf[i].lower() != sf[s] or (s == 0 and i > 0 and lf[i - 1].isalnum())):
            i -= 1
        if i < 0:
            return None
        i -= 1
        s -= 1
    start = i + 1
    found = lf[start:].strip()
    # the long form is more than the short form spelt out again, and not one glued word ("ACHs (ACH)")
    return found if len(found) > len(sf) + 1 and " " in found else None


@dataclass
class Vocabulary:
    """The words of some documents (with their chunk counts) and the abbreviations they define."""

    counts: Counter[str] = field(default_factory=Counter)
    defined: dict[str, str] = field(default_factory=dict)
    prefix: int = 5
    by_doc: dict[str, Counter[str]] = field(default_factory=dict)  # document -> its words' chunk counts
    identities: dict[str, frozenset[str]] = field(default_factory=dict)  # document -> title, issuer, file words
    _prefixes: set[str] = field(default_factory=set, repr=False)
    _by_letter: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @classmethod
    def from_texts(cls, texts: Iterable[str], prefix: int = 5) -> Vocabulary:
        """The vocabulary of ``texts`` (chunk texts, headings included)."""
        vocab = cls(prefix=prefix)
        for text in texts:
            vocab.add(text)
        return vocab.ready()

    def add(self, text: str, doc_id: str = "") -> None:
        """Count the words of one chunk (of document ``doc_id``) and collect the abbreviations it defines."""
        words = set(_WORD.findall(text.lower()))
        self.counts.update(words)
        if doc_id:
            self.by_doc.setdefault(doc_id, Counter()).update(words)
        for m in _PAREN.finditer(text):
            short = m.group(1)
            if sum(c.isupper() for c in short) < 2:  # "(a)", "(ii)", "(Children)": not abbreviations
                continue
            before = text[max(0, m.start() - 120) : m.start()].split()
            tail = " ".join(before[-min(len(short) + 5, 2 * len(short) + 2) :])
            found = long_form(short, re.split(r"[.;:()\[\]]", tail)[-1])
            if found:
                self.defined.setdefault(short.lower(), found.lower())
        for m in _LIST.finditer(text):
            if sum(c.isupper() for c in m.group(1)) < 2:  # "Children: ...", "Note: ...": a label, not a short form
                continue
            found = long_form(m.group(1), m.group(2))
            if found and found.lower().startswith(m.group(2).strip().lower()[:1]):
                self.defined.setdefault(m.group(1).lower(), m.group(2).strip().lower())

    def ready(self) -> Vocabulary:
        """Build the lookup tables after the last :meth:`add` (returns ``self``)."""
        self._prefixes = {w[: self.prefix] for w in self.counts if len(w) >= self.prefix}
        by: dict[str, list[str]] = {}
        for word, _ in self.counts.most_common():
            if word.isalpha() and len(word) >= 3:
                by.setdefault(word[0], []).append(word)
        self._by_letter = by
        return self

    @classmethod
    def merge(cls, parts: Iterable[Vocabulary]) -> Vocabulary:
        """One vocabulary over several (counts added; the first definition of a short form kept)."""
        out = cls()
        for part in parts:
            out.prefix = part.prefix
            out.counts.update(part.counts)
            out.by_doc.update(part.by_doc)
            out.identities.update(part.identities)
            for short, full in part.defined.items():
                out.defined.setdefault(short, full)
        return out.ready()

    def known(self, word: str) -> bool:
        """Whether ``word`` is a word of the documents (a long word: by its first ``prefix`` letters)."""
        return word in self.counts or (len(word) > self.prefix and word[: self.prefix] in self._prefixes)

    def _inflected(self, word: str) -> bool:
        """Whether ``word`` less an inflection ending ("monitored", "kidneys") starts a word of the documents."""
        for end in ("ies", "es", "s", "ed", "ing", "ly"):
            stem = word.removesuffix(end)
            if stem != word and len(stem) >= 4 and any(w.startswith(stem) for w in self._by_letter.get(stem[0], [])):
                return True
        return False

    def resolve(self, word: str) -> tuple[str, str] | None:
        """``(how, spelling in the documents)``: how is known, defined, misspelt or contracted; ``None``: unknown."""
        word = word.lower()
        if word in self.defined:
            return "defined", self.defined[word]
        if word in self.counts or self._inflected(word):
            return "known", word
        plain = word.replace("-", "")
        if not plain.isalpha():
            return ("known", word) if self.known(word) else None
        same = self._by_letter.get(plain[0], [])
        if len(plain) >= 6:
            limit = 2 if len(plain) >= 9 else 1
            near = [w for w in same if abs(len(w) - len(plain)) <= limit
                    and Levenshtein.distance(plain, w, score_cutoff=limit) <= limit]  # fmt: skip
            if near:  # same is ordered by count: the first is the most frequent
                return "misspelt", near[0]
        if self.known(word):  # an inflection of a word of the documents ("monitored" beside "monitoring")
            return "known", word
        if 2 <= len(plain) <= 5:
            longer = next((w for w in same if len(w) >= len(plain) + 2 and _in_order(plain, w)), None)
            if longer:
                return "contracted", longer
        return None


def _in_order(short: str, word: str) -> bool:
    """Whether the letters of ``short`` appear in ``word`` in order."""
    rest = iter(word)
    return all(c in rest for c in short)


@lru_cache(maxsize=2)
def everyday_words(vocab_txt: Path) -> frozenset[str]:
    """The whole words (not ``##`` pieces, not ``[SPECIAL]``) of a WordPiece ``vocab.txt``."""
    words = vocab_txt.read_text(encoding="utf-8").split("\n")
    return frozenset(w for w in words if w.isalpha() and len(w) > 1)


def shipped_everyday_words() -> frozenset[str]:
    """General-English whole words (the WordPiece vocabulary shipped with all-MiniLM-L6-v2), or none."""
    from core.embed.sbert import default_minilm_path
    from core.errors import ConfigError

    try:
        return everyday_words(default_minilm_path() / "vocab.txt")
    except (ConfigError, OSError):  # without it every word the documents lack counts as unknown: stricter
        return frozenset()


@dataclass(frozen=True)
class TermReport:
    """A question's topic words: how each resolved in the documents, the everyday ones they lack, the unknown."""

    resolved: dict[str, tuple[str, str]]
    unknown: list[str]
    everyday: list[str] = field(default_factory=list)
    most_everyday: int = 1
    min_known: int = 3
    named: str | None = None  # the loaded document the question names (core.guideline.naming), if one
    naming: frozenset[str] = frozenset()  # the question's words that name a document: no topic to cover

    @property
    def expansions(self) -> dict[str, str]:
        """Question word -> the documents' spelling, for the words the documents write another way."""
        return {w: full for w, (how, full) in self.resolved.items() if how != "known" and full != w}

    @property
    def query_terms(self) -> list[str]:
        """The documents' spellings worth adding to a search query: definitions and corrected misspellings.

        A contraction is a guess among many words ("pt" fits patient and partnership), good enough to say
        that a document may know the word, not to steer the search.
        """
        return [full for w, (how, full) in sorted(self.resolved.items()) if how in ("defined", "misspelt") and full != w]

    def rewrite(self, question: str) -> str:
        """``question`` with its misspellings in the documents' spelling ("rifampcin" -> "rifampicin").

        Abbreviations stay as written (their long forms go to the search query only: spelt out in the
        question they would add words every answer sentence is then expected to share), and so do contractions.
        """
        out = question
        for word, (how, full) in self.resolved.items():
            if how != "misspelt" or full == word:
                continue
            pattern = re.compile(rf"(?<![\w-]){re.escape(word)}(?![\w-])", re.IGNORECASE)
            out = pattern.sub(full, out, count=1)
        return out

    @property
    def covered(self) -> bool:
        """Whether the documents know the question's words: none unknown, and at most ``most_everyday``
        everyday words they lack, each only beside ``min_known`` resolved words ("malaria treatment" is not
        covered by TB documents that know "treatment")."""
        if not self.resolved or self.unknown:
            return False
        return not self.everyday or (len(self.everyday) <= self.most_everyday and len(self.resolved) >= self.min_known)


def resolve_question(
    question: str, vocab: Vocabulary, stopwords: Collection[str], filler: Collection[str],
    everyday: Collection[str] = frozenset(), most_everyday: int = 1, min_known: int = 3,
) -> TermReport:  # fmt: skip
    """Resolve the question's topic words (words minus stopwords, filler and numbers) against ``vocab``.

    A word no document knows is ``everyday`` when it is in ``everyday`` (:func:`everyday_words`), else unknown.
    """
    skip = set(filler) | set(stopwords)
    # raw words, not key tokens: plural folding makes "rabies" a 4-letter "raby" that contracts to anything
    raw = {w.strip("'-") for w in _WORD.findall(question.lower())}
    words = sorted(w for w in raw if len(w) > 1 and w not in skip and not any(c.isdigit() for c in w))
    resolved: dict[str, tuple[str, str]] = {}
    unknown: list[str] = []
    common: list[str] = []
    for word in words:
        parts = [word, *(p for p in word.split("-") if len(p) > 1)] if "-" in word else [word]
        got = next((r for p in parts if (r := vocab.resolve(p))), None)
        if got is not None:
            resolved[word] = got
        elif all(p in everyday for p in parts if p != word or "-" not in word):
            common.append(word)
        else:
            unknown.append(word)
    return TermReport(resolved, unknown, common, most_everyday, min_known)
