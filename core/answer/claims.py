"""Quantified and negated claims in a model's sentence, checked against the counts the code computed.

The guard's word checks let a sentence through when every word is in the bundle, so "none of the
similar patients died" passes when one case "Died of respiratory failure". This module reads a
sentence's *meaning* as a small typed claim and evaluates it over the facts computed from the
bundle (:func:`core.answer.facts.bundle_facts`, the same counts the composed answer states):

    sentence -> clauses (";", "but", "whereas", ", and" ...)
    clause   -> Claim(events, negated predicate?, quantifier, cited ids, population restriction)
    claim    -> a predicate over (k, n): k cases of the population of n record the predicate

A quantifier is a relation between k and n, not a word: "none", "no patient", "not a single",
"never" (k = 0); "all", "every", "each", "both", "without exception" (k = n); "not all" (k < n);
"most", "the majority", "more than half", "nearly all" (2k > n); "few", "a minority", "less
than half" (2k < n); "half" (2k = n, one either side); "some", "several", "at least one"
(k >= 1); "N of M", "N in M", "N/M" (k = N over a population of M); "N%" (within one point);
"at least / more than / fewer than / at most / exactly / only N"; a definite plural with no
quantifier ("the similar patients died", "such patients did not recover") reads as universal. A clause
that cites case ids without a quantifier claims the event of each cited case ("HC-00012 died";
"only HC-00012 died" claims exactly those). The predicate is an outcome event of
:data:`core.answer.understand.EVENTS` in any inflection ("died", "dying", "deaths"), negated by
"not", "n't", "never", "without", "no <event>", or named by an antonym ("survived": not death).
Naming a diagnosis of the bundle restricts the population to its cases ("all COPD cases").

A clause with no event, or a quantifier over something other than cases, claims nothing here
and is left to the other checks. The parser is a grammar, not a list of the review's sentences;
its word classes (quantifier and negation words) are the floor it rests on.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from core.answer.facts import AnswerFacts, bundle_facts
from core.answer.understand import EVENTS, Event
from core.contracts import BundleResult
from core.privacy.text import normalise

__all__ = ["CaseOutcomes", "Claim", "contradiction", "parse_claims"]

_WORD_NUMBERS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
_NUM = rf"(?:\d+|{'|'.join(_WORD_NUMBERS)})"
_CASE_NOUN = r"(?:patients?|cases?|matches|match|people|persons?|individuals?|ones?|subjects?|them|those|examples?)"
_MOD = r"(?:(?:the|these|those|such|similar|matched|matching|comparable|other|cited|retrieved|closest|nearest|" \
       r"listed|above|related|previous|prior|earlier|[a-z-]+-like)\s+)*"  # fmt: skip
_CLAUSE_SPLIT = re.compile(r";|:|\s+(?:but|whereas|while|although|though|however|yet)\s+|,\s+and\s+|,\s+(?=(?:hc|case)\b)")
_ANTONYMS: dict[str, tuple[str, ...]] = {  # words that state the event did NOT happen
    "death": ("survived", "survive", "survives", "surviving", "survival", "survivor", "survivors", "alive", "lived"),
}
_NEGATION = re.compile(r"\b(?:not|never|without|no longer|free of|nor)\b|n't\b")


_RELATIONS: dict[str, Callable[[int, int, float], bool]] = {  # (k, n, the stated number) -> holds
    "=": lambda k, _n, c: k == c,
    ">=": lambda k, _n, c: k >= c,
    ">": lambda k, _n, c: k > c,
    "<": lambda k, _n, c: k < c,
    "<=": lambda k, _n, c: k <= c,
    "%": lambda k, n, c: n > 0 and abs(100 * k / n - c) <= 1.0,
    "none": lambda k, _n, _c: k == 0,
    "all": lambda k, n, _c: k == n,
    "not all": lambda k, n, _c: k < n,
    "most": lambda k, n, _c: 2 * k > n,
    "a minority": lambda k, n, _c: 2 * k < n,
    "half": lambda k, n, _c: abs(2 * k - n) <= 1,
    "some": lambda k, _n, _c: k >= 1,
}


@dataclass(frozen=True)
class Quantifier:
    """A relation between k (cases that record the predicate) and n (cases in the population)."""

    label: str
    relation: str  # a key of _RELATIONS
    count: float | None = None  # the number it states ("2 of 5": 2; "40%": 40)
    over: int | None = None  # a population size the claim states ("2 of 5"), else the evidence's

    def holds(self, k: int, n: int) -> bool:
        """Whether k of n satisfies the quantifier."""
        return _RELATIONS[self.relation](k, n, self.count or 0.0)


@dataclass(frozen=True)
class Claim:
    """One clause's claim about the similar cases."""

    text: str
    events: tuple[Event, ...]
    negated: bool
    quantifier: Quantifier | None
    ids: tuple[str, ...] = ()
    only: bool = False
    restrict: str | None = None  # a diagnosis that narrows the population


