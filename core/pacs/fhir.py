"""A signed report as a FHIR R4 DiagnosticReport with one Observation per report section, validated.

:func:`build_bundle` writes a ``transaction`` Bundle: the DiagnosticReport
(LOINC 18748-4, category RAD, ``final`` or ``amended``, the impression as its
conclusion, the original study named by its DICOM UID) and an Observation per
non-empty structured part (comparison 18834-2, findings 59776-5, impression
19005-8, recommendations 18783-1), each created only if none with its identifier
exists yet (``ifNoneExist``), so a re-sent Bundle creates nothing twice. The
subject is the PACS's patient identifier (``PatientID`` with its issuer), read from
the PACS at export time and never stored here. Every resource is validated with
``fhir.resources`` (its R4B models: FHIR 4.3, whose DiagnosticReport and
Observation are those of R4) before anything is written or sent.
"""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any

from core.errors import InvalidInputError
from core.reports.drafts import split_findings

__all__ = ["FhirReport", "build_bundle"]

LOINC = "http://loinc.org"
_SECTIONS = (
    ("comparison", "18834-2", "Radiology Comparison study (narrative)"),
    ("findings", "59776-5", "Procedure findings Narrative"),
    ("impression", "19005-8", "Radiology Imaging study [Impression] (narrative)"),
    ("recommendations", "18783-1", "Radiology Study recommendation (narrative)"),
)
_RAD = {"system": "http://terminology.hl7.org/CodeSystem/v2-0074", "code": "RAD", "display": "Radiology"}
_IMAGING = {"system": "http://terminology.hl7.org/CodeSystem/observation-category", "code": "imaging"}


@dataclass(frozen=True)
class FhirReport:
    """What the Bundle says: the report version, the original identifiers (in memory only) and the SR's UID."""

    findings: str
    impression: str
    recommendations: str
    version: int
    signed_at: dt.datetime
    signer: str
    patient_id: str
    patient_issuer: str
    study_uid: str
    sr_uid: str  # the SR's SOP Instance UID: the report's identifier in both worlds


def _urn(*parts: str) -> str:
    return "urn:uuid:" + str(uuid.uuid5(uuid.NAMESPACE_OID, "/".join(parts)))


def build_bundle(r: FhirReport) -> dict[str, Any]:
    """The validated transaction Bundle (a JSON-ready dict) of one report version."""
    from fhir.resources.R4B.bundle import Bundle
    from fhir.resources.R4B.diagnosticreport import DiagnosticReport
    from fhir.resources.R4B.observation import Observation

    if not r.patient_id:
        raise InvalidInputError(
            "The PACS study names no patient id, so the report cannot be addressed to a patient record",
            hint="Export the DICOM SR only, or fix the study's Patient ID in the PACS.",
        )
    subject = {"identifier": {"system": f"urn:casebook:patient-id:{r.patient_issuer or 'pacs'}", "value": r.patient_id}}
    ident = {"system": "urn:dicom:uid", "value": f"urn:oid:{r.sr_uid}"}
    issued = r.signed_at.astimezone(dt.UTC).isoformat()
    comparison, findings = split_findings(r.findings)
    texts = {"comparison": comparison, "findings": findings, "impression": r.impression}
    texts["recommendations"] = r.recommendations
    entries: list[dict[str, Any]] = []
    refs = []
    for key, code, display in _SECTIONS:
        if not texts[key].strip():
            continue
        obs_id = {"system": "urn:casebook:report-section", "value": f"{r.sr_uid}.{key}"}
        obs = Observation.model_validate(
            {
                "resourceType": "Observation",
                "identifier": [obs_id],
                "status": "amended" if r.version > 1 else "final",
                "category": [{"coding": [_IMAGING]}],
                "code": {"coding": [{"system": LOINC, "code": code, "display": display}]},
                "subject": subject,
                "issued": issued,
                "valueString": texts[key].strip(),
            }
        )
        url = _urn(r.sr_uid, key)
        refs.append({"reference": url})
        entries.append(_entry(url, obs.model_dump(mode="json", exclude_none=True), obs_id))
    report = DiagnosticReport.model_validate(
        {
            "resourceType": "DiagnosticReport",
            "identifier": [ident],
            "status": "amended" if r.version > 1 else "final",
            "category": [{"coding": [_RAD]}],
            "code": {"coding": [{"system": LOINC, "code": "18748-4", "display": "Diagnostic imaging study"}]},
            "subject": subject,
            "issued": issued,
            "performer": [{"display": r.signer}],
            "resultsInterpreter": [{"display": r.signer}],
            "result": refs,
            "imagingStudy": [{"identifier": {"system": "urn:dicom:uid", "value": f"urn:oid:{r.study_uid}"}}],
            "conclusion": r.impression.strip(),
        }
    )
    entries.insert(0, _entry(_urn(r.sr_uid), report.model_dump(mode="json", exclude_none=True), ident))
    bundle = Bundle.model_validate({"resourceType": "Bundle", "type": "transaction", "entry": entries})
    return bundle.model_dump(mode="json", exclude_none=True)


def _entry(url: str, resource: dict[str, Any], ident: dict[str, str]) -> dict[str, Any]:
    kind = resource["resourceType"]
    return {
        "fullUrl": url,
        "resource": resource,
        "request": {"method": "POST", "url": kind, "ifNoneExist": f"identifier={ident['system']}|{ident['value']}"},
    }
