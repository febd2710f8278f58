"""Export failures against loopback endpoints: a refused STOW, a timeout, a busy PACS, FHIR POST and its refusal.

No Orthanc needed, and each export test runs on SQLite and on PostgreSQL: the scan is imported from pydicom's packaged file through the
importer with the PACS link hook, and tests/pacs_support.FakeEndpoint plays the PACS
(it answers the study's metadata with the original header) and the FHIR server.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pydicom
import pytest
from fhir.resources.R4B.bundle import Bundle
from hypothesis import given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st
from sqlalchemy import select

from core.errors import ConfigError, PacsAuthError, PacsRefusedError, PacsTimeoutError
from core.imaging.importer import import_images
from core.pacs.client import StudyHit, StudyQuery, qido_query
from core.pacs.export import export_report, queued_exports, resend_queued
from core.pacs.imports import link_hook, sealer_for
from core.pacs.sealed import Sealer
from core.reports import DraftText, save_draft, sign_draft
from core.runtime import Runtime
from core.store.models import Report, User
from tests.backends import writable_runtime
from tests.imaging_support import packaged
from tests.pacs_support import FakeEndpoint

TOKEN_ENV = "CASEBOOK_TEST_FHIR_TOKEN"


@pytest.fixture()
def fake() -> Iterator[FakeEndpoint]:
    original = pydicom.dcmread(packaged("CT_small.dcm"), stop_before_pixels=True)
    server = FakeEndpoint([original.to_json_dict()])
    yield server
    server.close()


@pytest.fixture()
def rt(
    backend: str, request: pytest.FixtureRequest, demo_root: Path, tmp_path: Path, fake: FakeEndpoint,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Runtime]:  # fmt: skip
    """A private copy of the demo store on SQLite, then on PostgreSQL, pointed at the loopback endpoint."""
    monkeypatch.setenv(TOKEN_ENV, "test-token-123")
    pacs = {
        "url": f"{fake.root}/dicom-web", "fhir_url": f"{fake.root}/fhir", "fhir_token_env": TOKEN_ENV,
        "retries": 2, "backoff_s": 0.05, "timeout_s": 0.5,
    }  # fmt: skip
    runtime = writable_runtime(backend, request, demo_root, tmp_path, imaging={"encoder": "none"}, pacs=pacs)
    yield runtime
    runtime.db.dispose()


def _signed(rt: Runtime) -> tuple[int, int]:
    """A scan imported as if from the PACS (CT_small, linked) and a signed report of it: (doctor, report id)."""
    with rt.db.read_only() as s:
        doctor = int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)
    summary = import_images(
        rt.settings, rt.db, [packaged("CT_small.dcm")], anatomy="lung", actor_id=doctor,
        link=link_hook(sealer_for(rt.settings), "127.0.0.1:1"),
    )  # fmt: skip
    draft = DraftText("A 6 mm nodule in the right upper lobe.", "Indeterminate nodule.", "CT in 3 months.")
    report = sign_draft(rt.db, save_draft(rt.db, summary.scans[0].scan_id, doctor, draft, from_ai=False), doctor)
    return doctor, report


def _hash(rt: Runtime, report_id: int) -> str | None:
    with rt.db.read_only() as s:
        return s.scalar(select(Report.content_hash).where(Report.id == report_id))


def test_refused_stow_keeps_the_report_queued_and_a_resend_delivers_it(rt: Runtime, fake: FakeEndpoint) -> None:
    doctor, report = _signed(rt)
    before = _hash(rt, report)
    fake.stow_status = 409
    with pytest.raises(PacsRefusedError) as err:
        export_report(rt.settings, rt.db, report, actor_id=doctor, targets=("sr",))
    assert "409" in str(err.value) and "queued" in err.value.hint
    assert queued_exports(rt.db) == [(report, "sr", 1, "PacsRefusedError")]
    assert _hash(rt, report) == before
    fake.stow_status = 200
    assert [(o.target, o.status) for o in resend_queued(rt.settings, rt.db, actor_id=doctor)] == [("sr", "sent")]
    assert queued_exports(rt.db) == []
    original = pydicom.dcmread(packaged("CT_small.dcm"), stop_before_pixels=True)
    assert original.StudyInstanceUID.encode() in fake.posts[-1][2]  # the SR names the original study


def test_a_busy_pacs_is_retried_with_back_off(rt: Runtime, fake: FakeEndpoint) -> None:
    doctor, report = _signed(rt)
    fake.stow_first = [503]
    out = export_report(rt.settings, rt.db, report, actor_id=doctor, targets=("sr",))
    assert [o.status for o in out] == ["sent"] and len(fake.posts) == 2  # one 503, then stored


def test_a_timeout_is_typed_bounded_and_queued(rt: Runtime, fake: FakeEndpoint) -> None:
    doctor, report = _signed(rt)
    fake.delay_s = 1.5
    started = time.monotonic()
    with pytest.raises(PacsTimeoutError) as err:
        export_report(rt.settings, rt.db, report, actor_id=doctor)
    assert time.monotonic() - started < 6  # two attempts of 0.5 s each, plus back-off
    assert "did not answer in time" in str(err.value)
    assert sorted(t for _r, t, _n, e in queued_exports(rt.db) if e == "PacsTimeoutError") == ["fhir", "sr"]


def test_fhir_bundle_is_posted_once_validated_with_the_token(rt: Runtime, fake: FakeEndpoint) -> None:
    doctor, report = _signed(rt)
    assert [o.status for o in export_report(rt.settings, rt.db, report, actor_id=doctor, targets=("fhir",))] == ["sent"]
    (path, headers, body) = fake.posts[-1]
    assert path == "/fhir" and headers["Authorization"] == "Bearer test-token-123"
    bundle = Bundle.model_validate(json.loads(body))
    assert bundle.type == "transaction" and bundle.entry[0].resource.__resource_type__ == "DiagnosticReport"
    assert all(e.request.ifNoneExist for e in bundle.entry)  # a repeated POST creates nothing twice
    original = pydicom.dcmread(packaged("CT_small.dcm"), stop_before_pixels=True)
    assert bundle.entry[0].resource.subject.identifier.value == original.PatientID
    n = len(fake.posts)
    assert [o.status for o in export_report(rt.settings, rt.db, report, actor_id=doctor, targets=("fhir",))] == [
        "sent before"
    ]
    assert len(fake.posts) == n


def test_fhir_refusing_the_token_is_an_auth_error(rt: Runtime, fake: FakeEndpoint) -> None:
    doctor, report = _signed(rt)
    fake.fhir_status = 401
    with pytest.raises(PacsAuthError):
        export_report(rt.settings, rt.db, report, actor_id=doctor, targets=("fhir",))
    assert queued_exports(rt.db) == [(report, "fhir", 1, "PacsAuthError")]


def test_sealer_round_trip_labels_and_uids(tmp_path: Path) -> None:
    sealer = Sealer(tmp_path)
    box = sealer.seal("1.2.840.99.1", "pacs-study")
    assert b"1.2.840.99.1" not in box and sealer.open(box, "pacs-study") == "1.2.840.99.1"
    assert (tmp_path / "keys" / "pacs.key").stat().st_mode & 0o077 == 0
    with pytest.raises(ConfigError):
        sealer.open(box, "another-label")
    with pytest.raises(ConfigError):
        Sealer(tmp_path / "other").open(box, "pacs-study")  # another key
    uid = sealer.uid("sr", "7", "abc")
    assert uid == Sealer(tmp_path).uid("sr", "7", "abc") != sealer.uid("sr", "8", "abc")
    assert uid.startswith("2.25.") and len(uid) <= 64 and uid.replace(".", "").isdigit()


@pytest.mark.parametrize(
    ("query", "name", "pid", "found"),
    [
        (StudyQuery(patient_name="smith^j"), "SMITH^JOHN", "1", True),
        (StudyQuery(patient_name="Smith"), "SMITHERS^ANN", "1", True),
        (StudyQuery(patient_name="Smith^J"), "SMITH^ANN", "1", False),
        (StudyQuery(patient_name="O'Brien"), "OBRIEN^X", "1", False),
        (StudyQuery(patient_id="A1"), "X", "A12", False),
        (StudyQuery(patient_id="A1*"), "X", "A12", True),
    ],
)
def test_query_filters_are_narrowed_after_the_wildcard_the_pacs_gets(
    query: StudyQuery, name: str, pid: str, found: bool
) -> None:
    hit = StudyHit("1.2.3", name, pid, "20240101", "CT", "", "", 1, 1)
    assert query.matches(hit) is found


@given(st.text(max_size=40))
@hyp_settings(max_examples=200, deadline=None)
def test_no_search_text_adds_or_changes_a_query_parameter(text: str) -> None:
    """Whatever a doctor types into a search field, the QIDO query keeps exactly the parameters asked for."""
    query = StudyQuery(patient_name=text, patient_id=text, accession=text, modality=text)
    wanted = query.filters()
    sent = qido_query(list(wanted.items()))
    pairs = [p.split("=") for p in sent.split("&")] if sent else []
    assert [k for k, *_ in pairs] == list(wanted) and all(len(p) == 2 for p in pairs)
    assert all(set(v) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789*.-_") for _k, v in pairs)


@pytest.mark.parametrize(
    "uid", ["../../tools/reset", "1.2.3/../../studies", "1.2.3?x=1", "", "1..2", "1.2." + "3" * 70]
)
def test_a_study_uid_that_is_not_a_uid_is_refused_before_any_request(uid: str) -> None:
    from core.config.pacs import PacsSettings
    from core.pacs.client import PacsClient

    fake = FakeEndpoint()
    try:
        client = PacsClient(PacsSettings(url=f"{fake.root}/dicom-web", retries=1))
        for call in (client.retrieve_study, client.study_metadata):
            with pytest.raises(PacsRefusedError):
                call(uid)
        assert fake.gets == 0
    finally:
        fake.close()
