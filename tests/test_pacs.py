"""Against the real Orthanc that scripts/orthanc_setup.sh starts: search, import, sync, SR and FHIR export, failures.

Each test stores its own copy of pydicom's packaged files into Orthanc under a new
patient and new UIDs (tests/pacs_support.py), so the shared server never mixes tests.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pydicom
import pytest
from fhir.resources.R4B.bundle import Bundle
from sqlalchemy import func, select

from core.errors import AccessDeniedError, PacsAuthError, PacsUnreachableError
from core.pacs.client import PacsClient, StudyQuery, make_client
from core.pacs.export import export_report, queued_exports, resend_queued
from core.pacs.imports import import_studies, sync
from core.reports import DraftText, amend_report, save_draft, sign_draft
from core.runtime import Runtime, open_runtime
from core.settings import Settings
from core.store.models import AuditLog, ImageIdentityMap, ImageSeries, PacsStudyLink, Report, Scan, User
from tests.conftest import make_settings, run_cli
from tests.pacs_support import (
    DIMSE_AET,
    DIMSE_PORT,
    Orthanc,
    PacsStudy,
    leaks,
    make_study,
    orthanc_or_skip,
    tree_text,
)

pytestmark = pytest.mark.pacs
PW_ENV = "CASEBOOK_TEST_PACS_PASSWORD"


@pytest.fixture()
def orthanc() -> Orthanc:
    return orthanc_or_skip()


@pytest.fixture()
def rt(tmp_path: Path, orthanc: Orthanc, monkeypatch: pytest.MonkeyPatch) -> Iterator[Runtime]:
    """An empty database with one doctor and one patient, pointed at the test Orthanc; FHIR to an outbox folder."""
    monkeypatch.setenv(PW_ENV, orthanc.password)
    pacs = {
        "url": orthanc.url, "username": orthanc.username, "password_env": PW_ENV, "retries": 2, "backoff_s": 0.05,
        "timeout_s": 10, "fhir_folder": str(tmp_path / "outbox"),
    }  # fmt: skip
    runtime = open_runtime(make_settings(tmp_path, imaging={"encoder": "none"}, pacs=pacs))
    with runtime.db.session() as s:
        s.add(User(username="dr.pacs", display_name="Dr Pacs Reviewer", role="doctor"))
        s.add(User(username="pat.local", display_name="Demo Patient Local", role="patient"))
    yield runtime
    runtime.db.dispose()


def orthanc_password(rt: Runtime) -> str:
    return os.environ[rt.settings.pacs.password_env]


def _user(rt: Runtime, username: str) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(User.id).where(User.username == username)) or 0)


def _client(rt: Runtime) -> PacsClient:
    return PacsClient(rt.settings.pacs)


def _stored(rt: Runtime, *names: str, **kw: str) -> PacsStudy:
    study = make_study(*names, **kw)
    _client(rt).store(study.datasets)
    return study


def _sign(rt: Runtime, scan_id: str, doctor: int, impression: str) -> int:
    draft = DraftText(
        "COMPARISON: No prior signed report.\n\nSmall nodule in the left lower lobe, 4 mm.",
        impression,
        "Follow-up CT in 12 months.",
    )
    return sign_draft(rt.db, save_draft(rt.db, scan_id, doctor, draft, from_ai=False), doctor)


def _srs(rt: Runtime, study_uid: str) -> list[pydicom.Dataset]:
    return [d for d in _client(rt).retrieve_study(study_uid) if str(d.Modality) == "SR"]


def _texts(ds: pydicom.Dataset) -> list[str]:
    out = []
    for item in ds.ContentSequence:
        out += [str(t.TextValue) for t in getattr(item, "ContentSequence", []) if "TextValue" in t]
    return out


def test_round_trip_search_import_sign_export_amend(
    rt: Runtime, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    doctor = _user(rt, "dr.pacs")
    study = _stored(rt, "CT_small.dcm", "MR_small.dcm")
    # found by search: by patient name prefix, by id, by accession; a modality it lacks finds nothing
    client = _client(rt)
    name_prefix = study.patient_name[:-1].lower()  # a prefix, in another case
    hits = client.search_studies(StudyQuery(patient_name=name_prefix))
    assert [h.study_uid for h in hits] == [study.study_uid] and hits[0].series == 2
    assert [h.study_uid for h in client.search_studies(StudyQuery(accession=study.accession))] == [study.study_uid]
    assert client.search_studies(StudyQuery(patient_id=study.patient_id, modality="US")) == []
    # imported de-identified, through the file importer's path
    steps: list[str] = []
    out = import_studies(
        rt.settings, rt.db, client, [study.study_uid], actor_id=doctor, anatomy="lung",
        progress=lambda _f, m: steps.append(m),
    )  # fmt: skip
    assert [o.status for o in out] == ["imported"] and out[0].images == 2
    assert any("retrieving" in m for m in steps) and any("de-identifying" in m for m in steps)
    scan_id = out[0].scan_id
    assert scan_id is not None
    with rt.db.read_only() as s:
        local_study = set(s.scalars(select(ImageSeries.study_uid).where(ImageSeries.scan_id == scan_id)))
        assert int(s.scalar(select(func.count()).select_from(ImageIdentityMap)) or 0) == 1
        assert s.scalar(select(PacsStudyLink.scan_id)) == scan_id
    assert len(local_study) == 1 and study.study_uid not in local_study
    # importing it again is a no-op
    again = import_studies(rt.settings, rt.db, client, [study.study_uid], actor_id=doctor, anatomy="lung")
    assert [(o.status, o.scan_id) for o in again] == [("skipped", scan_id)]
    # reviewed and signed, then sent back
    report_id = _sign(rt, scan_id, doctor, "Small pulmonary nodule, likely benign.")
    with rt.db.read_only() as s:
        hash_before = s.scalar(select(Report.content_hash).where(Report.id == report_id))
    sent = export_report(rt.settings, rt.db, report_id, actor_id=doctor)
    assert sorted((o.target, o.status) for o in sent) == [("fhir", "sent"), ("sr", "sent")]
    (sr1,) = _srs(rt, study.study_uid)
    assert sr1.StudyInstanceUID == study.study_uid and sr1.PatientID == study.patient_id
    assert sr1.SOPClassUID == "1.2.840.10008.5.1.4.1.1.88.33" and sr1.VerificationFlag == "VERIFIED"
    assert "Small pulmonary nodule, likely benign." in _texts(sr1)
    refs = {r.ReferencedSeriesSequence[0].SeriesInstanceUID for r in sr1.CurrentRequestedProcedureEvidenceSequence}
    assert refs <= set(study.series_uids) and refs
    # idempotent: a second export sends nothing, and the PACS holds one SR
    assert {o.status for o in export_report(rt.settings, rt.db, report_id, actor_id=doctor)} == {"sent before"}
    assert len(_srs(rt, study.study_uid)) == 1
    # an amendment supersedes the first SR
    amended = amend_report(
        rt.db, report_id, doctor, "Small nodule in the left lower lobe, 5 mm.", "Small pulmonary nodule; follow up.",
        "Follow-up CT in 6 months.", reason="Measurement corrected",
    )  # fmt: skip
    export_report(rt.settings, rt.db, amended, actor_id=doctor)
    srs = {str(d.SOPInstanceUID): d for d in _srs(rt, study.study_uid)}
    assert len(srs) == 2
    sr2 = srs[next(k for k in srs if k != sr1.SOPInstanceUID)]
    pred = sr2.PredecessorDocumentsSequence[0]
    assert pred.StudyInstanceUID == study.study_uid
    assert pred.ReferencedSeriesSequence[0].ReferencedSOPSequence[0].ReferencedSOPInstanceUID == sr1.SOPInstanceUID
    assert sr2.InstanceNumber == 2
    # the FHIR Bundles validate; the amendment says so
    bundles = sorted((tmp_path / "outbox").glob("*.json"))
    assert len(bundles) == 2
    for path, sections in zip(bundles, (4, 3), strict=True):  # the amendment has no COMPARISON paragraph
        bundle = Bundle.model_validate(json.loads(path.read_text()))
        kinds = [e.resource.__resource_type__ for e in bundle.entry]
        assert kinds[0] == "DiagnosticReport" and kinds.count("Observation") == sections
        assert path.stat().st_mode & 0o077 == 0
    last = json.loads(bundles[-1].read_text())["entry"][0]["resource"]
    assert last["status"] == "amended" and last["subject"]["identifier"]["value"] == study.patient_id
    assert last["imagingStudy"][0]["identifier"]["value"] == f"urn:oid:{study.study_uid}"
    # the signed report never changed; nothing of the PACS's identity is in logs, audit or database
    with rt.db.read_only() as s:
        assert s.scalar(select(Report.content_hash).where(Report.id == report_id)) == hash_before
        rows = s.scalars(select(AuditLog)).all()
        audit_text = " ".join(json.dumps([a.scan_ref, a.detail, a.outcome]) for a in rows)
    assert {"pacs.import", "report.export"} <= {a.action for a in rows}
    assert leaks(caplog.text, study) == [] and rt.settings.pacs.password_env not in caplog.text
    assert orthanc_password(rt) not in caplog.text + tree_text(tmp_path / "data")
    assert leaks(audit_text, study) == []
    assert leaks(tree_text(tmp_path / "data"), study) == []


def test_sync_is_incremental_and_safe_to_rerun(rt: Runtime) -> None:
    """Sync pages through every match: with search_limit 1 (the study list's cap) it still finds all three."""
    settings = rt.settings.model_copy(update={"pacs": rt.settings.pacs.model_copy(update={"search_limit": 1})})
    client = PacsClient(settings.pacs)
    doctor = _user(rt, "dr.pacs")
    first = _stored(rt, "CT_small.dcm")
    second = _stored(rt, "MR_small.dcm", patient=first.patient_name, patient_id=first.patient_id)
    query = StudyQuery(patient_id=first.patient_id)
    out = sync(settings, rt.db, client, query, actor_id=doctor, anatomy="brain")
    assert sorted(o.status for o in out) == ["imported", "imported"]
    third = _stored(rt, "CT_small.dcm", patient=first.patient_name, patient_id=first.patient_id)
    out = sync(settings, rt.db, client, query, actor_id=doctor, anatomy="brain")
    assert sorted(o.status for o in out) == ["imported", "skipped", "skipped"]
    assert [o.status for o in sync(settings, rt.db, client, query, actor_id=doctor)] == ["skipped"] * 3
    with rt.db.read_only() as s:
        scans = s.scalars(select(Scan)).all()
        assert len(scans) == 3 and len({sc.patient_id for sc in scans}) == 1  # one person, one Casebook patient
    assert {second.study_uid, third.study_uid} - {first.study_uid}


def test_bad_credentials_and_unreachable_are_typed_and_lose_nothing(
    rt: Runtime, orthanc: Orthanc, monkeypatch: pytest.MonkeyPatch
) -> None:
    doctor = _user(rt, "dr.pacs")
    study = _stored(rt, "CT_small.dcm")
    (o,) = import_studies(rt.settings, rt.db, _client(rt), [study.study_uid], actor_id=doctor, anatomy="lung")
    assert o.scan_id is not None
    report_id = _sign(rt, o.scan_id, doctor, "No acute abnormality.")
    monkeypatch.setenv(PW_ENV, "not-the-password")
    with pytest.raises(PacsAuthError) as err:
        _client(rt).search_studies(StudyQuery())
    assert "credentials" in str(err.value) and "password" in err.value.hint
    assert orthanc.password not in str(err.value) and "not-the-password" not in str(err.value)
    with pytest.raises(PacsAuthError):
        export_report(rt.settings, rt.db, report_id, actor_id=doctor)
    assert {(t, n, e) for _r, t, n, e in queued_exports(rt.db)} == {
        ("sr", 1, "PacsAuthError"),
        ("fhir", 1, "PacsAuthError"),
    }
    down = rt.settings.model_copy(
        update={"pacs": rt.settings.pacs.model_copy(update={"url": "http://127.0.0.1:9/dicom-web"})}
    )
    started = dt.datetime.now()
    with pytest.raises(PacsUnreachableError) as err:
        export_report(down, rt.db, report_id, actor_id=doctor)
    assert "unreachable" in str(err.value) and (dt.datetime.now() - started).total_seconds() < 10
    with pytest.raises(PacsUnreachableError):
        import_studies(down, rt.db, PacsClient(down.pacs), ["1.2.3"], actor_id=doctor)
    # nothing lost: the report is as signed, the export is queued, and a re-send with good credentials delivers it
    with rt.db.read_only() as s:
        assert s.get(Report, report_id) is not None
    monkeypatch.setenv(PW_ENV, orthanc.password)
    assert sorted(o.status for o in resend_queued(rt.settings, rt.db, actor_id=doctor)) == ["sent", "sent"]
    assert queued_exports(rt.db) == [] and len(_srs(rt, study.study_uid)) == 1


def test_only_doctors_import_and_export(rt: Runtime) -> None:
    patient = _user(rt, "pat.local")
    with pytest.raises(AccessDeniedError):
        import_studies(rt.settings, rt.db, _client(rt), ["1.2.3"], actor_id=patient)
    with pytest.raises(AccessDeniedError):
        export_report(rt.settings, rt.db, 1, actor_id=patient)
    with pytest.raises(AccessDeniedError):
        sync(rt.settings, rt.db, _client(rt), StudyQuery(), actor_id=None)


def test_command_line_search_import_export_queue(rt: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = rt.settings.pacs
    for key, value in {"URL": cfg.url, "USERNAME": cfg.username, "PASSWORD_ENV": PW_ENV}.items():
        monkeypatch.setenv(f"CASEBOOK_PACS__{key}", str(value))
    doctor = _user(rt, "dr.pacs")
    study = _stored(rt, "CT_small.dcm")
    found = run_cli(tmp_path, "pacs", "search", "--patient-id", study.patient_id, "--json")
    assert found.returncode == 0, found.stderr
    assert [h["study_uid"] for h in json.loads(found.stdout)] == [study.study_uid]
    imported = run_cli(
        tmp_path, "pacs", "import", study.study_uid, "--doctor", "dr.pacs", "--anatomy", "lung", "--json"
    )
    assert imported.returncode == 0, imported.stderr
    (outcome,) = json.loads(imported.stdout)
    assert outcome["status"] == "imported" and "[100%]" in imported.stderr
    report = _sign(rt, outcome["scan_id"], doctor, "Clear lungs.")
    refused = run_cli(tmp_path, "pacs", "export", str(report), "--doctor", "pat.local")
    assert refused.returncode == 2 and "Only doctors" in refused.stderr
    sent = run_cli(tmp_path, "pacs", "export", str(report), "--doctor", "dr.pacs", "--to", "sr", "--json")
    assert sent.returncode == 0, sent.stderr
    assert [(o["target"], o["status"]) for o in json.loads(sent.stdout)] == [("sr", "sent")]
    queue = run_cli(tmp_path, "pacs", "queue", "--json")
    assert queue.returncode == 0 and json.loads(queue.stdout) == []
    assert len(_srs(rt, study.study_uid)) == 1


def _dimse(rt: Runtime, **changes: object) -> Settings:
    pacs = rt.settings.pacs.model_copy(
        update={"protocol": "dimse", "dimse_host": "127.0.0.1", "dimse_port": DIMSE_PORT, "called_aet": DIMSE_AET,
                "retries": 1, **changes}
    )  # fmt: skip
    return rt.settings.model_copy(update={"pacs": pacs})


def test_dimse_find_get_store_round_trip(rt: Runtime, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    doctor = _user(rt, "dr.pacs")
    settings = _dimse(rt)
    dimse = make_client(settings.pacs)
    study = make_study("MR_small.dcm")
    dimse.store(study.datasets)  # C-STORE in, as a modality would
    hits = dimse.search_studies(StudyQuery(patient_id=study.patient_id))
    assert [(h.study_uid, h.patient_name) for h in hits] == [(study.study_uid, study.patient_name)]
    (o,) = import_studies(settings, rt.db, dimse, [study.study_uid], actor_id=doctor, anatomy="brain")
    assert o.status == "imported" and o.images == 1 and o.scan_id
    report = _sign(rt, o.scan_id, doctor, "Normal brain MR.")
    assert [x.status for x in export_report(settings, rt.db, report, actor_id=doctor, targets=("sr",))] == ["sent"]
    (sr,) = _srs(rt, study.study_uid)  # read back over DICOMweb
    assert sr.StudyInstanceUID == study.study_uid and "Normal brain MR." in _texts(sr)
    assert leaks(caplog.text, study) == [] and leaks(tree_text(tmp_path / "data"), study) == []
    # the same study over DICOMweb is recognised as imported (the link does not depend on the route)
    assert [x.status for x in import_studies(rt.settings, rt.db, _client(rt), [study.study_uid], actor_id=doctor)] == [
        "skipped"
    ]


def test_dimse_unknown_ae_title_and_closed_port_are_typed(rt: Runtime) -> None:
    with pytest.raises(PacsAuthError) as err:
        make_client(_dimse(rt, calling_aet="INTRUDER").pacs).search_studies(StudyQuery())
    assert "rejected the association" in str(err.value) and "calling_aet" in err.value.hint
    with pytest.raises(PacsUnreachableError):
        make_client(_dimse(rt, dimse_port=9).pacs).search_studies(StudyQuery())


def test_a_study_holding_an_sr_imports_its_images_only(rt: Runtime) -> None:
    from pydicom.uid import generate_uid

    from core.pacs.sr import SrRef, build_sr

    def report_of(study: PacsStudy) -> pydicom.Dataset:
        ref = SrRef(study.study_uid, generate_uid(prefix=None), generate_uid(prefix=None))
        return build_sr(
            findings="Earlier report.", impression="Earlier impression.", recommendations="",
            evidence=[study.datasets[0]], ref=ref, version=1, signer="Other^Reader", organization="Elsewhere",
        )  # fmt: skip

    doctor = _user(rt, "dr.pacs")
    study = make_study("CT_small.dcm")
    _client(rt).store([*study.datasets, report_of(study)])
    (o,) = import_studies(rt.settings, rt.db, _client(rt), [study.study_uid], actor_id=doctor, anatomy="lung")
    assert o.status == "imported" and o.images == 1  # the SR stays in the PACS
    only_sr = make_study("CT_small.dcm")
    _client(rt).store([report_of(only_sr)])  # a study holding nothing but a report
    (refused,) = import_studies(rt.settings, rt.db, _client(rt), [only_sr.study_uid], actor_id=doctor, anatomy="lung")
    assert refused.status == "refused" and "holds no images" in str(refused.error)
