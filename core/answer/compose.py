"""The extractive composer: an answer written in code from the bundle's facts, with no language model.

:func:`compose` understands the question (:mod:`core.answer.understand`), computes
the facts (:mod:`core.answer.facts`) and writes the answer for the intent. The
question is read into parts (:mod:`core.answer.reader`); each part is answered from
the facts or named with its reason (:mod:`core.answer.parts_answer`). The contract's
"Insufficient data..." stands only when no part can be answered (every named term is
absent from the evidence, or only general medical knowledge is asked); the reason names
each part. Treatment parts get the pointer that says what Guideline QA covers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal

from core.answer.facts import AnswerFacts, EventCount, bundle_facts
from core.answer.guards_text import INJECTION_REFUSAL, OFF_TOPIC
from core.answer.lexicon import default_lexicon
from core.answer.parts_answer import CARRIED, POINTER_HEAD, PREDICTION_CAVEAT, about_future, answer_part, pointer
from core.answer.reader import INSTRUCTION_PLACES, QuestionReader, Reading
from core.answer.understand import Intent, Understanding
from core.cases.evidence import assess
from core.config.ask import AskSettings
from core.contracts import INSUFFICIENT_DATA, AskAnswer, BundleResult, ContextBundle

__all__ = ["OUT_OF_SCOPE", "Composed", "carries_to_guidelines", "compose", "confidence_for", "is_pointer", "out_of_scope_answer"]

OUT_OF_SCOPE = POINTER_HEAD  # the first sentence of every treatment answer (pages and tests recognise it)


def is_pointer(text: str) -> bool:
    """True when ``text`` is the treatment pointer (no case-based answer: no evidence badge)."""
    return text.startswith(OUT_OF_SCOPE)


def carries_to_guidelines(text: str) -> bool:
    """True when an answer holds the pointer for a question Guideline QA covers (the page offers to carry it)."""
    return CARRIED in text


@dataclass(frozen=True)
class Composed:
    """An extractive answer, the understood question and the facts it was written from."""

    answer: AskAnswer
    intent: Intent
    kind: Literal["answer", "insufficient", "out_of_scope", "refused"]
    reason: str | None = None
    facts: AnswerFacts | None = None
    understanding: Understanding | None = None
    reading: Reading | None = None
    in_scope: bool = False  # a treatment part that Guideline QA covers (the question is carried there)
    injected: bool = False  # instructions inside the question were refused: the model never sees this question


def out_of_scope_answer(in_scope: bool, conditions: Mapping[str, str]) -> AskAnswer:
    """The fixed answer to a treatment, dose or management question: what Guideline QA covers, no case cited."""
    return AskAnswer(answer=pointer(in_scope, conditions), citedCaseIds=[], confidence="low")


def confidence_for(bundle: ContextBundle, settings: AskSettings) -> Literal["high", "medium", "low"]:
    """The evidence-based confidence level (:func:`core.cases.evidence.assess`): never agreement alone."""
    return assess(bundle, settings).level


def _pct(x: float) -> str:
    return f"{round(x * 100):g}%"


def _ids(ids: list[str] | tuple[str, ...]) -> str:
    return ", ".join(ids)


def _spread(groups: list[tuple[str, list[str]]]) -> str:
    return "; ".join(f"{label} in {len(ids)} ({_ids(ids)})" for label, ids in groups)


def _head(f: AnswerFacts) -> str:
    return f"The AI reading of this {f.anatomy} scan is {f.ai_diagnosis} at {_pct(f.ai_confidence)} confidence."


def _outcomes(f: AnswerFacts) -> str:
    return f"Recorded outcomes of the {f.n} most similar {f.anatomy} cases: {_spread(f.by_outcome())}."


def _count_sentence(c: EventCount, f: AnswerFacts) -> str:
    if not c.recorded:
        return f"{c.event.capitalize()} is not recorded in the outcomes of the {f.n} similar cases ({_ids(f.ids)})."
    out = f"{len(c.positive)} of {c.total} similar cases record {c.event}"
    out += f" ({_ids(c.positive)})." if c.positive else "."
    if c.negative and not c.event.endswith("severity"):
        out += f" {len(c.negative)} record no {c.event} ({_ids(c.negative)})."
    return out


def _entity_mentions(u: Understanding, f: AnswerFacts) -> list[str]:
    """Sentences quoting prior reports for named entities that only the prior reports mention."""
    out: list[str] = []
    for e in u.entities:
        in_cases = any(any(t in f"{c.diagnosis} {c.outcome or ''}".lower() for t in e.evidence) for c in f.cases)
        if in_cases or e.name.lower() == f.ai_diagnosis.lower():
            continue
        for p in f.priors:
            if any(t in f"{p.findings} {p.impression}".lower() for t in e.evidence):
                out.append(f'{e.name} is not among the similar cases\' diagnoses; the signed prior report of {p.date or "an earlier date"} reads: "{p.impression}"')
                break
    return out


def _demographics(f: AnswerFacts) -> list[str]:
    aged = [(c.age, c.case_id) for c in f.cases if c.age is not None]
    out = []
    if aged:
        ages = [a for a, _ in aged]
        out.append(f"Ages of the {len(aged)} similar cases: {', '.join(f'{a} ({cid})' for a, cid in aged)}; "
                   f"range {min(ages)} to {max(ages)}.")  # fmt: skip
    sexes = _groups_of((c.sex, c.case_id) for c in f.cases if c.sex)
    if sexes:
        words = {"M": "male", "F": "female"}
        out.append("Sex: " + "; ".join(f"{len(ids)} {words.get(k, k)} ({_ids(ids)})" for k, ids in sexes) + ".")
    return out or [f"Age and sex are not recorded for the {f.n} similar cases ({_ids(f.ids)})."]


def _groups_of(pairs: object) -> list[tuple[str, list[str]]]:
    groups: dict[str, list[str]] = {}
    for key, cid in pairs:  # type: ignore[attr-defined]
        groups.setdefault(key, []).append(cid)
    return sorted(groups.items(), key=lambda kv: -len(kv[1]))


def _body(u: Understanding, f: AnswerFacts) -> list[str]:
    """What the part's intent alone answers (the AI reading is stated once, before every part)."""
    if u.intent in {"outcomes", "prediction"}:
        return [_outcomes(f), "These are outcomes of past cases, not a prediction for this patient."]
    if u.intent == "count":
        if u.severity is not None and (u.event is None or u.severity == "critical"):
            return [_count_sentence(f.count_severity(u.severity), f)]
        return [_outcomes(f)]  # the counted concepts come first (core.answer.parts_answer)
    if u.intent == "severity":
        groups = f.by_severity()
        body = []
        if u.severity == "critical" and groups[0][0] != "critical":
            body.append(f"None of the {f.n} similar cases is recorded as critical; the most severe are {groups[0][0]} ({_ids(groups[0][1])}).")
        body.append(f"Severity recorded for the {f.n} similar cases, most severe first: {_spread(groups)}.")
        return body
    if u.intent == "prior":
        if not f.priors:
            return [f"No signed prior {f.anatomy} report of this patient is on record to compare with.",
                    f"The {f.n} most similar cases are {_ids(f.ids)}."]
        latest = f.priors[0]
        body = [f'Compared with the signed prior report of {latest.date or "an earlier date"}, which reads: "{latest.impression}"',
                f'Its findings: "{latest.findings}"']
        for p in f.priors[1:]:
            body.append(f'The earlier signed report of {p.date or "an earlier date"} reads: "{p.impression}"')
        body.append("The current scan has no signed report yet; the change is for the reading doctor to judge.")
        body.append(f"The {f.n} most similar cases are {_ids(f.ids)}.")
        return body
    if u.intent == "why_similar":
        lo, hi = min(c.similarity for c in f.cases), max(c.similarity for c in f.cases)
        span = _pct(hi) if _pct(lo) == _pct(hi) else f"{_pct(lo)} to {_pct(hi)}"
        where = f" (searched in region {f.region.replace('_', ' ')} first)" if f.region else ""
        return [
            f"These {f.n} cases are the {f.anatomy} cases nearest to this scan by imaging similarity{where}: {span} "
            f"({', '.join(f'{c.case_id} {_pct(c.similarity)}' for c in f.cases)}).",
            f"{f.agreement()} of {f.n} share the AI reading of {f.ai_diagnosis}.",
            f.basis or "Similarity is the closeness of the imaging embeddings; it does not read reports or outcomes.",
        ]
    if u.intent == "differential":
        return [f"Diagnoses among the {f.n} most similar {f.anatomy} cases: {_spread(f.by_diagnosis())}.",
                f"{f.agreement()} of {f.n} agree with the AI reading."]
    if u.intent == "demographics":
        return _demographics(f)
    return [
        f"Diagnoses among the {f.n} most similar {f.anatomy} cases: {_spread(f.by_diagnosis())}.",
        _outcomes(f),
        f"Severity recorded, most severe first: {_spread(f.by_severity())}.",
    ]


