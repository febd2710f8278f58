"""Ask AI's confidence comes from evidence (closeness, count over the floor, spread), never from agreement alone."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.answer.compose import compose, confidence_for
from core.cases.evidence import assess
from core.config.ask import AskSettings
from core.contracts import BundleResult, ContextBundle, CurrentScan, PatientContextOut, SimilarCaseBrief

ASK = AskSettings()
AI = "Glioblastoma"


def _bundle(cases: list[tuple[str, float]], ai_conf: float = 0.9) -> ContextBundle:
    return ContextBundle(
        currentScan=CurrentScan(anatomy="brain", region="frontal_lobe", diagnosis=AI, confidence=ai_conf),
        patientContext=PatientContextOut(age=60, sex="F", pastConditions=[]),
        similarCases=[SimilarCaseBrief(diagnosis=d, outcome="Alive with disease at 12 months", similarity=s)
                      for d, s in cases],
        priorReports=[],
    )


@given(
    n=st.integers(1, 10),
    sims=st.lists(st.floats(0.3, 1.0), min_size=10, max_size=10),
    ai_conf=st.floats(0.0, 1.0),
)
@settings(max_examples=300, deadline=None)
def test_agreement_alone_never_makes_high(n: int, sims: list[float], ai_conf: float) -> None:
    """Every look-alike carries the AI's label: ``high`` only when the evidence itself is strong."""
    bundle = _bundle([(AI, s) for s in sims[:n]], ai_conf)
    ev = assess(bundle, ASK)
    assert ev.concentration == 1.0  # full agreement, every time
    strong = n >= ASK.high_min_cases and ev.closeness >= ASK.high_min_similarity
    if not strong or ai_conf < ASK.high_min_ai_confidence:
        assert ev.level != "high", ev


@pytest.mark.parametrize(
    "cases, level",
    [
        ([(AI, 0.95)] * 5, "high"),  # close, enough, concentrated
        ([(AI, 0.95)] * 2, "medium"),  # full agreement, too few over the floor
        ([(AI, 0.4)] * 5, "low"),  # full agreement, not close
        ([(AI, 0.95)] * 3 + [("Brain abscess", 0.95)] * 2, "medium"),  # spread over two diagnoses
        ([("Brain abscess", 0.95)] * 4 + [(AI, 0.95)], "medium"),  # the look-alikes lean to another diagnosis
        ([("Brain abscess", 0.95)] * 5, "low"),  # the AI reading is not among them
        ([], "low"),
    ],
)
def test_confidence_levels_from_evidence(cases: list[tuple[str, float]], level: str) -> None:
    assert confidence_for(_bundle(cases), ASK) == level


def test_low_ai_confidence_caps_the_level() -> None:
    assert confidence_for(_bundle([(AI, 0.95)] * 5, ai_conf=0.55), ASK) == "medium"


def test_differential_lists_every_lookalike_diagnosis_with_counts() -> None:
    cases = [(AI, 0.95), ("Brain abscess", 0.93), (AI, 0.9), ("Multiple sclerosis", 0.85), ("Brain abscess", 0.8)]
    bundle = _bundle(cases)
    ids = [f"HC-{i:05d}" for i in range(len(cases))]
    result = BundleResult(bundle=bundle, case_ids=ids, severities=["high"] * len(cases))
    answer = compose("What is the differential among the similar cases?", result, ASK).answer.answer
    assert "Glioblastoma in 2 (HC-00000, HC-00002)" in answer
    assert "Brain abscess in 2 (HC-00001, HC-00004)" in answer
    assert "Multiple sclerosis in 1 (HC-00003)" in answer
    assert assess(bundle, ASK).diagnoses == (("Brain abscess", 2), ("Glioblastoma", 2), ("Multiple sclerosis", 1))
