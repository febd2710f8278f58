"""One question part answered from the facts, or named with the one-sentence reason it cannot be.

:func:`answer_part` looks every condition and clinical term a part names up in the
evidence by concept (the lexicon's evidence terms, the vocabulary's related findings, a
term's stem). A term no evidence field records is stated precisely: "Cavitation is not
recorded in the evidence of these 5 cases (HC-...)." A part that names only such terms
is ``not_recorded``; a part whose intent the evidence answers is answered, and the terms
it lacks are stated beside the answer, so one unknown term never blocks the rest.
Treatment parts point to Guideline QA, saying what it covers (:func:`pointer`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from core.answer.concepts import concepts_of, matches
from core.answer.facts import AnswerFacts, EventCount
from core.answer.lexicon import ConditionLexicon
from core.answer.terms import term_evidence
from core.answer.understand import EVENTS, Understanding
from core.answer.vocabulary import RELATED

__all__ = ["CARRIED", "POINTER_HEAD", "PREDICTION_CAVEAT", "PartAnswer", "about_future", "answer_part", "covered_by_guidelines", "pointer", "present_concepts"]

POINTER_HEAD = "What to do for this patient is outside what similar cases can answer."
CARRIED = "ask it there."  # the end of the pointer when Guideline QA covers the question
PREDICTION_CAVEAT = "These are outcomes of past cases, not a prediction for this patient."
_FUTURE = re.compile(
    r"\b(will (?:he|she|they|this|the|it|pt|i)|going to|gonna|is (?:he|she|this patient|the patient|pt) likely|"
    r"likely|likelihood|chances?|odds|risk|prognosis|outlook|life expectancy|expect(?:ed|ancy)?|future|end up|"
    r"how long (?:till|until|before|does (?:he|she)|do (?:i|we)|will|has (?:he|she))|"
    r"(?:can|could) (?:he|she) (?:go|return|walk|work|drive|fly|see)|(?:is|are) (?:he|she|they|this pt) (?:going|gonna)|"
    r"(?:his|her) (?:survival|prognosis|outlook|risk|chances?)|surviv\w*|live (?:for|long|to|past)|"
    r"(?:come|coming) back|recur (?:in|for) (?:him|her)|spread to|in (?:\d+|a few|five|ten|two) (?:years?|yrs?|months?))\b"
)
# Words that frame a severity question ("severity spread of the matches"): never terms to look up.
_SEVERITY_FRAME = frozenset({"spread", "distribution", "range", "mix", "breakdown", "level", "levels", "scale", "grade", "grades"})
_CONDITION_NAMES = {"tuberculosis": "tuberculosis", "pneumonia": "community-acquired pneumonia"}


def about_future(text: str) -> bool:
    """True when normalised ``text`` asks about this patient's future ("will he go blind", "how long does he have")."""
    return bool(_FUTURE.search(text))


@dataclass(frozen=True)
class PartAnswer:
    """What one part contributes: sentences, or the reason it cannot be answered."""

    kind: Literal["answer", "not_recorded", "treatment", "general"]
    sentences: tuple[str, ...] = ()
    reason: str | None = None
    in_scope: bool = False  # treatment: Guideline QA covers the question
    counts: dict[str, EventCount] = field(default_factory=dict)


def covered_by_guidelines(text: str, ai_diagnosis: str, conditions: Mapping[str, str]) -> list[str]:
    """Guideline QA's conditions (settings ``guideline.conditions``) that the question or the AI reading names."""
    low = f"{text} {ai_diagnosis}".lower()
    return [name for name, pattern in conditions.items() if re.search(pattern, low)]


def pointer(in_scope: bool, conditions: Mapping[str, str]) -> str:
    """The honest pointer: what Guideline QA covers, and whether this question is carried there."""
    covers = " and ".join(_CONDITION_NAMES.get(c, c) for c in conditions) or "no condition"
    head = POINTER_HEAD
    if in_scope:
        return f"{head} Guideline QA answers from the {covers} guidelines and drug labels in Casebook: {CARRIED}"
    return f"{head} Guideline QA covers only {covers}, so no source in Casebook covers this question."


def _ids(ids: list[str] | tuple[str, ...]) -> str:
    return ", ".join(ids)


def _recorded_in(terms: tuple[str, ...], facts: AnswerFacts) -> bool:
    text = facts.evidence_text()
    return any(re.search(rf"\b{re.escape(t.replace('-', ' '))}", text) for t in terms)


