"""Report drafts: generated in memory, saved only by an explicit action, signed into immutable reports.

This module owns the draft's shape (:class:`DraftText`, the stored COMPARISON +
FINDINGS text) and the template draft written from the record alone. The model's part
(estimate, live stream, Cancel) is :mod:`core.reports.writer`; saving, signing and
amending are :mod:`core.reports.store`.

A generated draft has four sections a doctor could sign: COMPARISON (the prior
signed reports, by date, labelled prior), FINDINGS (the current scan only, its AI
reading marked "AI reading, not verified"), IMPRESSION (no internal case ID: the
similar-case evidence stays beside the report in ``DraftText.evidence``) and
RECOMMENDATIONS (follow-up wording only). COMPARISON is stored as the labelled
first paragraph of the findings column. A language model may word IMPRESSION and
RECOMMENDATIONS only; ``DraftText.author`` says whether the model or the template
wrote the draft, and ``reason`` why the template stands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.contracts import NO_COMPARABLE_CASES, BundleResult

__all__ = [
    "AI_MARK",
    "COMPARISON_LABEL",
    "DraftText",
    "join_findings",
    "parse_sections",
    "split_findings",
    "template_draft",
]

STANDARD_RECOMMENDATIONS = "Follow-up imaging as clinically indicated."
COMPARISON_LABEL = "COMPARISON:"
AI_MARK = "AI reading, not verified"
_SECTION_RE = re.compile(r"(COMPARISON|FINDINGS|IMPRESSION|RECOMMENDATIONS)\s*:\s*", re.I)


def join_findings(comparison: str, findings: str) -> str:
    """The stored FINDINGS text: a labelled COMPARISON paragraph (when there is one), then the current findings."""
    return f"{COMPARISON_LABEL} {comparison.strip()}\n\n{findings.strip()}" if comparison.strip() else findings.strip()


def split_findings(text: str) -> tuple[str, str]:
    """``(comparison, findings)`` of a stored FINDINGS text written by :func:`join_findings`."""
    if not text.startswith(COMPARISON_LABEL):
        return "", text
    head, _, rest = text[len(COMPARISON_LABEL) :].partition("\n\n")
    return head.strip(), rest.strip()


@dataclass(frozen=True)
class DraftText:
    """The contract's draft shape, plus which path wrote it and the evidence beside it. Not stored until saved.

    ``findings`` is the stored text: the COMPARISON paragraph (prior signed reports,
    by date, labelled prior) followed by the current scan's findings. ``evidence``
    holds the similar-case IDs the draft rests on; they stay beside the report (in
    the trace), never in its text.
    """

    findings: str
    impression: str
    recommendations: str
    path: str = "extractive"
    evidence: tuple[str, ...] = ()
    reason: str | None = None

    @property
    def author(self) -> str:
        """``model`` when the language model wrote part of the draft, else ``template``."""
        return "model" if self.path == "llm" else "template"

    def sections(self) -> dict[str, str]:
        """COMPARISON, FINDINGS (current scan only), IMPRESSION and RECOMMENDATIONS as separate texts."""
        comparison, findings = split_findings(self.findings)
        return {
            "comparison": comparison,
            "findings": findings,
            "impression": self.impression,
            "recommendations": self.recommendations,
        }

    def as_contract(self) -> dict[str, str]:
        """``{findings, impression, recommendations}`` exactly."""
        return {"findings": self.findings, "impression": self.impression, "recommendations": self.recommendations}


def _comparison(result: BundleResult) -> str:
    b = result.bundle
    assert b is not None
    if not b.priorReports:
        return f"No prior signed {b.currentScan.anatomy} report of this patient is on record."
    dates = list(result.prior_dates) + [""] * len(b.priorReports)
    parts = [
        f"Prior signed report{f' of {d}' if d else ''} (prior): {r.impression} {r.findings}"
        for d, r in zip(dates, b.priorReports, strict=False)
    ]
    return " ".join(parts)


def template_draft(result: BundleResult) -> DraftText:
    """The draft written from the record alone: it stands whenever the model does not (or may not) word it."""
    b = result.bundle
    if b is None:
        return DraftText(
            f"{NO_COMPARABLE_CASES}", "Manual review required; no AI-assisted impression.", STANDARD_RECOMMENDATIONS
        )
    scan = b.currentScan
    where = f" in the {scan.region.replace('_', ' ')}" if scan.region else ""
    findings = f"{AI_MARK}: {scan.diagnosis}{where}, AI confidence {round(scan.confidence * 100)}%."
    impression = f"{scan.diagnosis} ({AI_MARK})."
    recommendations = STANDARD_RECOMMENDATIONS
    if b.priorReports:
        latest = result.prior_dates[0] if result.prior_dates else ""
        impression += f" Compare with the prior signed report{f' of {latest}' if latest else ''}."
        recommendations += f" Compare with the prior study{f' of {latest}' if latest else ''} at follow-up."
    return DraftText(
        join_findings(_comparison(result), findings),
        impression,
        recommendations,
        evidence=tuple(result.case_ids),
    )


def parse_sections(text: str) -> dict[str, str]:
    """``{"impression": ..., ...}`` from a model's "IMPRESSION: ..." text (keys lower case, in order of appearance)."""
    parts = _SECTION_RE.split(text)
    return {parts[i].lower(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