@dataclass
class CaseOutcomes:
    """The computed facts the claims are checked against: each cited case's events and diagnosis."""

    facts: AnswerFacts
    _positive: dict[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, result: BundleResult) -> CaseOutcomes:
        """The facts of every similar case in ``result`` (which must hold a bundle)."""
        assert result.bundle is not None
        return cls(bundle_facts(result, len(result.bundle.similarCases)))

    @property
    def ids(self) -> list[str]:
        """Case ids in bundle order."""
        return self.facts.ids

    def positive(self, event: Event) -> frozenset[str]:
        """Cases whose outcome records ``event`` as happening (``AnswerFacts.count``)."""
        if event.name not in self._positive:
            self._positive[event.name] = frozenset(self.facts.count(event).positive)
        return self._positive[event.name]

    def diagnoses(self) -> dict[str, list[str]]:
        """Normalised diagnosis -> case ids."""
        return {normalise(d): ids for d, ids in self.facts.by_diagnosis()}


def _num(text: str) -> int:
    return int(text) if text.isdigit() else _WORD_NUMBERS.index(text)


def _event_pattern(event: Event) -> re.Pattern[str]:
    forms = sorted({*event.cues, *event.stems, *(["dying", "dies"] if event.name == "death" else [])}, key=len, reverse=True)
    alts = "|".join(re.escape(f) + (r"\w*" if f in event.stems else r"(?:s|es|d|ed|ing)?") for f in forms)
    return re.compile(rf"\b(?:{alts})\b")


_EVENTS = [(e, _event_pattern(e)) for e in EVENTS]
_ANTONYM = {name: re.compile(rf"\b(?:{'|'.join(words)})\b") for name, words in _ANTONYMS.items()}


_BOUNDS = (
    (r"at\s+least|no\s+fewer\s+than|no\s+less\s+than", ">="),
    (r"more\s+than|over|above", ">"),
    (r"fewer\s+than|less\s+than|under|below", "<"),
    (r"at\s+most|no\s+more\s+than|up\s+to", "<="),
    (r"exactly|only|just|precisely", "="),
)
_WORDS = (  # most specific first
    (r"not\s+(?:all|every|everyone|everybody|each)", "not all"),
    (r"none|no\s+one|nobody|neither|not\s+(?:a\s+single|one|any)|zero|no\s+" + _MOD + _CASE_NOUN, "none"),
    (r"more\s+than\s+half|over\s+half|most|majority|mostly|nearly\s+all|almost\s+all|the\s+bulk|usually|"
     r"typically|generally|largely|predominantly|the\s+greater\s+part", "most"),
    (r"less\s+than\s+half|fewer\s+than\s+half|under\s+half|minority|(?<!a\s)few|rarely|seldom|uncommonly",
     "a minority"),
    (r"(?:about\s+|around\s+|roughly\s+)?half", "half"),
    (r"all|every|everyone|everybody|each|both|without\s+exception|always|invariably|uniformly|universally", "all"),
    (r"some|several|at\s+least\s+one|one\s+or\s+more|a\s+few|a\s+number\s+of|many", "some"),
)  # fmt: skip


def _quantifier(clause: str) -> tuple[Quantifier | None, bool]:
    """The clause's quantifier over cases (most specific reading first), and whether it says "only"."""
    only = bool(re.search(r"\bonly\b", clause))
    if m := re.search(rf"\b({_NUM})\s+(?:out\s+of|of|in)\s+(?:the\s+|these\s+|those\s+)?({_NUM})\b", clause):
        k, n = _num(m.group(1)), _num(m.group(2))
        return Quantifier(f"{k} of {n}", "=", k, over=n), only
    if m := re.search(r"(?<![/\d])(\d+)\s*/\s*(\d+)\b(?!\s*/)", clause):  # "2/5", never a date "14/03/2026"
        k, n = int(m.group(1)), int(m.group(2))
        return Quantifier(f"{k}/{n}", "=", k, over=n), only
    if m := re.search(r"\b(\d+(?:\.\d+)?)\s*(?:%|percent\b|per\s+cent\b)", clause):
        return Quantifier(f"{float(m.group(1)):g}%", "%", float(m.group(1))), only
    for words, relation in _BOUNDS:
        if m := re.search(rf"\b(?:{words})\s+({_NUM})\b(?=\s+(?:of\b|{_MOD}{_CASE_NOUN}\b))", clause):
            return Quantifier(m.group(0), relation, _num(m.group(1))), only
    for pattern, label in _WORDS:
        if re.search(rf"\b(?:{pattern})\b(?!\s+(?:the\s+)?(?:time|same|reading|diagnos))", clause):
            if label == "all" and re.search(r"\bat\s+all\b", clause):
                continue
            return Quantifier(label, label), only
    if m := re.search(rf"\b({_NUM})\s+{_MOD}{_CASE_NOUN}\b", clause):  # "two similar patients died"
        return Quantifier(m.group(1), "=", _num(m.group(1))), only
    if re.search(rf"\b(?:the|these|such)\s+{_MOD}(?:patients|cases|matches|people)\b", clause):
        return Quantifier("all (definite plural)", "all"), only
    return None, only