def present_concepts(u: Understanding, facts: AnswerFacts) -> tuple[list[tuple[str, tuple[str, ...]]], list[str]]:
    """(name, evidence terms) of the concepts the part names that the evidence records, and the names it does not."""
    present: list[tuple[str, tuple[str, ...]]] = []
    missing: list[str] = []
    for e in u.entities:
        if e.name.lower() == facts.ai_diagnosis.lower() or _recorded_in(e.evidence, facts):
            present.append((e.name, e.evidence))
        else:
            missing.append(u.named(e))
    for w in u.unknown:
        (present.append((w, (w,))) if _recorded_in((w,), facts) else missing.append(w))
    for t in u.terms:
        ev = term_evidence(t)
        (present.append((t, ev)) if _recorded_in(ev, facts) else missing.append(t))
    missing += [label for label, stem in u.attributes if stem not in facts.evidence_text()]
    return present, missing


def not_recorded_sentence(names: list[str], facts: AnswerFacts) -> str:
    """"X is not recorded in the evidence of these N cases (IDs)." for one or more names."""
    shown = [n[0].upper() + n[1:] for n in names]
    named = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
    verb = "is" if len(shown) == 1 else "are"
    where = f"the evidence of these {facts.n} cases ({_ids(facts.ids)})"
    if facts.priors:
        where += " or this patient's prior reports"
    return f"{named} {verb} not recorded in {where}."


def concept_count_sentence(name: str, c: EventCount, facts: AnswerFacts) -> str:
    """"N of M similar cases record X (IDs)." with the cases that record it absent."""
    out = f"{len(c.positive)} of {c.total} similar cases record {name}" + (f" ({_ids(c.positive)})." if c.positive else ".")
    if c.negative:
        other = name[3:] if name.startswith("no ") else f"no {name}"
        out += f" {len(c.negative)} of {c.total} record {other} ({_ids(c.negative)})."
    return out


def paraphrase_count_sentence(concept: str, stems: tuple[str, ...], facts: AnswerFacts) -> str:
    """The count of an outcome asked in other words, naming what it was read as and each outcome counted:
    "Read as resolution: 1 of 5 similar cases record resolution (HC-...: Recovered, consolidation cleared at 6 weeks)."."""
    counted = facts.count_terms(concept, stems)
    head = f"Read as {concept}:"  # the doctor's words are not repeated: a pasted phrase may hold anything
    if not counted.recorded:
        where = f"the outcomes of these {facts.n} cases ({_ids(facts.ids)})"
        return f"{head} {concept[0].upper()}{concept[1:]} is not recorded in {where}."
    outcome = {c.case_id: c.outcome or c.diagnosis for c in facts.cases}
    shown = "; ".join(f"{cid}: {outcome[cid]}" for cid in counted.positive)
    out = f"{head} {len(counted.positive)} of {counted.total} similar cases record {concept}" + (f" ({shown})." if shown else ".")
    if counted.negative:
        out += f" {len(counted.negative)} of {counted.total} record no {concept} ({_ids(counted.negative)})."
    return out


def _understood(name: str, lexicon: ConditionLexicon) -> bool:
    """True when every word of a counted concept is one the words path knows (an outcome event's cue, a related
    finding, a condition): "recurrent exacerbations" is understood and simply not recorded, never re-read."""
    cues = {w for e in EVENTS for c in e.cues for w in c.split()}
    return all(w in cues or w in RELATED or w in lexicon.surfaces for w in name.split())


def count_concepts(
    u: Understanding, facts: AnswerFacts, lexicon: ConditionLexicon
) -> tuple[list[str], list[str], bool]:
    """Sentences counting each concept a count part names, the names no case records, and whether every
    missing name is an outcome event or procedure (a fact about the cited cases, not an absent condition)."""
    sentences: list[str] = []
    missing: list[str] = []
    events_only = True
    attribute_words = {w for _, stem in u.attributes for w in re.findall(r"[a-z]+", stem)}
    for label, stem in u.attributes:  # a measurement or grade ("BI-RADS category"): named by its label
        if stem not in facts.evidence_text():
            missing.append(label)
    term_words = {w for t in u.terms for w in re.findall(r"[a-z0-9]+", t)}  # the reader's clinical terms ("pregnant", by the word-kind model)
    seen: set[str] = set()
    concepts = concepts_of(u.text, lexicon, facts.ai_diagnosis)
    events = {e.name for e in EVENTS}  # a concept that is an outcome event by its own words ("died") is counted as such
    if (u.outcome is not None and not u.attributes and not u.entities and len(concepts) <= 1
            and not any(c.name in events or _understood(c.name, lexicon) for c in concepts) and not any(
        matches(c, f"{x.diagnosis}. {x.outcome or ''}".lower().replace("-", " ")) is not None for c in concepts for x in facts.cases
    )):  # its words match no cited case: an outcome asked in other words ("went downhill"), counted by the concept's stems
        return [paraphrase_count_sentence(u.outcome.concept, u.outcome.stems, facts)], [], True
    for concept in concepts:
        seen |= set(re.findall(r"[a-z0-9]+", concept.name))
        if attribute_words & set(re.findall(r"[a-z]+", concept.name)):
            continue
        pos: list[str] = []
        neg: list[str] = []
        for c in facts.cases:
            hit = matches(concept, f"{c.diagnosis}. {c.outcome or ''}".lower().replace("-", " "))
            if hit is not None:
                (pos if hit else neg).append(c.case_id)
        if not pos and not neg:
            clinical = concept.clinical or bool(term_words & set(re.findall(r"[a-z0-9]+", concept.name)))
            if clinical:  # "ones like her ok" names nothing to look up: no "not recorded" for it
                missing += [o.name for o in concept.options if o.clinical] or [concept.name]
                events_only = events_only and concept.event
            continue
        sentences.append(concept_count_sentence(concept.name, EventCount(concept.name, tuple(pos), tuple(neg), facts.n), facts))
    for t in u.terms:  # a term the count's frame left out ("what's her blood pressure": every word is common English)
        if not set(re.findall(r"[a-z0-9]+", t)) & seen and not _recorded_in(term_evidence(t), facts):
            missing.append(t)
            events_only = False
    return sentences, missing, events_only and not u.attributes


