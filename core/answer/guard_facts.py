"""The facts a guarded answer may state, computed from one bundle.

:func:`facts_for` reads a :class:`~core.contracts.BundleResult` (the bundle and
the case ids beside it) and returns what :mod:`core.answer.guard` allows:
case ids in every spelling, numbers, words, and the verbatim bundle phrases
that are history rather than advice. It reads only fields that exist today,
through ``model_dump``, so fields added to the bundle later are taken in as
further facts without a change here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from core.answer.claims import CaseOutcomes
from core.answer.facts import AnswerFacts
from core.answer.understand import EVENTS
from core.contracts import BundleResult
from core.privacy.text import normalise
from core.text import LETTERS, content_words, number_values, stem

__all__ = ["BundleFacts", "IdMention", "add_answer_facts", "date_spellings", "facts_for", "find_ids"]

_NEGATION = re.compile(
    r"\b(?:not|no|none|nor|neither|never|without)\b|\bn't\b|\bnot (?:recorded|mentioned|documented|reported)\b"
)
_MONTHS = (
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
)
_GENERIC_ID = re.compile(r"\b([a-z]{1,6})[ \t]?[-_#:][ \t]?(\d{1,9})\b")


@dataclass(frozen=True)
class IdMention:
    """One case id as written in a sentence, and the canonical id it names (``None`` when unknown)."""

    start: int
    end: int
    written: str
    canonical: str | None


@dataclass
class BundleFacts:
    """Everything a sentence may rest on."""

    ids: dict[tuple[str, int], str] = field(default_factory=dict)
    numbers: set[float] = field(default_factory=set)
    words: set[str] = field(default_factory=set)
    stems: set[str] = field(default_factory=set)
    phrases: list[str] = field(default_factory=list)
    advice_free_reports: list[str] = field(default_factory=list)
    text: str = ""
    dates: list[str] = field(default_factory=list)
    not_recorded: dict[str, tuple[str, ...]] = field(default_factory=dict)
    outcomes: CaseOutcomes | None = None  # each case's events, for the claim checker (core.answer.claims)

    def allows_number(self, value: float) -> bool:
        """True when ``value`` is a bundle number, a percentage of one, or a count of the cases."""
        return any(abs(value - n) < 0.051 for n in self.numbers)

    def not_recorded_words(self, plain: str) -> set[str]:
        """Words of events the facts state as not recorded, when ``plain`` says "not recorded" (or "none")."""
        if not self.not_recorded or not _NEGATION.search(plain):
            return set()
        return {w for words in self.not_recorded.values() for w in words}

    def knows_word(self, word: str) -> bool:
        """True when ``word`` (normalised) or its stem occurs in the bundle."""
        return word in self.words or stem(word) in self.stems


def _key(case_id: str) -> tuple[str, int] | None:
    m = re.fullmatch(r"([a-z]{1,6})[-_ ]?0*(\d{1,9})", normalise(case_id))
    return (m.group(1), int(m.group(2))) if m else None


def facts_for(result: BundleResult) -> BundleFacts:
    """The allowed facts of ``result`` (which must hold a bundle)."""
    bundle = result.bundle
    assert bundle is not None
    facts = BundleFacts()
    for cid in result.case_ids:
        if (key := _key(cid)) is not None:
            facts.ids[key] = cid
    dump = normalise(bundle.model_dump_json().replace("_", " "))
    severities = " ".join(s for s in result.severities if s)
    n = len(bundle.similarCases)
    facts.text = dump
    facts.numbers |= set(number_values(dump))
    for s in [c.similarity for c in bundle.similarCases] + [bundle.currentScan.confidence]:
        facts.numbers |= {round(s * 100), round(s * 100, 1), s}
    facts.numbers |= {float(k) for k in range(n + 1)}
    facts.numbers |= {round(100 * k / n) for k in range(n + 1)} if n else set()
    facts.numbers |= {100 * k / n for k in range(n + 1)} if n else set()  # "33.3%", "33.33%" of 1 in 3
    facts.words = set(content_words(dump + " " + normalise(severities)))
    facts.stems = {stem(w) for w in facts.words}
    texts: list[str] = [c.outcome or "" for c in bundle.similarCases]
    texts += [c.diagnosis for c in bundle.similarCases] + [bundle.currentScan.diagnosis]
    texts += list(bundle.patientContext.pastConditions)
    texts += [bundle.currentScan.anatomy, (bundle.currentScan.region or "").replace("_", " ")]
    facts.phrases = sorted({normalise(t) for t in texts if t.strip()}, key=len, reverse=True)
    for phrase in facts.phrases:  # "multiple sclerosis" -> "ms", "community-acquired pneumonia" -> "cap"
        parts = LETTERS.findall(phrase)
        if 2 <= len(parts) <= 5:
            facts.words.add("".join(p[0] for p in parts))
    for date in result.prior_dates:  # the signing dates the composed answer states
        facts.dates += date_spellings(date)
    facts.dates.sort(key=len, reverse=True)
    facts.numbers |= {float(d) for d in result.prior_days_before}
    reports = [t for r in bundle.priorReports for t in (r.findings, r.impression)]
    facts.advice_free_reports = sorted({normalise(t) for t in reports if t.strip()}, key=len, reverse=True)
    facts.outcomes = CaseOutcomes.of(result)
    return facts


def date_spellings(iso: str) -> list[str]:
    """Normalised spellings of an ISO date: "2026-03-14", "14 march 2026", "march 14, 2026", "14/03/2026"."""
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", iso.strip())
    if not m:
        return []
    y, mo, d = m.group(1), int(m.group(2)), int(m.group(3))
    if not 1 <= mo <= 12:
        return [iso]
    month = _MONTHS[mo - 1]
    return [iso, f"{d} {month} {y}", f"{d:02d} {month} {y}", f"{month} {d}, {y}", f"{month} {d} {y}",
            f"{d:02d}/{mo:02d}/{y}", f"{d}/{mo}/{y}"]


def add_answer_facts(facts: BundleFacts, answer: AnswerFacts, plain_ok: Callable[[str], bool]) -> BundleFacts:
    """Take the facts computed in code (:class:`~core.answer.facts.AnswerFacts`) in as supported content.

    Adds the numbers the composed answer states (counts, percentages; a date's parts only as the
    whole date, see :attr:`BundleFacts.dates`), its verbatim phrases (a prior report's text only when
    ``plain_ok`` accepts it, so injected advice stays refused), the region in words, and the events
    counted: an event counted as recorded is an allowed word, an event recorded by no outcome is
    allowed only in a sentence that says so ("Death is not recorded in the similar cases").
    """
    if answer.n:  # counts and shares over the cited cases ("1 of 3", "33%", "33.33%")
        facts.numbers |= {float(k) for k in range(answer.n + 1)}
        facts.numbers |= {100 * k / answer.n for k in range(answer.n + 1)}
        facts.numbers |= {float(round(100 * k / answer.n)) for k in range(answer.n + 1)}
    priors = {normalise(t) for p in answer.priors for t in (p.findings, p.impression) if t.strip()}
    for number in answer.numbers():
        if "-" in number:
            continue
        if not any(number in d.split("-") for d in (p.date or "" for p in answer.priors)):
            facts.numbers.add(float(number))
    for phrase in answer.phrases():
        text = normalise(phrase)
        if text and text not in facts.phrases and (text not in priors or plain_ok(text)):
            facts.phrases.append(text)
    if answer.region:
        region = normalise(answer.region.replace("_", " "))
        facts.phrases.append(region)
        facts.words |= set(content_words(region))
    facts.phrases.sort(key=len, reverse=True)
    events = {e.name: e for e in EVENTS}
    for name, count in answer.counts.items():
        event = events.get(name)
        said = [name, *(event.stems if event else ()), *(c for c in (event.cues if event else ()) if " " not in c)]
        words = tuple(dict.fromkeys(w for t in said for w in content_words(normalise(t)) if len(w) > 3))
        if count.recorded:
            facts.words |= set(words)
        else:
            facts.not_recorded[name] = words
    facts.stems = {stem(w) for w in facts.words}
    return facts


def find_ids(text: str, facts: BundleFacts) -> list[IdMention]:
    """Case ids in normalised ``text`` in any spelling ("HC-4", "hc 4", "HC-00004", "case 4")."""
    prefixes = {p for p, _ in facts.ids}
    alternatives = "|".join(sorted(map(re.escape, prefixes), key=len, reverse=True))
    patterns: Iterable[re.Pattern[str]] = [_GENERIC_ID]
    if alternatives:
        patterns = [re.compile(rf"\b({alternatives})[ \t]*[-_#:.]?[ \t]*(\d{{1,9}})\b"), _GENERIC_ID]
    found: list[IdMention] = []
    for pattern in patterns:
        for m in pattern.finditer(text):
            if any(m.start() < f.end and f.start < m.end() for f in found):
                continue
            key = (m.group(1), int(m.group(2)))
            if key not in facts.ids and m.group(0) in facts.text:
                continue  # a term of the bundle itself ("covid-19"), not a citation
            found.append(IdMention(m.start(), m.end(), m.group(0), facts.ids.get(key)))
    if len(prefixes) == 1:
        (only,) = prefixes
        for m in re.finditer(r"\bcase[ \t]*(?:id|no\.?|number|#)?[ \t]*[:#]?[ \t]*(\d{1,9})\b", text):
            if not any(m.start() < f.end and f.start < m.end() for f in found):
                found.append(IdMention(m.start(), m.end(), m.group(0), facts.ids.get((only, int(m.group(1))))))
    return sorted(found, key=lambda f: f.start)
