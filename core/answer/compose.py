"""The extractive composer: an answer written from the bundle alone, with no language model.

It is shown at once, and it stands whenever the LLM is off, slow past its budget,
or fails. Every sentence is built from bundle fields and cites the case IDs it
draws on; a question that names something the bundle does not contain gets the
fixed "Insufficient data" answer.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Literal

from core.answer.rules import QUESTION_VOCAB, bundle_vocabulary, content_tokens
from core.answer.settings import AskSettings
from core.contracts import INSUFFICIENT_DATA, AskAnswer, BundleResult, ContextBundle

__all__ = ["Intent", "classify", "compose", "confidence_for", "ungrounded_terms"]

Intent = Literal["prognosis", "severity", "compare", "diagnosis", "prior", "general"]
_INTENT_WORDS: dict[Intent, tuple[str, ...]] = {
    "prognosis": ("prognos", "outcome", "recover", "surviv", "mortal", "happen", "course", "expect", "die"),
    "severity": ("sever", "critical", "serious", "urgent", "risk"),
    "prior": ("prior", "previous", "earlier", "progress", "change", "compared with", "before", "history"),
    "compare": ("similar", "compare", "comparison", "match", "closest", "nearest", "like this"),
    "diagnosis": ("diagnos", "what is", "is this", "is it", "differential", "confiden", "reading"),
}


@dataclass(frozen=True)
class Composed:
    """An extractive answer and the intent it answered."""

    answer: AskAnswer
    intent: Intent | None
    ungrounded: tuple[str, ...] = ()


def classify(question: str) -> Intent:
    """The first intent whose cue words occur in the question."""
    q = question.lower()
    for intent, cues in _INTENT_WORDS.items():
        if any(c in q for c in cues):
            return intent
    return "general"


def ungrounded_terms(question: str, bundle: ContextBundle) -> list[str]:
    """Content words of the question found neither in the bundle nor in the question vocabulary."""
    vocab = bundle_vocabulary(bundle)
    stems = {_stem(w) for w in vocab}
    out = []
    for w in sorted(content_tokens(question)):
        if w in vocab or w in QUESTION_VOCAB or len(w) <= 2 or w.isdigit() or _stem(w) in stems:
            continue
        out.append(w)
    return out


def _stem(word: str) -> str:
    """A light suffix strip so plurals and adjectives match ("emphysematous" -> "emphysema")."""
    for suffix in ("tous", "ous", "ies", "es", "ic", "al", "ed", "ing", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


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


def _ids(ids: list[str]) -> str:
    return ", ".join(ids)


def compose(question: str, result: BundleResult, settings: AskSettings) -> Composed:
    """Write the answer for ``question`` from the bundle in ``result`` (which must not be empty)."""
    bundle = result.bundle
    assert bundle is not None, "compose() needs a bundle; empty results get the fixed response"
    ungrounded = ungrounded_terms(question, bundle)
    if ungrounded:
        return Composed(AskAnswer(answer=INSUFFICIENT_DATA, citedCaseIds=[], confidence="low"), None, tuple(ungrounded))
    intent = classify(question)
    n = min(len(bundle.similarCases), settings.max_cited_cases)
    cases = list(zip(result.case_ids[:n], bundle.similarCases[:n], result.severities[:n], strict=False))
    ids = [c[0] for c in cases]
    scan = bundle.currentScan
    lo, hi = min(c[1].similarity for c in cases), max(c[1].similarity for c in cases)
    span = _pct(hi) if _pct(lo) == _pct(hi) else f"{_pct(lo)} to {_pct(hi)}"
    head = (
        f"The AI reading of this {scan.anatomy} scan is {scan.diagnosis} at {_pct(scan.confidence)} confidence. "
        f"Based on similar cases, the {n} closest {scan.anatomy} cases in memory ({_ids(ids)}) have similarity {span}."
    )
    body: list[str] = []
    if intent == "prognosis":
        groups: dict[str, list[str]] = defaultdict(list)
        for cid, c, _ in cases:
            groups[c.outcome or "outcome not recorded"].append(cid)
        parts = [f"{o} ({_ids(g)})" for o, g in sorted(groups.items(), key=lambda kv: -len(kv[1]))]
        body.append("Recorded outcomes of these cases: " + "; ".join(parts) + ".")
        body.append("These are outcomes of past cases, not a prediction for this patient.")
    elif intent == "severity":
        sev: dict[str, list[str]] = defaultdict(list)
        for cid, _, s in cases:
            sev[s or "not recorded"].append(cid)
        order = ["critical", "high", "moderate", "low", "not recorded"]
        parts = [f"{s} ({_ids(sev[s])})" for s in order if s in sev]
        body.append("Severity recorded for these cases: " + "; ".join(parts) + ".")
    elif intent == "prior" and bundle.priorReports:
        latest = bundle.priorReports[0]
        body.append(f'The most recent signed prior report reads: "{latest.impression}"')
        if len(bundle.priorReports) > 1:
            body.append(
                f"The earliest of the {len(bundle.priorReports)} prior reports in the bundle reads: "
                f'"{bundle.priorReports[-1].impression}"'
            )
    elif intent == "prior":
        body.append(f"No signed prior {scan.anatomy} report of this patient is in the record to compare with.")
    else:
        diag = Counter(c.diagnosis for _, c, _ in cases)
        parts = [f"{d} ({_ids([cid for cid, c, _ in cases if c.diagnosis == d])})" for d, _ in diag.most_common()]
        body.append("Diagnoses among them: " + "; ".join(parts) + ".")
        agree = diag.get(scan.diagnosis, 0)
        body.append(f"{agree} of {n} agree with the AI reading.")
    body.append("This is a draft for a doctor's review.")
    answer = AskAnswer(answer=" ".join([head, *body]), citedCaseIds=ids, confidence=confidence_for(bundle, settings))
    return Composed(answer, intent)
