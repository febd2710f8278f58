"""Report drafts: generated in memory, saved only by an explicit action, signed into immutable reports.

``generate_report_draft`` never writes. ``save_draft`` creates or updates a
``report_drafts`` row; ``sign_draft`` turns a saved draft into a signed report;
``amend_report`` creates a new version that supersedes a signed report, which
itself never changes. Those three live in :mod:`core.answer.draft_store`
(ownership, versions, locks and audit) and are re-exported here.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from core.answer.draft_store import amend_report, save_draft, sign_draft
from core.answer.guard import guard_draft_sections
from core.answer.prompt import draft_messages, prompt_hash
from core.answer.records import audit
from core.cases import build_context_bundle
from core.contracts import NO_COMPARABLE_CASES, BundleResult
from core.errors import CasebookError
from core.llm.base import LLM, Message
from core.runtime import Runtime

__all__ = ["DraftText", "amend_report", "generate_report_draft", "save_draft", "sign_draft"]

STANDARD_RECOMMENDATIONS = (
    "Compare with prior imaging where available. Correlate with clinical findings. "
    "Follow-up imaging as clinically indicated."
)
_SECTION_RE = re.compile(r"(FINDINGS|IMPRESSION|RECOMMENDATIONS)\s*:\s*", re.I)


@dataclass(frozen=True)
class DraftText:
    """The contract's draft shape, plus which path wrote it. Not stored until saved."""

    findings: str
    impression: str
    recommendations: str
    path: str = "extractive"

    def as_contract(self) -> dict[str, str]:
        """``{findings, impression, recommendations}`` exactly."""
        return {"findings": self.findings, "impression": self.impression, "recommendations": self.recommendations}


def _extractive(result: BundleResult) -> DraftText:
    b = result.bundle
    if b is None:
        return DraftText(
            f"{NO_COMPARABLE_CASES}", "Manual review required; no AI-assisted impression.", STANDARD_RECOMMENDATIONS
        )
    scan = b.currentScan
    where = f" ({scan.region.replace('_', ' ')})" if scan.region else ""
    findings = [f"AI reading: {scan.diagnosis}{where}, confidence {round(scan.confidence * 100)}%."]
    if b.priorReports:
        findings.append(f"Prior signed report for comparison: {b.priorReports[0].findings}")
    agree = Counter(c.diagnosis for c in b.similarCases).get(scan.diagnosis, 0)
    ids = ", ".join(result.case_ids)
    impression = (
        f"{scan.diagnosis}, pending radiologist confirmation. Based on similar cases, {agree} of "
        f"{len(b.similarCases)} closest cases ({ids}) share this diagnosis."
    )
    return DraftText(" ".join(findings), impression, STANDARD_RECOMMENDATIONS)


def _sections(text: str) -> dict[str, str]:
    parts = _SECTION_RE.split(text)
    return {parts[i].lower(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def generate_report_draft(
    rt: Runtime, scan_id: str, llm: LLM | None = None, *, doctor_id: int | None = None
) -> DraftText:
    """A FINDINGS / IMPRESSION / RECOMMENDATIONS draft grounded in the bundle.

    Writes no draft or report. When a language model is called, one audit row
    records who asked, the backend, the prompt hash and which path won (the
    prompt text itself is never stored).
    """
    result = build_context_bundle(rt, scan_id)
    base = _extractive(result)
    if llm is None or result.bundle is None:
        return base
    messages = draft_messages(result)
    try:
        sections = _sections(llm.chat(messages).text)
    except CasebookError as exc:
        _audit_draft(rt, scan_id, doctor_id, llm, messages, f"extractive:fallback:{type(exc).__name__}")
        return base
    out = base.as_contract() | guard_draft_sections(sections, result).sections  # a section passes whole or not at all
    draft = DraftText(**out, path="llm" if out != base.as_contract() else "extractive")
    _audit_draft(rt, scan_id, doctor_id, llm, messages, draft.path)
    return draft


def _audit_draft(
    rt: Runtime, scan_id: str, doctor_id: int | None, llm: LLM, messages: list[Message], outcome: str
) -> None:
    audit(
        rt.db,
        actor_id=doctor_id,
        action="draft",
        scan_ref=scan_id,
        backend=llm.backend,
        prompt_hash=prompt_hash(messages),
        outcome=outcome,
    )
