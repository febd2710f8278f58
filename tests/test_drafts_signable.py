"""Generated drafts a doctor could sign: dated prior COMPARISON, current-only FINDINGS, no case IDs, who wrote it."""

from __future__ import annotations

from core.answer.rules import CASE_ID_RE, forbidden_reason
from core.llm.factory import make_llm
from core.reports import AI_MARK, COMPARISON_LABEL, join_findings, split_findings
from core.reports.writer import generate_report_draft
from core.runtime import Runtime, open_runtime
from tests.conftest import make_settings, scan_of
from tests.llm_server import FakeLLMServer

PRIOR_ONLY = "apical bulla"  # in the 2025 prior report of the COPD patient, never a current finding


def test_copd_draft_sections_are_signable(demo: Runtime) -> None:
    draft = generate_report_draft(demo, scan_of(demo, "rahul.mehta"))
    s = draft.sections()
    assert list(s) == ["comparison", "findings", "impression", "recommendations"]
    assert s["comparison"].startswith("Prior signed report of 2025-11-07 (prior):")
    assert "Prior signed report of 2024-11-12 (prior):" in s["comparison"]
    assert s["comparison"].index("2025-11-07") < s["comparison"].index("2024-11-12")  # newest first
    assert s["findings"].startswith(AI_MARK) and PRIOR_ONLY not in s["findings"]
    assert not CASE_ID_RE.search(" ".join([s["findings"], s["impression"], s["recommendations"], s["comparison"]]))
    assert "pending" not in s["impression"].lower()
    assert s["recommendations"].startswith("Follow-up") and forbidden_reason(s["recommendations"]) is None
    assert draft.evidence and all(CASE_ID_RE.fullmatch(c) for c in draft.evidence)  # beside, not in, the text
    assert draft.author == "template" and draft.reason and "no language model" in draft.reason
    assert draft.findings.startswith(COMPARISON_LABEL)  # stored as the labelled first paragraph of FINDINGS


def test_draft_without_priors_says_so(demo: Runtime) -> None:
    s = generate_report_draft(demo, scan_of(demo, "imran.khan")).sections()
    assert s["comparison"] == "No prior signed lung report of this patient is on record."
    assert "Tension pneumothorax" in s["findings"] and AI_MARK in s["impression"]


def test_comparison_round_trips_through_the_stored_findings() -> None:
    assert split_findings(join_findings("Prior signed report of 2025-01-02 (prior): x.", "Now: y.")) == (
        "Prior signed report of 2025-01-02 (prior): x.",
        "Now: y.",
    )
    assert split_findings("Plain findings.") == ("", "Plain findings.")


def test_model_may_not_put_case_ids_in_the_impression(fresh: Runtime, llm_server: FakeLLMServer) -> None:
    rt = open_runtime(make_settings(fresh.settings.paths.data_dir.parent, llm=llm_server.llm_overrides("openai")))
    sid = scan_of(rt, "rahul.mehta")
    llm_server.reply = (
        "FINDINGS: New 2 cm apical bulla on the right.\n"
        "IMPRESSION: COPD with emphysema as in HC-00513, pending radiologist confirmation.\n"
        "RECOMMENDATIONS: Follow-up imaging as clinically indicated."
    )
    draft = generate_report_draft(rt, sid, make_llm(rt.settings))
    s = draft.sections()
    assert PRIOR_ONLY not in s["findings"]  # the model never writes FINDINGS
    assert not CASE_ID_RE.search(s["impression"]) and "pending" not in s["impression"]
    assert llm_server.requests, "the model was asked"
