"""Facts computed in code from a context bundle: the only numbers an answer may state.

:func:`bundle_facts` turns a :class:`BundleResult` into :class:`AnswerFacts`: the
cited cases, the spread of their diagnoses, outcomes and severities (critical
first), the dated prior reports, and :meth:`AnswerFacts.count` for an outcome
event ("3 of 5 similar cases record admission"). Every count is over the cited
cases only; an event no outcome mentions is reported as not recorded, never as 0.
The answer composer renders these facts; the output guard may check a model's
sentences against :meth:`AnswerFacts.numbers` and :meth:`AnswerFacts.phrases`.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

from core.answer.understand import SEVERITIES, Event
from core.contracts import BundleResult

__all__ = ["AnswerFacts", "CaseFact", "EventCount", "PriorFact", "bundle_facts"]


@dataclass(frozen=True)
class CaseFact:
    """One cited similar case."""

    case_id: str
    diagnosis: str
    outcome: str | None
    severity: str | None
    similarity: float
    age: int | None = None
    sex: str | None = None


@dataclass(frozen=True)
class PriorFact:
    """A signed prior report of the same patient and anatomy (newest first)."""

    date: str | None
    findings: str
    impression: str


@dataclass(frozen=True)
class EventCount:
    """How many cited cases record an event, and which; ``recorded`` is False when no outcome mentions it."""

    event: str
    positive: tuple[str, ...]
    negative: tuple[str, ...]
    total: int

    @property
    def recorded(self) -> bool:
        """True when at least one outcome mentions the event (as happening or as absent)."""
        return bool(self.positive or self.negative)


@dataclass(frozen=True)
class AnswerFacts:
    """Everything an extractive answer may state about one scan, computed from its bundle."""

    anatomy: str
    region: str | None
    ai_diagnosis: str
    ai_confidence: float
    cases: tuple[CaseFact, ...]
    priors: tuple[PriorFact, ...]
    past_conditions: tuple[str, ...] = ()
    counts: dict[str, EventCount] = field(default_factory=dict)
    basis: str = ""  # what the similarity measures (core.cases.evidence.basis_sentence)

    @property
    def ids(self) -> list[str]:
        """Cited case IDs in similarity order."""
        return [c.case_id for c in self.cases]

    @property
    def n(self) -> int:
        """Number of cited cases."""
        return len(self.cases)

    def by_diagnosis(self) -> list[tuple[str, list[str]]]:
        """(diagnosis, case IDs), most frequent first."""
        return _groups((c.diagnosis, c.case_id) for c in self.cases)

    def by_outcome(self) -> list[tuple[str, list[str]]]:
        """(outcome, case IDs), most frequent first; a missing outcome is 'outcome not recorded'."""
        return _groups((c.outcome or "outcome not recorded", c.case_id) for c in self.cases)

    def by_severity(self) -> list[tuple[str, list[str]]]:
        """(severity, case IDs), critical first."""
        groups = dict(_groups((c.severity or "not recorded", c.case_id) for c in self.cases))
        order = [*SEVERITIES, "not recorded"]
        return [(s, groups[s]) for s in order if s in groups]

    def agreement(self) -> int:
        """Cited cases whose diagnosis equals the AI reading."""
        return sum(c.diagnosis.lower() == self.ai_diagnosis.lower() for c in self.cases)

    def count(self, event: Event) -> EventCount:
        """Cited cases whose outcome records ``event`` (positive) or records it absent ("No recurrence...")."""
        pos: list[str] = []
        neg: list[str] = []
        for c in self.cases:
            text = (c.outcome or "").lower()
            hits = [m for s in event.stems for m in re.finditer(rf"\b{re.escape(s)}", text)]
            if not hits:
                continue
            negated = all(re.search(r"\bno (?:new )?$", text[: m.start()]) for m in hits)
            (neg if negated else pos).append(c.case_id)
        result = EventCount(event.name, tuple(pos), tuple(neg), self.n)
        self.counts[event.name] = result
        return result

    def count_terms(self, name: str, terms: tuple[str, ...]) -> EventCount:
        """Cited cases whose diagnosis or outcome records a concept (any of ``terms``), or records it absent."""
        pos: list[str] = []
        neg: list[str] = []
        for c in self.cases:
            text = f"{c.diagnosis}. {c.outcome or ''}".lower().replace("-", " ")
            hits = [m for t in terms for m in re.finditer(rf"\b{re.escape(t)}", text)]
            if not hits:
                continue
            negated = all(re.search(r"\bno (?:new )?$", text[: m.start()]) for m in hits)
            (neg if negated else pos).append(c.case_id)
        result = EventCount(name, tuple(pos), tuple(neg), self.n)
        self.counts[name] = result
        return result

    def count_severity(self, severity: str) -> EventCount:
        """Cited cases recorded at ``severity``."""
        pos = tuple(c.case_id for c in self.cases if c.severity == severity)
        others = tuple(c.case_id for c in self.cases if c.severity and c.severity != severity)
        result = EventCount(f"{severity} severity", pos, others, self.n)
        self.counts[result.event] = result
        return result

    def evidence_text(self) -> str:
        """Lower-case text of every evidence field, to look named conditions up in."""
        parts = [self.ai_diagnosis, self.anatomy, self.region or "", *self.past_conditions]
        parts += [f"{c.diagnosis} {c.outcome or ''}" for c in self.cases]
        parts += [f"{p.findings} {p.impression}" for p in self.priors]
        return " ".join(parts).lower().replace("_", " ").replace("-", " ")

    def numbers(self) -> set[str]:
        """Every number an answer built from these facts may state (counts, percentages, dates' parts)."""
        out = {str(i) for i in range(self.n + 1)}
        for s in [c.similarity for c in self.cases] + [self.ai_confidence]:
            out.add(f"{round(s * 100):g}")
        for p in self.priors:
            if p.date:
                out |= set(p.date.split("-")) | {p.date}
            out |= set(re.findall(r"\d+(?:\.\d+)?", f"{p.findings} {p.impression}"))
        for c in self.cases:
            out |= set(re.findall(r"\d+(?:\.\d+)?", c.outcome or ""))
            if c.age is not None:
                out.add(str(c.age))
        return out

    def phrases(self) -> set[str]:
        """Verbatim evidence phrases an answer may quote (diagnoses, outcomes, prior report text)."""
        out = {self.ai_diagnosis} | {c.diagnosis for c in self.cases} | {c.outcome for c in self.cases if c.outcome}
        out |= {p.impression for p in self.priors} | {p.findings for p in self.priors}
        return out


def _groups(pairs: object) -> list[tuple[str, list[str]]]:
    groups: dict[str, list[str]] = defaultdict(list)
    for key, cid in pairs:  # type: ignore[attr-defined]
        groups[key].append(cid)
    return sorted(groups.items(), key=lambda kv: -len(kv[1]))


def bundle_facts(result: BundleResult, max_cases: int) -> AnswerFacts:
    """Facts over the first ``max_cases`` similar cases of ``result`` (which must hold a bundle)."""
    bundle = result.bundle
    assert bundle is not None, "bundle_facts() needs a bundle"
    n = min(len(bundle.similarCases), max_cases)
    cases = tuple(
        CaseFact(cid, c.diagnosis, c.outcome, sev, c.similarity, age, sex)
        for cid, c, sev, age, sex in zip(
            result.case_ids[:n], bundle.similarCases[:n], result.severities[:n],
            result.ages[:n] or [None] * n, result.sexes[:n] or [None] * n, strict=False,
        )
    )
    dates = list(result.prior_dates) + [None] * (len(bundle.priorReports) - len(result.prior_dates))
    priors = tuple(PriorFact(d, r.findings, r.impression) for d, r in zip(dates, bundle.priorReports, strict=False))
    scan = bundle.currentScan
    return AnswerFacts(
        anatomy=scan.anatomy,
        region=scan.region,
        ai_diagnosis=scan.diagnosis,
        ai_confidence=scan.confidence,
        cases=cases,
        priors=priors,
        past_conditions=tuple(bundle.patientContext.pastConditions),
        basis=result.similarity_basis or "",
    )
