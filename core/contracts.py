"""The contract's shapes as strict pydantic models.

Field names follow the product contract (camelCase) so JSON leaves the process
exactly as specified. The context bundle is what a language model may see: no
names, no patient or scan ids, no dates, no free text beyond stored report
fields. Case ids stay beside it (:class:`BundleResult.case_ids`) so answers can
cite them and the citations can be checked.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "INSUFFICIENT_DATA",
    "NO_COMPARABLE_CASES",
    "Abstention",
    "AskAnswer",
    "BundleResult",
    "ContextBundle",
    "CurrentScan",
    "EmptyReason",
    "PatientContextOut",
    "PriorReport",
    "SimilarCase",
    "SimilarCaseBrief",
    "SimilarCasesResult",
    "no_comparable_answer",
]

NO_COMPARABLE_CASES = "No comparable cases found in system memory. Manual review recommended."
INSUFFICIENT_DATA = "Insufficient data to answer this question based on available cases."
# An imported scan before any AI model has read it: its look-alikes come from its pixels, not from a reading.
AWAITING_READING = "Awaiting AI reading"


class Strict(BaseModel):
    """Base: unknown fields are an error and instances are immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class EmptyReason(StrEnum):
    """Why a search or bundle is empty."""

    NO_EMBEDDING = "no_embedding"
    NO_SIMILAR_CASES = "no_similar_cases"
    LOW_CONFIDENCE = "low_confidence"
    SEARCH_FAILED = "search_failed"


class SimilarCase(Strict):
    """One neighbour of a scan, as ``get_similar_cases`` returns it."""

    caseId: str
    diagnosis: str
    outcome: str | None = None
    similarity: float = Field(ge=0, le=1)
    severity: str | None = None
    region: str | None = None
    age: int | None = None
    sex: str | None = None
    date: str | None = Field(None, description="When the case was imaged (ISO date), if known.")
    drivers: list[str] = Field(
        default_factory=list, description="Feature groups that make this case close to the scan (encoder-dependent)."
    )


class SimilarCasesResult(Strict):
    """Similar cases, or a typed empty result with its reason."""

    cases: list[SimilarCase]
    scope: Literal["region", "anatomy"] = "anatomy"
    notice: str | None = None
    empty_reason: EmptyReason | None = None
    index_version: str | None = None

    @property
    def is_empty(self) -> bool:
        """True when no case came back."""
        return not self.cases


class CurrentScan(Strict):
    """The scan under review, de-identified."""

    anatomy: str
    region: str | None = None
    diagnosis: str
    confidence: float = Field(ge=0, le=1)


class PatientContextOut(Strict):
    """Context, never a diagnosis."""

    age: int | None = None
    sex: str | None = None
    pastConditions: list[str] = Field(default_factory=list)


class SimilarCaseBrief(Strict):
    """A similar case as the language model sees it (its id is kept beside the bundle)."""

    diagnosis: str
    outcome: str | None = None
    similarity: float = Field(ge=0, le=1)


class PriorReport(Strict):
    """A signed report of an earlier scan of the same patient and anatomy."""

    findings: str
    impression: str


class ContextBundle(Strict):
    """Exactly the contract's bundle: the only facts a language model may use."""

    currentScan: CurrentScan
    patientContext: PatientContextOut
    similarCases: list[SimilarCaseBrief]
    priorReports: list[PriorReport]


class BundleResult(Strict):
    """A bundle plus the case ids parallel to ``bundle.similarCases`` (never sent to a model)."""

    bundle: ContextBundle | None
    case_ids: list[str] = Field(default_factory=list)
    severities: list[str | None] = Field(default_factory=list)
    ages: list[int | None] = Field(default_factory=list, description="Ages parallel to case_ids; never sent to a model.")
    sexes: list[str | None] = Field(default_factory=list, description="Sexes parallel to case_ids; never sent to a model.")
    prior_dates: list[str] = Field(
        default_factory=list, description="Signing dates (ISO) parallel to bundle.priorReports; never sent to a model."
    )
    prior_days_before: list[int] = Field(
        default_factory=list,
        description="Days from each prior report's signing to this scan, parallel to prior_dates; a model may see these.",
    )
    empty_reason: EmptyReason | None = None
    notice: str | None = None
    similarity_basis: str | None = Field(
        None, description="One sentence on what the similarity measures for these cases; never sent as evidence."
    )


class AskAnswer(Strict):
    """The contract's answer shape."""

    answer: str
    citedCaseIds: list[str]
    confidence: Literal["high", "medium", "low"]


class Abstention(Strict):
    """No answer, and why: the one shape Ask AI, Guideline QA and Self-RAG abstain with.

    ``reason`` is what the user is shown (as each feature always showed it);
    ``stage`` is where the pipeline stopped; ``detail`` says more for the trace
    and the logs. Guideline QA's result adds the question, route and trace
    (``core.guideline.types.QAAbstention``).

    | feature | stages |
    |---|---|
    | Ask AI | ``router`` (out of scope), ``retrieval`` (no comparable case), ``evidence`` (not in the evidence) |
    | Guideline QA | ``policy``, ``router``, ``retrieval``, ``confidence``, ``generation``, ``verification`` |
    | Self-RAG | ``backend`` (timeout, backend error), ``generation`` (no text), ``extraction`` (no letter) |
    """

    reason: str
    stage: str = Field(description="Where it stopped (see the table above).")
    detail: str = ""


def no_comparable_answer() -> AskAnswer:
    """The contract's fixed fail-closed response."""
    return AskAnswer(answer=NO_COMPARABLE_CASES, citedCaseIds=[], confidence="low")
