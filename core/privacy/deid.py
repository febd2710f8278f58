"""De-identification of free text before it leaves the process.

:class:`Deidentifier` replaces, in text already normalised by
:func:`core.privacy.text.normalise` (so a zero-width space or a Cyrillic letter
cannot split a name or a number):

* ``[NAME]``: every name of the user table (display names, their parts,
  usernames), matched as whole words, case-insensitively; then other people's
  names found by title, relation, position or name dictionary
  (:mod:`core.privacy.freetext`);
* ``[ADDRESS]``, ``[POSTCODE]``: street addresses with their town and postcode,
  UK postcodes and US ZIP codes (:mod:`core.privacy.freetext`);
* ``[EMAIL]``, ``[PHONE]``, ``[DATE]`` (ISO, day-month-year with ``/ . -``,
  month names either way round, dates of birth with only a year);
* ``[RECORD]``: a number after a record keyword (MRN, record, hospital, NHS,
  patient id, chart, account), and letter-digit tokens with 6+ digits;
* ``[NUMBER]``: any other run of 6+ digits, with or without spaces or dashes.

Case ids (``HC-00012``) are not identifiers of a patient and pass: answers must
cite them. The patterns were measured against the PHI scrubbers named in
docs/PRIVACY.md on 200 synthetic sentences (``bench/phi_bench.py``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from core.privacy.freetext import find_addresses, find_names
from core.privacy.text import normalise

__all__ = ["PATTERNS", "Deidentifier", "Finding", "name_variants"]

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|"
    r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
)
_DAY = r"(?:0?[1-9]|[12]\d|3[01])(?:st|nd|rd|th)?"
_RECORD_KEY = (
    r"(?:mrn|medical record(?: number| no\.?)?|record(?: number| no\.?| #)?|hospital(?: number| no\.?| id)|"
    r"nhs(?: number| no\.?)?|patient(?: id| number| no\.?)|chart(?: number| no\.?)?|account(?: number| no\.?)?|"
    r"case ref(?:erence)?|ssn|social security(?: number)?|insurance(?: number| no\.?)?|id(?: number| no\.?)?)"
)

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("EMAIL", re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")),
    (
        "DATE",
        re.compile(
            rf"\b(?:(?:dob|d\.o\.b\.?|date of birth|born(?: on| in)?)[:\s]+(?:{_DAY}\s+)?(?:{_MONTH}\s+)?\d{{4}}(?![-/.]\d))"
            rf"|\b\d{{4}}[-/.]\d{{1,2}}[-/.]\d{{1,2}}\b"
            rf"|\b\d{{1,2}}[-/.]\d{{1,2}}[-/.](?:\d{{4}}|\d{{2}})\b"
            rf"|\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+\d{{2,4}}\b"
            rf"|\b{_MONTH}\s+{_DAY},?\s+\d{{2,4}}\b"
            rf"|\b{_DAY}[-\s]{_MONTH}[-\s]\d{{2,4}}\b"
        ),
    ),
    ("RECORD", re.compile(rf"\b{_RECORD_KEY}\s*[:#.-]?\s*(?:is\s+)?(?=[a-z0-9-]*\d)[a-z0-9][a-z0-9/-]{{3,}}")),
    ("RECORD", re.compile(r"\b[a-z]{1,4}\d{6,}[a-z]?\b")),
    (
        "PHONE",
        re.compile(r"(?<![\w.])(?:\+\d{1,3}[\s.-]?)?(?:\(\d{2,5}\)[\s.-]?)?\d{2,6}(?:[\s.-]\d{2,6}){1,4}(?![\w])"),
    ),
    ("NUMBER", re.compile(r"(?<![\w.])(?<![a-z]-)\d{6,}(?![\w])")),  # "HC-000123" is a case id
)
_TITLES = frozenset({"dr", "mr", "mrs", "ms", "miss", "prof", "sir", "dame", "rev"})


def name_variants(names: Iterable[str]) -> set[str]:
    """Normalised full names, their parts of 2+ letters (titles dropped) and username parts."""
    out: set[str] = set()
    for raw in names:
        full = normalise(raw or "").strip()
        if not full:
            continue
        out.add(full)
        for part in [*full.split(), *re.split(r"[\s._'-]+", full)]:
            part = part.strip(".,")
            if len(part) >= 2 and part not in _TITLES:
                out.add(part)
    return out


@dataclass(frozen=True)
class Finding:
    """One identifier found: its type and where it sits in the normalised text."""

    kind: str
    start: int
    end: int
    text: str


def _digits(text: str) -> int:
    return sum(ch.isdigit() for ch in text)


class Deidentifier:
    """Finds and replaces identifiers; names come from ``names`` (a list or a callable read per call)."""

    def __init__(self, names: Iterable[str] | Callable[[], Iterable[str]] = ()) -> None:
        self._names = names if callable(names) else list(names)
        self._compiled: tuple[tuple[str, ...], re.Pattern[str] | None] = ((), None)

    def _name_pattern(self) -> re.Pattern[str] | None:
        names = tuple(self._names() if callable(self._names) else self._names)
        if names != self._compiled[0]:  # compile once per change of the user table, not per message
            variants = sorted(name_variants(names), key=len, reverse=True)
            alternatives = "|".join(re.escape(v) for v in variants)
            self._compiled = (names, re.compile(rf"(?<![\w])(?:{alternatives})(?![\w])") if variants else None)
        return self._compiled[1]

    def find(self, text: str) -> list[Finding]:
        """Identifiers in ``normalise(text)``, left to right, without overlaps (earlier patterns win)."""
        low = normalise(text)
        spans: list[Finding] = []
        named = self._name_pattern()
        # an email goes first, whole: its local part often holds a name
        patterns = [PATTERNS[0], ("NAME", named), *PATTERNS[1:]] if named is not None else list(PATTERNS)
        places = find_addresses(low)

        def add(kind: str, start: int, end: int) -> None:
            if not any(start < f.end and f.start < end for f in spans):
                spans.append(Finding(kind, start, end, low[start:end]))

        for kind, pattern in patterns:
            if kind == "DATE":  # addresses before dates and numbers: "12 Elm Street, Leeds LS1 4AP" is one
                for place, start, end in places:
                    add(place, start, end)
            for m in pattern.finditer(low):
                if kind == "PHONE" and not 9 <= _digits(m.group(0)) <= 15:
                    continue
                add(kind, m.start(), m.end())
        cased = normalise(text, casefold=False)
        if len(cased) == len(low):  # other people's names need the capitals (a rare longer fold loses them)
            for start, end in find_names(cased, places):
                add("NAME", start, end)
        return sorted(spans, key=lambda f: f.start)

    def scrub(self, text: str) -> str:
        """``text`` normalised (not case-folded) with every identifier replaced by ``[KIND]``."""
        shown = normalise(text, casefold=False)
        findings = self.find(shown)
        if len(normalise(shown)) != len(shown):  # a character that case-folds longer: work on folded text
            shown = normalise(shown)
        for f in reversed(findings):
            shown = shown[: f.start] + f"[{f.kind}]" + shown[f.end :]
        return shown
