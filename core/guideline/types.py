"""Typed results of Guideline QA: an answer with cited bullets, or an abstention with its reason.

Both carry the :class:`Trace` of every step (candidates before and after each
filter and gate), so a reviewer can see why an answer was given or refused.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from core.contracts import Abstention

__all__ = ["ABSTAIN", "Bullet", "Disagreement", "EvidenceChunk", "QAAbstention", "QAAnswer", "QAResult", "Route",
           "RouteDecision", "Snippet", "SourceRef", "Trace", "TraceStep"]  # fmt: skip

Route = Literal["guideline", "drug", "mixed", "out_of_domain"]
ABSTAIN: Literal["ABSTAIN"] = "ABSTAIN"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class RouteDecision(_Model):
    """What the router decided and on which words."""

    route: Route
    reason: str
    drugs: list[str] = Field(default_factory=list, description="Lexicon names of the drugs the question names.")
    diagnosis: bool = False
    refused: bool = Field(False, description="A prompt injection or harm request, refused with the fixed message.")
    triggers: list[str] = Field(default_factory=list)
    drug_task: list[str] = Field(default_factory=list)
    guideline_task: list[str] = Field(default_factory=list)

    @property
    def kbs(self) -> tuple[str, ...]:
        """The knowledge bases this route searches."""
        from core.kb.specs import kbs_for_route  # here: importing core.kb loads the whole package

        return kbs_for_route(self.route)


class SourceRef(_Model):
    """Which document a piece of evidence comes from: title, issuer, year, section, page and whose space holds it."""

    doc_id: str
    title: str
    issuer: str | None = None
    year: int | None = None
    section: str = ""
    page: int | None = None
    kb: str = ""
    owner: str = Field("", description="Whose document: 'curated', 'shared' or the doctor's space slug (user.<slug>).")

    def line(self) -> str:
        """One line naming the source: ``Title (Issuer, 2025), 5.2 When to start ART, p. 18 [owner]``."""
        who = ", ".join(str(x) for x in (self.issuer, self.year) if x)
        parts = [f"{self.title} ({who})" if who else self.title]
        if self.section:
            parts.append(self.section)
        if self.page:
            parts.append(f"p. {self.page}")
        return ", ".join(parts) + (f" [{self.owner}]" if self.owner else "")


class Disagreement(_Model):
    """Two or more sources that answer the same question with different values (shown side by side, never merged)."""

    topic: str = Field(description="What differs: the question's slot (dose, duration, timing...) or 'answer'.")
    values: dict[str, list[str]] = Field(description="Document title -> the values it states (numbers with units).")

    def line(self) -> str:
        """``Sources differ on timing: A says 2 weeks; B says 8 weeks.``"""
        said = "; ".join(f"{doc} says {', '.join(v)}" for doc, v in self.values.items())
        return f"Sources differ on {self.topic}: {said}."


class Snippet(_Model):
    """The evidence sentence that best supports a bullet, and where it comes from."""

    text: str
    score: float = Field(description="Jaccard similarity of the bullet's and the sentence's key tokens.")
    source: str = Field(description="\"<drug> label — <section>\" or \"<guideline title> — <section>\".")
    kb: str
    chunk_id: str
    demo: bool = Field(False, description="Whether the source is demo content (built from the assets folder).")
    ref: SourceRef | None = Field(None, description="The document, section and page the snippet comes from.")


class EvidenceChunk(_Model):
    """A chunk the answer was drafted from (what the gates checked against)."""

    chunk_id: str
    kb: str
    source: str
    text: str
    drug_names: list[str] = Field(default_factory=list)
    section_code: str | None = None
    section_path: list[str] = Field(default_factory=list, description="Guideline heading path (empty for labels).")
    confidence: float = Field(description="Calibrated retrieval confidence.")
    boost: float = 0.0
    demo: bool = Field(False, description="Whether the source is demo content (built from the assets folder).")


class Bullet(_Model):
    """One answer sentence with its supporting snippet and its entailment overlap."""

    text: str
    evidence: Snippet
    overlap: float = Field(description="|K_evidence ∩ K_bullet| / |K_bullet| against all evidence chunks.")
    population: str | None = Field(None, description="The patient group the evidence is written for, when it names one.")
    other_population: bool = Field(
        False, description="The evidence is for another patient group than the question's: shown only as such."
    )


class DoseConflict(_Model):
    """A dose from a document space that contradicts the curated label's dose for the same slot
    (drug, patient group, unit, weight band; core.guideline.conflicts): shown beside the label, never as the answer."""

    text: str = Field(description="The sentence from the uploaded document, shown as a conflict, never as the answer.")
    kb: str = Field(description="The document space it came from.")
    chunk_id: str
    drug: str
    population: str | None = None
    stated: list[str] = Field(default_factory=list, description="Doses it states that contradict the label's.")
    label: list[str] = Field(default_factory=list, description="The label's doses for the same slot.")
    source: str = Field("", description="The uploaded document's title.")
    label_source: str = Field("", description="The curated label's name (\"Isoniazid label\").")
    label_lines: list[str] = Field(default_factory=list, description="The label's own lines stating its doses.")


class TraceStep(_Model):
    """One step: the chunk ids (or bullets) before and after it, and what it saw."""

    name: str
    before: list[str] = Field(default_factory=list)
    after: list[str] = Field(default_factory=list)
    detail: dict[str, Any] = Field(default_factory=dict)


class Trace(BaseModel):
    """Every step of one question, in order (mutable while the pipeline runs)."""

    model_config = ConfigDict(extra="forbid")

    steps: list[TraceStep] = Field(default_factory=list)

    def add(self, name: str, before: list[str] | None = None, after: list[str] | None = None, **detail: Any) -> None:
        """Record one step."""
        self.steps.append(TraceStep(name=name, before=before or [], after=after or [], detail=detail))

    def step(self, name: str) -> TraceStep | None:
        """The last step called ``name``, if any."""
        return next((s for s in reversed(self.steps) if s.name == name), None)

    def writer(self) -> str:
        """Who wrote the bullets: the backend the last ``generate`` step names (``extractive`` after a fallback)."""
        step = self.step("generate")
        return str(step.detail.get("backend", "extractive")) if step is not None else "extractive"


class QAAnswer(BaseModel):
    """A supported answer: clinician bullets, an optional patient-friendly summary, the trace."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["answer"] = "answer"
    question: str
    route: Route
    statement: str | None = Field(
        None,
        description="A direct answer shown above the bullets: Yes/No for a yes/no question, or a structural fact "
        "from the label (\"The X label lists no contraindications\", \"The X label has no boxed warning\").",
    )
    finding: Literal["yes", "no", "none_listed", "absent_section"] | None = Field(
        None, description="What the statement says, machine-readable."
    )
    slot: str | None = Field(None, description="What the question asks for (dose, duration, regimen...).")
    bullets: list[Bullet]
    evidence: list[EvidenceChunk]
    patient_summary: str | None = None
    conflicts: list[DoseConflict] = Field(
        default_factory=list, description="Doses from uploaded documents that contradict the curated label."
    )
    disagreements: list[Disagreement] = Field(
        default_factory=list, description="Where the sources answer with different values, each shown as one."
    )
    population: str | None = Field(None, description="The patient group the question is about (adults by default).")
    backend: str = Field(description="`extractive` or the LLM backend name that wrote the bullets.")
    confidence: float = Field(
        description="Shown confidence: over a doctor's document spaces the fitted P(correct) map "
        "(core.guideline.answer_confidence), else the calibrated retrieval confidence of the best evidence chunk."
    )
    trace: Trace


class QAAbstention(Abstention):
    """The standard ABSTAIN result: the shared :class:`~core.contracts.Abstention` (reason, stage, detail)
    with the question, its route and the trace.

    ``stage`` is where it stopped: policy (refused request), router, retrieval,
    confidence, generation, verification.
    """

    kind: Literal["abstain"] = "abstain"
    answer: Literal["ABSTAIN"] = ABSTAIN
    question: str
    route: Route
    trace: Trace


QAResult = QAAnswer | QAAbstention
