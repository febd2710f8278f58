"""Report drafts: generated in memory, saved only by an explicit action, signed into immutable reports.

``generate_report_draft`` never writes. ``save_draft`` creates or updates a
``report_drafts`` row; ``sign_draft`` turns a saved draft into a signed report;
``amend_report`` creates a new version that supersedes a signed report, which
itself never changes. Those three live in :mod:`core.answer.draft_store`
(ownership, versions, locks and audit) and are re-exported here.

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
from dataclasses import dataclass, replace

from core.answer.draft_store import amend_report, save_draft, sign_draft
from core.answer.facts import bundle_facts
from core.answer.guard import guard_draft_sections
from core.answer.prompt import draft_messages, prompt_hash
from core.answer.records import audit
from core.answer.rules import CASE_ID_RE
from core.cases import build_context_bundle
from core.contracts import NO_COMPARABLE_CASES, BundleResult
from core.errors import CasebookError
from core.llm.base import LLM, Message
from core.llm.budget import CancelToken, feature_budget
from core.runtime import Runtime
from core.settings import Settings

__all__ = [
    "AI_MARK",
    "COMPARISON_LABEL",
    "DraftText",
    "amend_report",
    "generate_report_draft",
    "join_findings",
    "save_draft",
    "sign_draft",
    "split_findings",
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


def _extractive(result: BundleResult) -> DraftText:
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


def _sections(text: str) -> dict[str, str]:
    parts = _SECTION_RE.split(text)
    return {parts[i].lower(): parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}


def _model_sections(sections: dict[str, str], result: BundleResult, settings: Settings) -> dict[str, str]:
    """The model may word IMPRESSION and RECOMMENDATIONS; COMPARISON and FINDINGS always come from the record.

    An impression naming a case ID or "pending" is refused: the evidence stays beside the report.
    The guard refuses the user table's names and the drug KB's lexicon here too, and takes the
    facts computed in code (counts, region, prior intervals) as supported content.
    """
    wanted = {k: v for k, v in sections.items() if k in {"impression", "recommendations"} and v}
    if CASE_ID_RE.search(wanted.get("impression", "")) or "pending" in wanted.get("impression", "").lower():
        wanted.pop("impression")
    from core.answer.guard_inputs import refusal_lists  # lazy: core.privacy.egress imports core.llm

    assert result.bundle is not None
    facts = bundle_facts(result, settings.ask.max_cited_cases)
    return guard_draft_sections(wanted, result, facts=facts, **refusal_lists(settings)).sections


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
    if llm is None:
        return replace(base, reason="no language model is configured")
    if result.bundle is None:
        return replace(base, reason="no comparable cases")
    messages = draft_messages(result)
    try:
        token = CancelToken(feature_budget(rt.settings, "draft"))  # the model stops at the drafts' budget
        sections = _sections(token.bind(llm).chat(messages).text)
    except CasebookError as exc:
        _audit_draft(rt, scan_id, doctor_id, llm, messages, f"extractive:fallback:{type(exc).__name__}")
        return replace(base, reason=f"the model failed: {type(exc).__name__}")
    taken = _model_sections(sections, result, rt.settings)  # a section passes whole or not at all
    if not taken:
        draft = replace(base, reason="the model's draft failed the answer rules")
    else:
        draft = replace(
            base,
            impression=taken.get("impression", base.impression),
            recommendations=taken.get("recommendations", base.recommendations),
            path="llm",
        )
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
