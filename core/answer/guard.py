"""The output guard: normalise, then allow only what the bundle supports.

Every sentence of a model's text is checked in canonical form (NFKC, zero-width
and bidi characters removed, confusables folded, case-folded; see
:mod:`core.privacy.text`) and kept only when all of these hold:

1. it carries no link, image, HTML or URL;
2. every case id it cites, in any spelling ("HC-4", "hc 4", "case 4",
   "HC-00004"), is in the bundle (a kept id is rewritten in its canonical form);
3. it names no person (names passed in by the caller) and no drug, dose,
   procedure or instruction to treat, makes no appeal to outside knowledge and
   no definitive claim (word lists in :mod:`core.answer.guard_lexicon`);
4. every number in it, written in digits or in words ("nine in ten", "five
   hundred"), is a bundle number, a percentage of one, or a count of the cases;
5. every other word is either in the bundle or an ordinary word of an answer
   about similar cases (:data:`~core.answer.guard_lexicon.ANSWER_VOCABULARY`);
6. every quantified or negated claim about the cases' outcomes ("none of the similar
   patients died", "2 of 5", "every case recovered") holds over the facts computed
   from the bundle (:mod:`core.answer.claims`).

That is an allow-list: a word the bundle does not support ("tuberculosis",
"thoracostomy", "cohort", a patient's name) drops the sentence. Verbatim bundle
phrases (an outcome such as "Recovered after chest drain", a diagnosis, a past
condition) are history, not advice, and are exempt from rules 3 to 5; prior
report text is exempt only when it passes rule 3 itself, so a signed report
carrying injected advice cannot smuggle it into an answer. An answer left with
no valid citation is rejected by the caller, which falls back.

:func:`guard_draft_sections` applies the same checks to a report draft's
FINDINGS and IMPRESSION, and a narrower allow-list to RECOMMENDATIONS, which
may only suggest follow-up imaging, comparison with priors or clinical
correlation.
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from core.answer.claims import contradiction
from core.answer.facts import AnswerFacts
from core.answer.guard_facts import BundleFacts, add_answer_facts, facts_for, find_ids
from core.answer.guard_lexicon import (
    ANSWER_VOCABULARY,
    DEFINITIVE,
    DOSE_TERMS,
    DRUG_CLASSES,
    DRUGS,
    MANAGEMENT,
    OUTSIDE,
    PROCEDURES,
    RECOMMENDATION_VOCABULARY,
    STOPWORDS,
)
from core.contracts import INSUFFICIENT_DATA, BundleResult
from core.privacy.deid import name_variants
from core.privacy.text import normalise, strip_markup
from core.text import answer_sentences, content_words, number_values, phrase_pattern, stem

__all__ = ["DraftGuard", "GuardReport", "enforce", "guard_draft_sections", "refusal_reason"]

log = logging.getLogger(__name__)


@dataclass
class GuardReport:
    """What the guard kept and removed, and why."""

    kept: list[str] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)
    invalid_ids: list[str] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    insufficient: bool = False

    @property
    def text(self) -> str:
        """The kept sentences joined."""
        return " ".join(self.kept)


def _blank(text: str, phrases: Iterable[str]) -> str:
    """``text`` with every whole-word occurrence of ``phrases`` blanked ("lung" stays in "lungs")."""
    for p in phrases:
        if p and p in text:
            text = phrase_pattern(p).sub(" ", text)
    return text


def refusal_reason(plain: str, *, names: Iterable[str] = (), drugs: Iterable[str] = ()) -> str | None:
    """Why normalised ``plain`` text is refused outright (person, drug, dose, procedure, advice, outside
    knowledge, certainty), or ``None``."""
    words = set(content_words(plain))
    if hit := sorted(words & name_variants(names)):
        return f"names a person: {len(hit)} name(s)"
    if hit := sorted(words & (DRUGS | {normalise(d) for d in drugs if d})):
        return f"treatment advice (drug): {hit[0]!r}"
    for label, pattern in (
        ("treatment advice (drug)", DRUG_CLASSES),
        ("treatment advice (dose)", DOSE_TERMS),
        ("treatment advice (procedure)", PROCEDURES),
        ("treatment advice (management)", MANAGEMENT),
        ("outside knowledge", OUTSIDE),
        ("definitive claim", DEFINITIVE),
    ):
        if m := pattern.search(plain):
            return f"{label}: {m.group(0)!r}"
    return None


@functools.cache
def _conditions() -> tuple[str, ...]:
    """Condition names of the shipped vocabulary, normalised (a clearer reason than "unsupported terms")."""
    from core.answer.vocabulary import known_condition_names

    return tuple(sorted({normalise(c) for c in known_condition_names()}, key=len, reverse=True))


@functools.lru_cache(maxsize=8)
def _stems(vocabulary: frozenset[str]) -> frozenset[str]:
    return frozenset(stem(w) for w in vocabulary)


def _unsupported(plain: str, facts: BundleFacts, vocabulary: frozenset[str]) -> list[str]:
    stems = _stems(vocabulary)
    stated_absent = facts.not_recorded_words(plain)

    def known(w: str) -> bool:
        return w in STOPWORDS or w in vocabulary or stem(w) in stems or facts.knows_word(w) or w in stated_absent

    out: list[str] = []
    for w in content_words(plain):
        if known(w):
            continue
        parts = [p for p in w.split("-") if p]
        if len(parts) > 1 and all(known(p) for p in parts):
            continue
        if w not in out:
            out.append(w)
    return out


def _check(
    sentence: str, facts: BundleFacts, names: Iterable[str], drugs: Iterable[str], vocabulary: frozenset[str]
) -> tuple[str, str | None, list[str], list[str]]:
    """``(display text, reason or None, cited canonical ids, invalid ids)`` for one sentence."""
    shown, markup = strip_markup(sentence)
    if markup:
        return shown, f"link, image or HTML ({', '.join(markup)})", [], []
    low = shown.casefold()
    mentions = find_ids(low, facts)
    bad = [m.written for m in mentions if m.canonical is None]
    if bad:
        return shown, f"cites case IDs not in the evidence: {', '.join(bad)}", [], bad
    cited: list[str] = []
    same_length = len(low) == len(shown)  # casefold can lengthen a character ("ß" -> "ss")
    for m in reversed(mentions):  # rewrite "hc 4" as the canonical "HC-00004"
        assert m.canonical is not None
        if same_length:
            shown = shown[: m.start] + m.canonical + shown[m.end :]
        low = low[: m.start] + " " + low[m.end :]
        cited.insert(0, m.canonical)
    plain = _blank(low, facts.phrases)
    plain = _blank(plain, [r for r in facts.advice_free_reports if refusal_reason(r) is None])
    if (why := refusal_reason(plain, names=names, drugs=drugs)) is not None:
        return shown, why, [], []
    plain = _blank(plain, facts.dates)  # a prior report's own signing date, written whole
    stray = [v for v in number_values(plain) if not facts.allows_number(v)]
    if stray:
        return shown, f"numbers not in the evidence: {', '.join(f'{v:g}' for v in stray)}", [], []
    if extra := [c for c in _conditions() if c in plain]:
        return shown, f"diagnoses not in the evidence: {', '.join(extra[:3])}", [], []
    if extra := _unsupported(re.sub(r"\d+(?:[.,]\d+)*", " ", plain), facts, vocabulary):
        return shown, f"terms not in the evidence: {', '.join(extra[:5])}", [], []
    if facts.outcomes is not None and (why := contradiction(shown.casefold(), facts.outcomes)) is not None:
        return shown, why, [], []
    return shown, None, cited, []


def _facts(result: BundleResult, answer: AnswerFacts | None) -> BundleFacts:
    facts = facts_for(result)
    if answer is not None:
        add_answer_facts(facts, answer, lambda text: refusal_reason(text) is None)
    return facts


@functools.lru_cache(maxsize=1)
def _read_as_lines() -> frozenset[str]:
    """The fixed "Read as: ..." lines an answer may carry (one per intent label, in the doctor's words)."""
    from core.answer.reader import INTENT_LABELS  # here: the reader imports the guard's neighbours

    return frozenset(f"Read as: {label}." for label in INTENT_LABELS.values())


def enforce(
    text: str,
    result: BundleResult,
    *,
    names: Iterable[str] = (),
    drugs: Iterable[str] = (),
    facts: AnswerFacts | None = None,
) -> GuardReport:
    """Check every sentence of ``text`` against ``result``; see the module docstring.

    ``names`` are people's names to refuse (the user table's); ``drugs`` adds a
    knowledge base's drug lexicon to the built-in list. ``facts`` (the answer
    computed in code) is supported content too: its numbers, phrases, region,
    counted events and "not recorded" statements (see
    :func:`~core.answer.guard_facts.add_answer_facts`).
    """
    report = GuardReport()
    if result.bundle is None:
        report.insufficient = True
        return report
    canonical = normalise(text, casefold=False)
    if INSUFFICIENT_DATA.casefold().rstrip(".") in canonical.casefold():
        report.insufficient = True
        return report
    bundle_facts = _facts(result, facts)
    names, drugs = list(names), list(drugs)
    read_as = _read_as_lines()
    for sentence in answer_sentences(canonical):
        if sentence.strip() in read_as:  # the composer's own "Read as: <intent label>." line claims nothing
            report.kept.append(sentence)
            continue
        shown, reason, cited, bad = _check(sentence, bundle_facts, names, drugs, ANSWER_VOCABULARY)
        report.invalid_ids += bad
        if reason is not None:
            report.removed.append((shown, reason))
            continue
        report.kept.append(shown)
        report.cited += [i for i in cited if i not in report.cited]
    if report.invalid_ids:
        log.warning("Stripped %d invalid case citations", len(report.invalid_ids))
    if report.removed:
        log.info("Guard removed %d sentences: %s", len(report.removed), [r.split(":")[0] for _, r in report.removed])
    return report


@dataclass
class DraftGuard:
    """Draft sections that passed whole (``sections``) and the sentences that did not (``removed``)."""

    sections: dict[str, str] = field(default_factory=dict)
    removed: list[tuple[str, str, str]] = field(default_factory=list)


def guard_draft_sections(
    sections: Mapping[str, str],
    result: BundleResult,
    *,
    names: Iterable[str] = (),
    drugs: Iterable[str] = (),
    facts: AnswerFacts | None = None,
) -> DraftGuard:
    """Check a draft's ``findings``, ``impression`` and ``recommendations`` against ``result``.

    A section is returned only when every sentence in it passes; the caller
    keeps its extractive text for the others. RECOMMENDATIONS may use only
    :data:`~core.answer.guard_lexicon.RECOMMENDATION_VOCABULARY` and bundle words.
    """
    out = DraftGuard()
    if result.bundle is None:
        return out
    bundle_facts = _facts(result, facts)
    names, drugs = list(names), list(drugs)
    for key in ("findings", "impression", "recommendations"):
        text = normalise(sections.get(key, "") or "", casefold=False)
        vocabulary = RECOMMENDATION_VOCABULARY if key == "recommendations" else ANSWER_VOCABULARY
        kept: list[str] = []
        failed = False
        for sentence in answer_sentences(text):
            shown, reason, _, _ = _check(sentence, bundle_facts, names, drugs, vocabulary)
            if reason is not None:
                out.removed.append((key, shown, reason))
                failed = True
            else:
                kept.append(shown)
        if kept and not failed:
            out.sections[key] = " ".join(kept)
    return out
