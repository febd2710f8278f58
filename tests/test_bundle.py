"""The context bundle: the contract's exact shape, no identifiers, typed failures."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from sqlalchemy import select

from core.cases import build_context_bundle, get_similar_cases
from core.contracts import NO_COMPARABLE_CASES, ContextBundle, EmptyReason, no_comparable_answer
from core.runtime import Runtime
from core.store.models import Scan, User
from tests.conftest import scan_of


def test_bundle_has_exactly_the_contract_shape(demo: Runtime) -> None:
    result = build_context_bundle(demo, scan_of(demo, "rahul.mehta"))
    assert result.bundle is not None
    data = result.bundle.model_dump(mode="json")
    assert set(data) == {"currentScan", "patientContext", "similarCases", "priorReports"}
    assert set(data["currentScan"]) == {"anatomy", "region", "diagnosis", "confidence"}
    assert set(data["patientContext"]) == {"age", "sex", "pastConditions"}
    assert all(set(c) == {"diagnosis", "outcome", "similarity"} for c in data["similarCases"])
    assert all(set(r) == {"findings", "impression"} for r in data["priorReports"])
    assert data["currentScan"]["diagnosis"] == "COPD with emphysema"
    assert len(data["priorReports"]) == 2  # the two earlier signed COPD reports
    assert len(result.case_ids) == len(data["similarCases"])


def test_case_ids_match_the_similar_cases(demo: Runtime) -> None:
    sid = scan_of(demo, "imran.khan")
    result = build_context_bundle(demo, sid)
    similar = get_similar_cases(demo, sid)
    assert result.case_ids == [c.caseId for c in similar.cases]


def test_bundle_carries_no_identifiers(demo: Runtime) -> None:
    with demo.db.read_only() as s:
        rows = s.execute(
            select(Scan.id, User.display_name, User.username, Scan.created_at).join(User, User.id == Scan.patient_id)
        ).all()
    for scan_id, name, username, created in rows:
        result = build_context_bundle(demo, scan_id)
        if result.bundle is None:
            continue
        text = json.dumps(result.bundle.model_dump(mode="json"))
        for needle in (scan_id, name, username, name.split()[-1], created.date().isoformat(), "HC-"):
            assert needle not in text


def test_extra_fields_are_forbidden() -> None:
    with pytest.raises(ValidationError):
        ContextBundle.model_validate(
            {
                "currentScan": {"anatomy": "lung", "diagnosis": "x", "confidence": 0.5},
                "patientContext": {"pastConditions": []},
                "similarCases": [],
                "priorReports": [],
                "patientName": "leak",
            }
        )


@pytest.mark.parametrize(
    "user, reason", [("ewa.kowalska", EmptyReason.NO_EMBEDDING), ("tomas.novak", EmptyReason.LOW_CONFIDENCE)]
)
def test_failures_are_typed_empty_results(demo: Runtime, user: str, reason: EmptyReason) -> None:
    result = build_context_bundle(demo, scan_of(demo, user))
    assert result.bundle is None and result.empty_reason is reason and result.case_ids == []


def test_similarity_floor_can_empty_the_bundle(fresh: Runtime) -> None:
    fresh.settings.safety.min_similarity = 0.999
    result = build_context_bundle(fresh, scan_of(fresh, "li.wei"))
    assert result.bundle is None and result.empty_reason is EmptyReason.NO_SIMILAR_CASES


def test_fixed_no_comparable_answer() -> None:
    answer = no_comparable_answer()
    assert answer.model_dump() == {"answer": NO_COMPARABLE_CASES, "citedCaseIds": [], "confidence": "low"}