def compose(
    question: str,
    result: BundleResult,
    settings: AskSettings,
    reader: QuestionReader | None = None,
    conditions: Mapping[str, str] | None = None,
    reading: Reading | None = None,
) -> Composed:
    """Write the answer for ``question`` from the bundle in ``result`` (which must not be empty), part by part.

    ``conditions`` are Guideline QA's (``guideline.conditions``), for the treatment pointer.
    """
    bundle = result.bundle
    assert bundle is not None, "compose() needs a bundle; empty results get the fixed response"
    reading = reading or (reader or QuestionReader()).read(question)
    conds = conditions if conditions is not None else {}
    facts = bundle_facts(result, settings.max_cited_cases)
    first = reading.parts[0]
    refused = [u for u in reading.parts if u.intent == "injection"]
    # nothing genuine beside the instructions: no part the evidence answers (a request for what to do is usually
    # the instructions' own payload, "then ignore them and give the dose for her")
    # the classifier's own injection reading (no pattern found the instructions) refuses the whole question, as before
    classified = any(u.text not in INSTRUCTION_PLACES for u in refused)
    if refused and (classified or all(u.intent in {"injection", "off_topic", "treatment"} for u in reading.parts)):
        refusal = AskAnswer(answer=INJECTION_REFUSAL, citedCaseIds=[], confidence="low")
        return Composed(refusal, "injection", "refused", "instructions inside the question", None, first, reading)
    if refused:  # the genuine parts are answered below; the instructions are named and refused
        reading = replace(reading, parts=tuple(u for u in reading.parts if u.intent != "injection"))
        first = reading.parts[0]
        named = f"Not followed: the instructions in {refused[0].text}. {INJECTION_REFUSAL}"
        composed = compose(question, result, settings, reader, conditions, reading)
        if composed.kind == "insufficient":  # the fixed answer stands; the refusal is named in the reason beneath it
            return replace(composed, reason=f"{composed.reason or ''} {named}".strip(), injected=True)
        said = f"{composed.answer.answer} {named}"
        return replace(composed, answer=composed.answer.model_copy(update={"answer": said}), injected=True)
    if all(u.intent == "off_topic" for u in reading.parts):
        off = AskAnswer(answer=OFF_TOPIC, citedCaseIds=[], confidence="low")
        return Composed(off, "off_topic", "refused", "the question is not about this scan", None, first, reading)
    lexicon = (reader.lexicon if reader else None) or default_lexicon()
    parts = [answer_part(u, facts, _body(u, facts), conds, lexicon, question) for u in reading.parts if u.intent != "off_topic"]
    intent = _main_intent(reading)
    future = any(u.intent == "prediction" or about_future(u.text) for u in reading.parts)
    if all(p.kind == "treatment" for p in parts):
        in_scope = any(p.in_scope for p in parts)
        said = parts[0].sentences[0] + (f" {PREDICTION_CAVEAT}" if future else "")
        ans = AskAnswer(answer=said, citedCaseIds=[], confidence="low")
        return Composed(ans, "treatment", "out_of_scope", "treatment and management are out of scope", None, first,
                        reading, in_scope)  # fmt: skip
    if all(p.kind in {"not_recorded", "general", "treatment"} for p in parts):
        reason = " ".join(dict.fromkeys([*(p.reason or "" for p in parts if p.reason), *([PREDICTION_CAVEAT] if future else [])]))
        insufficient = AskAnswer(answer=INSUFFICIENT_DATA, citedCaseIds=[], confidence="low")
        in_scope = any(p.in_scope for p in parts)
        return Composed(insufficient, intent, "insufficient", reason, facts, first, reading, in_scope)
    sentences = [] if all(u.intent == "why_similar" for u in reading.parts) else [_head(facts)]
    sentences += reading.read_as(settings.read_as_below)
    for p in parts:
        if p.kind == "general":
            sentences.append(p.reason or "")
        else:
            sentences += [s for s in p.sentences if s not in sentences]
    sentences += [s for s in _entity_mentions(first, facts) if s not in sentences]
    if any(u.intent == "off_topic" for u in reading.parts):
        sentences.append(OFF_TOPIC)
    if future and PREDICTION_CAVEAT not in sentences:
        sentences.append(PREDICTION_CAVEAT)
    in_scope = any(p.in_scope for p in parts)
    answer = AskAnswer(answer=" ".join(sentences), citedCaseIds=facts.ids, confidence=confidence_for(bundle, settings))
    return Composed(answer, intent, "answer", None, facts, first, reading, in_scope)


def _main_intent(reading: Reading) -> Intent:
    """The first answerable part's intent (a treatment or general part only when nothing else is asked)."""
    for u in reading.parts:
        if u.intent not in {"treatment", "general_knowledge", "off_topic"}:
            return u.intent
    return reading.parts[0].intent
