"""What a similar-case card says: the facts a doctor reads at a glance, in one place (pages render them)."""

from __future__ import annotations

from dataclasses import dataclass

from core.contracts import SimilarCase

__all__ = ["CaseCard", "age_band", "case_card"]


def age_band(age: int | None) -> str:
    """A ten-year band (``60-69``), ``90+`` from 90, or ``age n/a`` (an exact age is not needed to compare)."""
    if age is None:
        return "age n/a"
    if age >= 90:
        return "90+"
    lo = (age // 10) * 10
    return f"{lo}-{lo + 9}"


@dataclass(frozen=True)
class CaseCard:
    """One card: a title line, a facts line, the outcome line, the similarity and what drives it."""

    title: str
    facts: str
    outcome: str
    similarity: float
    why: str


def case_card(case: SimilarCase) -> CaseCard:
    """The card for ``case``: age band, sex, date imaged, region, diagnosis, outcome, similarity and its drivers."""
    sex = {"M": "male", "F": "female"}.get(case.sex or "", "sex n/a")
    region = (case.region or "region n/a").replace("_", " ")
    when = f"imaged {case.date}" if case.date else "date n/a"
    why = f"Similar in {' and '.join(case.drivers)}" if case.drivers else "Similarity from the image encoder"
    return CaseCard(
        title=f"{case.caseId} · {case.diagnosis}",
        facts=f"{age_band(case.age)} · {sex} · {when} · {region}",
        outcome=f"Outcome: {case.outcome or 'not recorded'} · severity {case.severity or 'n/a'}",
        similarity=case.similarity,
        why=why,
    )