def parse_claims(sentence: str, case_ids: Iterable[str], diagnoses: Iterable[str] = ()) -> list[Claim]:
    """The claims of a normalised, case-folded ``sentence`` about outcome events of the cases.

    ``case_ids`` are the canonical ids (as they are written in the sentence); ``diagnoses`` the
    normalised diagnoses of the bundle, longest first, to restrict a clause's population.
    """
    ids = {i.casefold(): i for i in case_ids}
    dx = sorted(set(diagnoses), key=len, reverse=True)
    claims: list[Claim] = []
    for clause in _CLAUSE_SPLIT.split(sentence):
        clause = clause.strip(" ,.!?")
        written = [i for i in sorted(ids, key=len, reverse=True) if re.search(rf"(?<![\w-]){re.escape(i)}(?![\w-])", clause)]
        cited = tuple(ids[i] for i in written)
        bare = clause
        for i in written:
            bare = bare.replace(i, " ")
        events = tuple(e for e, p in _EVENTS if p.search(bare))
        antonym = tuple(e for e in EVENTS if e.name in _ANTONYM and _ANTONYM[e.name].search(bare))
        if not events and not antonym:
            continue
        quantifier, only = _quantifier(bare)
        no_event = any(re.search(rf"\bno\s+(?:new\s+|further\s+|other\s+)?(?:{p.pattern})", bare) for _, p in _EVENTS)
        negated = bool(_NEGATION.search(re.sub(r"\bnot\s+(?:all|every|each|a\s+single|one|any)\b", " ", bare))) or (
            no_event and quantifier is not None
        )
        if no_event and quantifier is None:  # "no deaths among the similar cases"
            quantifier = Quantifier("none", "none")
        if quantifier is None and re.search(r"\bnever\b", bare) and not cited:  # "such patients never died"
            quantifier, negated = Quantifier("none", "none"), False
        restrict = next((d for d in dx if re.search(rf"(?<!\w){re.escape(d)}(?!\w)", bare)), None)
        for group, neg in ((events, negated), (antonym, not negated)):
            if group and (quantifier is not None or cited):
                stated = quantifier is not None and quantifier.count is not None
                claims.append(Claim(clause, group, neg, quantifier, cited, only and not stated, restrict))
    return claims


def _holds(claim: Claim, facts: CaseOutcomes, event: Event) -> str | None:
    """``None`` when ``claim`` holds for ``event``, else what the facts say instead."""
    population = list(facts.ids)
    if claim.restrict is not None:
        population = facts.diagnoses().get(claim.restrict, population)
    positive = facts.positive(event)
    holding = {c for c in population if (c in positive) != claim.negated}
    what = f"{'no ' if claim.negated else ''}{event.name}"
    if claim.quantifier is None or (claim.only and claim.ids):  # claims about the cited cases themselves
        cited = set(claim.ids)
        if claim.only and holding & set(population) != cited:
            return f"only {', '.join(sorted(cited))} claimed, but {len(holding)} of {len(population)} record {what}"
        if wrong := sorted(cited - holding):
            return f"{', '.join(wrong)} {'does' if len(wrong) == 1 else 'do'} not record {what}"
        return None
    q = claim.quantifier
    n, k = len(population), len(holding)
    if q.over is not None and q.over != n:
        if q.over > n:
            return f"{q.label}: the evidence has {n} similar cases, of which {k} record {what}"
        # "2 of 3" of a sub-population the clause does not name: some M of the n cases must hold exactly N
        low, high = max(0, q.over - (n - k)), min(q.over, k)
        if q.count is not None and low <= q.count <= high:
            return None
        return f"{q.label}: no {q.over} of the {n} similar cases have that count; {k} of {n} record {what}"
    if not q.holds(k, n):
        return f"{q.label}: {k} of {n} similar cases record {what}"
    return None


def contradiction(sentence: str, facts: CaseOutcomes) -> str | None:
    """Why ``sentence`` (normalised, case-folded, ids canonical) contradicts the computed facts, or ``None``."""
    claims = parse_claims(sentence, facts.ids, facts.diagnoses())
    for claim in claims:
        for event in claim.events:
            if (why := _holds(claim, facts, event)) is not None:
                return f"contradicts the computed facts ({why})"
    return None