def answer_part(
    u: Understanding,
    facts: AnswerFacts,
    body: list[str],
    conditions: Mapping[str, str],
    lexicon: ConditionLexicon,
    question: str = "",
) -> PartAnswer:
    """The part's answer; ``body`` is what the intent alone answers (from the composer).

    ``question`` is the whole question: a treatment part is in Guideline QA's scope when the
    question (or the AI reading) names a condition Guideline QA covers.
    """
    if u.intent == "treatment":
        scope = covered_by_guidelines(f"{question} {u.text}", facts.ai_diagnosis, conditions)
        said = pointer(bool(scope), conditions)
        return PartAnswer("treatment", (said,), said, bool(scope))
    if u.intent == "severity":  # "severity spread", "grade of severity": words that frame the question, not terms
        u = replace(u, terms=tuple(t for t in u.terms if t not in _SEVERITY_FRAME),
                    attributes=() if re.search(r"\b(?:grade|grading|level|scale) of (?:the )?sever", u.text) else u.attributes)  # fmt: skip
    if u.intent == "general_knowledge":
        reason = ("General medical knowledge (literature, incidence, test accuracy) is not part of this scan's "
                  "evidence; Guideline QA may answer it.")  # fmt: skip
        return PartAnswer("general", (), reason)
    sentences: list[str] = []
    if u.intent == "count" and u.severity is None:
        counted, missing, events_only = count_concepts(u, facts, lexicon)
        scope = covered_by_guidelines(f"{question} {u.text}", facts.ai_diagnosis, conditions) if u.may_treat else []
        also = [pointer(bool(scope), conditions)] if u.may_treat else []  # a lone term that may name a treatment
        if missing and not counted and not events_only:  # an absent condition or finding: nothing to count over
            stated = (not_recorded_sentence(missing, facts), *also)
            return PartAnswer("not_recorded", stated, " ".join(stated), bool(scope))
        sentences += counted
        if missing:
            sentences.append(not_recorded_sentence(missing, facts))
        sentences += body
        sentences += also
        answered = _with_caveat(u, sentences)
        return replace(answered, in_scope=bool(scope))
    if u.intent in {"outcomes", "prediction", "summary"}:  # "died vs recovered vs recurred": counted too
        counted, absent, events_only = count_concepts(u, facts, lexicon)
        same = f"{facts.n} of {facts.n} similar cases record {facts.ai_diagnosis.lower()}"
        sentences += [c for c in counted if not c.startswith(same)]
        if absent and events_only:  # "did they need surgery": an outcome question about an event no case records
            sentences.append(not_recorded_sentence(absent, facts))
    present, missing = present_concepts(u, facts)
    named = bool(u.entities or u.unknown or u.terms or u.attributes)
    if missing and not present and named and u.intent in {"differential", "summary", "severity"} | (
        {"outcomes"} if not u.event else set()
    ):
        return PartAnswer("not_recorded", (not_recorded_sentence(missing, facts),), not_recorded_sentence(missing, facts))
    if u.intent == "differential" and len(present) + len(missing) > 1:
        for name, ev in present:
            sentences.append(concept_count_sentence(name, facts.count_terms(name, ev), facts))
    sentences += body
    if missing:
        sentences.append(not_recorded_sentence(missing, facts))
    return _with_caveat(u, sentences)


def _with_caveat(u: Understanding, sentences: list[str]) -> PartAnswer:
    """A question about this patient's future always carries the caveat."""
    if (_FUTURE.search(u.text) or u.intent == "prediction") and PREDICTION_CAVEAT not in sentences:
        sentences.append(PREDICTION_CAVEAT)
    return PartAnswer("answer", tuple(sentences))
