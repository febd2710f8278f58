"""The guard takes Ask AI's computed facts in as supported content (the ASK/GUARD seam).

A model sentence that faithfully restates a fact computed in code
(:class:`core.answer.facts.AnswerFacts`: a count, a "not recorded" statement, a
prior report's signing date or its interval before the scan, the region) is
kept; the same sentence with a changed number, a drug or a procedure is refused.
Without the facts, the "not recorded" sentence is refused, which shows the facts
are what lets it through. The bundle is fixed here, shaped like the demo's.
"""

from __future__ import annotations

import pytest

from core.answer.facts import AnswerFacts, bundle_facts
from core.answer.guard import enforce, guard_draft_sections
from core.answer.prompt import ask_messages, relative_dates
from core.answer.understand import EVENTS
from core.contracts import BundleResult, ContextBundle, CurrentScan, PatientContextOut, PriorReport, SimilarCaseBrief

IDS = ["HC-00031", "HC-00032", "HC-00033"]
A, B, C = IDS
EVENT = {e.name: e for e in EVENTS}


@pytest.fixture()
def prostate() -> tuple[BundleResult, AnswerFacts]:
    """A prostate biopsy bundle: three cases, no outcome mentions admission or death, one dated prior."""
    bundle = ContextBundle(
        currentScan=CurrentScan(
            anatomy="prostate", region="prostate_biopsy", diagnosis="Prostate adenocarcinoma", confidence=0.87
        ),
        patientContext=PatientContextOut(age=68, sex="M", pastConditions=["Benign prostatic hyperplasia"]),
        similarCases=[
            SimilarCaseBrief(diagnosis="Prostate adenocarcinoma", outcome="Progression at 18 months", similarity=0.93),
            SimilarCaseBrief(diagnosis="Prostate adenocarcinoma", outcome="Stable at 2 years", similarity=0.9),
            SimilarCaseBrief(diagnosis="Benign prostatic hyperplasia", outcome=None, similarity=0.84),
        ],
        priorReports=[PriorReport(findings="Enlarged gland, no focal lesion.", impression="Benign enlargement.")],
    )
    result = BundleResult(
        bundle=bundle,
        case_ids=IDS,
        severities=["high", "moderate", "low"],
        prior_dates=["2026-09-12"],
        prior_days_before=[74],
    )
    facts = bundle_facts(result, 3)
    for name in ("admission", "death", "progression"):
        facts.count(EVENT[name])
    return result, facts


def kept(text: str, pair: tuple[BundleResult, AnswerFacts]) -> bool:
    """True when the guard keeps every sentence of ``text``, given the computed facts."""
    report = enforce(text, pair[0], facts=pair[1])
    return bool(report.kept) and not report.removed


FAITHFUL = {
    "count": f"Progression is recorded in 1 of the 3 similar cases ({A}).",
    "percentage": f"About 33% of the similar cases record progression ({A}).",
    "share with decimals": f"Progression is recorded in 33.33% of the similar cases ({A}).",
    "not recorded, as a verb": f"None of the similar cases is recorded as having died ({A}, {B}).",
    "interval wording": f"The interval between the prior report and this scan is 74 days ({A}).",
    "not recorded": f"Admission is not recorded in any of the similar cases ({A}, {B}).",
    "not recorded, other event": f"Death is not recorded in the outcomes of {A} or {B}.",
    "prior interval": f"The prior report was signed 74 days before this scan ({A}).",
    "prior date": f"The signed prior report of 2026-09-12 reads benign enlargement ({A}).",
    "prior date in words": f"The prior report from 12 September 2026 reads benign enlargement ({A}).",
    "region": f"This prostate biopsy scan resembles {A}, a prostate adenocarcinoma.",
}


@pytest.mark.parametrize("kind", sorted(FAITHFUL))
def test_a_faithful_restatement_of_each_fact_kind_is_kept(kind: str, prostate: tuple[BundleResult, AnswerFacts]) -> None:
    report = enforce(FAITHFUL[kind], prostate[0], facts=prostate[1])
    assert report.kept and not report.removed, report.removed
    assert A in report.cited


ALTERED = {
    "changed count": f"Progression is recorded in 7 of the 3 similar cases ({A}).",
    "changed percentage": f"About 45% of the similar cases record progression ({A}).",
    "changed interval": f"The prior report was signed 75 days before this scan ({A}).",
    "changed date": f"The signed prior report of 2026-09-13 reads benign enlargement ({A}).",
    "date parts alone": f"The prior report is 12 months old, from 2026 ({A}).",
    "drug": f"Admission is not recorded in any of the similar cases; tamsulosin was used ({A}).",
    "drug class": f"Death is not recorded; an antiandrogen was given in {A}.",
    "procedure": f"Admission is not recorded, but {A} needed a prostatectomy.",
    "procedure beside region": f"This prostate biopsy scan resembles {A}; a repeat biopsy is advised.",
    "advice": f"Admission is not recorded, so admit the patient as in {A}.",
    "event stated as happening": f"Admission was needed in {A}.",
    "unrecorded event as a verb": f"Two of the similar cases died ({A}, {B}).",
    "share of another total": f"Progression is recorded in 33.3% of 5 similar cases ({A}).",
    "unrecorded event as a count": f"Death is recorded in 2 of the 3 similar cases ({A}).",
}


@pytest.mark.parametrize("kind", sorted(ALTERED))
def test_the_same_sentence_altered_is_refused(kind: str, prostate: tuple[BundleResult, AnswerFacts]) -> None:
    report = enforce(ALTERED[kind], prostate[0], facts=prostate[1])
    assert not report.kept, f"kept: {report.kept}"
    assert report.removed


def test_without_the_facts_the_not_recorded_sentence_is_refused(prostate: tuple[BundleResult, AnswerFacts]) -> None:
    """The facts are what supports "admission": the bundle alone never mentions it."""
    assert not enforce(FAITHFUL["not recorded"], prostate[0]).kept
    assert kept(FAITHFUL["not recorded"], prostate)


def test_the_prompt_carries_intervals_never_dates(prostate: tuple[BundleResult, AnswerFacts]) -> None:
    result, _ = prostate
    facts = "Compared with the signed prior report of 2026-09-12, which reads: \"Benign enlargement.\" A 2025-01-01 note."
    sent = relative_dates(facts, result)
    assert "2026" not in sent and "2025" not in sent
    assert "signed 74 days before this scan" in sent and "an earlier date" in sent
    user = ask_messages(result, "Any prior?", facts)[1]["content"]
    assert "2026-09-12" not in user and "74 days before this scan" in user


def test_draft_sections_take_the_facts_and_still_refuse_treatment(prostate: tuple[BundleResult, AnswerFacts]) -> None:
    result, facts = prostate
    impression = "The AI reading suggests prostate adenocarcinoma. Admission is not recorded in the similar cases."
    assert guard_draft_sections({"impression": impression}, result, facts=facts).sections.get("impression")
    bad = impression + " Tamsulosin should be started."
    assert "impression" not in guard_draft_sections({"impression": bad}, result, facts=facts).sections
    named = "The AI reading suggests prostate adenocarcinoma for Quillfeather."
    assert "impression" not in guard_draft_sections(
        {"impression": named}, result, facts=facts, names=["Ansel Quillfeather"]
    ).sections
