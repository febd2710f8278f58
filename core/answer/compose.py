"""The extractive composer: an answer written in code from the bundle's facts, with no language model.

:func:`compose` understands the question (:mod:`core.answer.understand`), computes
the facts (:mod:`core.answer.facts`) and writes the answer for the intent. It
abstains with the contract's "Insufficient data..." only when a condition the
question names is absent from the evidence or the intent cannot be answered from
a bundle (general medical knowledge); the reason is one sentence. Treatment and
management questions get the fixed out-of-scope answer that points to Guideline QA.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from core.answer.facts import AnswerFacts, EventCount, bundle_facts
from core.answer.understand import Intent, Understanding, understand
from core.config.ask import AskSettings
from core.contracts import INSUFFICIENT_DATA, AskAnswer, BundleResult, ContextBundle

__all__ = ["OUT_OF_SCOPE", "Composed", "absent_names", "compose", "confidence_for", "out_of_scope_answer"]

OUT_OF_SCOPE = (
    "Treatment, dosing and management are outside what similar cases can answer. "
    "Ask Guideline QA, which answers from the clinical guidelines and drug labels in Casebook."
)


@dataclass(frozen=True)
class Composed:
    """An extractive answer, the understood question and the facts it was written from."""

    answer: AskAnswer
    intent: Intent
    kind: Literal["answer", "insufficient", "out_of_scope"]
    reason: str | None = None
    facts: AnswerFacts | None = None
    understanding: Understanding | None = None


def out_of_scope_answer() -> AskAnswer:
    """The fixed answer to a treatment, dose or management question: no case is cited."""
    return AskAnswer(answer=OUT_OF_SCOPE, citedCaseIds=[], confidence="low")


def confidence_for(bundle: ContextBundle, settings: AskSettings) -> Literal["high", "medium", "low"]:
    """The documented confidence rule over similarity, agreement and the AI confidence.

    mean similarity of the similar cases, agreement = share of them whose diagnosis
    equals the scan's AI diagnosis, and the AI confidence must all clear the
    ``high_*`` thresholds for ``high``, the ``medium_*`` ones for ``medium``.
    """
    cases = bundle.similarCases
    if not cases:
        return "low"
    mean_sim = sum(c.similarity for c in cases) / len(cases)
    agree = sum(c.diagnosis.lower() == bundle.currentScan.diagnosis.lower() for c in cases) / len(cases)
    ai = bundle.currentScan.confidence
    if (
        mean_sim >= settings.high_min_similarity
        and agree >= settings.high_min_agreement
        and ai >= settings.high_min_ai_confidence
    ):
        return "high"
    if (
        mean_sim >= settings.medium_min_similarity
        and agree >= settings.medium_min_agreement
        and ai >= settings.medium_min_ai_confidence
    ):
        return "medium"
    return "low"


def _pct(x: float) -> str:
    return f"{round(x * 100):g}%"


def _ids(ids: list[str] | tuple[str, ...]) -> str:
    return ", ".join(ids)


def _spread(groups: list[tuple[str, list[str]]]) -> str:
    return "; ".join(f"{label} in {len(ids)} ({_ids(ids)})" for label, ids in groups)


def absent_names(u: Understanding, facts: AnswerFacts) -> list[str]:
    """Conditions or findings the question names that no evidence field mentions."""
    text = facts.evidence_text()
    missing = [
        e.name
        for e in u.entities
        if e.name.lower() != facts.ai_diagnosis.lower() and not any(t in text for t in e.evidence)
    ]
    missing += [w for w in u.unknown if w not in text]
    return missing + [label for label, stem in u.attributes if stem not in text]


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


def _body(u: Understanding, f: AnswerFacts) -> list[str]:
    head = _head(f)
    if u.intent in {"outcomes", "prediction"}:
        body = [head, _outcomes(f)]
        body.append("These are outcomes of past cases, not a prediction for this patient.")
        return body
    if u.intent == "count":
        if u.severity is not None and (u.event is None or u.severity == "critical"):
            return [head, _count_sentence(f.count_severity(u.severity), f)]
        if u.event is not None:
            return [head, _count_sentence(f.count(u.event), f), _outcomes(f)]
        named = [e for e in u.entities]
        if named:
            e = named[0]
            ids = [c.case_id for c in f.cases if any(t in c.diagnosis.lower() for t in e.evidence)]
            return [head, f"{len(ids)} of {f.n} similar cases have the diagnosis {e.name}" + (f" ({_ids(ids)})." if ids else ".")]
        return [head, _outcomes(f)]
    if u.intent == "severity":
        groups = f.by_severity()
        body = [head]
        if u.severity == "critical" and groups[0][0] != "critical":
            body.append(f"None of the {f.n} similar cases is recorded as critical; the most severe are {groups[0][0]} ({_ids(groups[0][1])}).")
        body.append(f"Severity recorded for the {f.n} similar cases, most severe first: {_spread(groups)}.")
        return body
    if u.intent == "prior":
        if not f.priors:
            return [f"No signed prior {f.anatomy} report of this patient is on record to compare with.", head,
                    f"The {f.n} most similar cases are {_ids(f.ids)}."]
        latest = f.priors[0]
        body = [f'Compared with the signed prior report of {latest.date or "an earlier date"}, which reads: "{latest.impression}"',
                f'Its findings: "{latest.findings}"']
        for p in f.priors[1:]:
            body.append(f'The earlier signed report of {p.date or "an earlier date"} reads: "{p.impression}"')
        body.append(f"{head} The current scan has no signed report yet; the change is for the reading doctor to judge.")
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
            "Similarity is computed from the images alone, not from reports or outcomes.",
        ]
    if u.intent == "differential":
        return [head, f"Diagnoses among the {f.n} most similar {f.anatomy} cases: {_spread(f.by_diagnosis())}.",
                f"{f.agreement()} of {f.n} agree with the AI reading."]
    return [
        head,
        f"Diagnoses among the {f.n} most similar {f.anatomy} cases: {_spread(f.by_diagnosis())}.",
        _outcomes(f),
        f"Severity recorded, most severe first: {_spread(f.by_severity())}.",
    ]


def compose(question: str, result: BundleResult, settings: AskSettings) -> Composed:
    """Write the answer for ``question`` from the bundle in ``result`` (which must not be empty)."""
    bundle = result.bundle
    assert bundle is not None, "compose() needs a bundle; empty results get the fixed response"
    u = understand(question)
    if u.intent == "treatment":
        return Composed(out_of_scope_answer(), u.intent, "out_of_scope", "treatment and management are out of scope", None, u)
    facts = bundle_facts(result, settings.max_cited_cases)
    insufficient = AskAnswer(answer=INSUFFICIENT_DATA, citedCaseIds=[], confidence="low")
    missing = absent_names(u, facts)
    if missing:
        names = [m[0].upper() + m[1:] for m in missing]
        named = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        verb = "is" if len(names) == 1 else "are"
        reason = (
            f"{named} {verb} not mentioned in this scan's AI reading, its {facts.n} similar cases "
            f"or {'its prior reports' if facts.priors else 'any prior report (there is none)'}."
        )
        return Composed(insufficient, u.intent, "insufficient", reason, facts, u)
    if u.intent == "general_knowledge":
        reason = "General medical knowledge (literature, incidence, test accuracy) is not part of this scan's evidence; Guideline QA may answer it."
        return Composed(insufficient, u.intent, "insufficient", reason, facts, u)
    sentences = [*_body(u, facts), *_entity_mentions(u, facts)]
    answer = AskAnswer(answer=" ".join(sentences), citedCaseIds=facts.ids, confidence=confidence_for(bundle, settings))
    return Composed(answer, u.intent, "answer", None, facts, u)
