"""Settings group for the hospital PACS and the FHIR endpoint (registered in :mod:`core.settings` as ``pacs``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from core.config.common import Group

__all__ = ["PacsSettings"]


class PacsSettings(Group):
    """Where studies come from (DICOMweb) and where signed reports go (STOW-RS, FHIR). Secrets are never settings."""

    protocol: Literal["dicomweb", "dimse"] = Field(
        "dicomweb",
        description="How Casebook talks to the PACS: `dicomweb` (QIDO-RS/WADO-RS/STOW-RS at `url`) or `dimse` "
        "(C-FIND/C-GET/C-STORE at `dimse_host`:`dimse_port`, with pynetdicom). docs/INTEGRATION.md.",
    )
    url: str | None = Field(
        None,
        description="DICOMweb base URL of the PACS (QIDO-RS, WADO-RS and STOW-RS under it), e.g. "
        "`https://pacs.example.org/dicom-web`; empty turns PACS import and SR export off. Credentials never go here.",
    )
    username: str | None = Field(None, description="User name for HTTP basic authentication at the PACS.")
    dimse_host: str | None = Field(None, description="Host of the PACS's DIMSE service (protocol `dimse`).")
    dimse_port: int = Field(104, ge=1, le=65535, description="Port of the PACS's DIMSE service.")
    called_aet: str = Field(
        "", max_length=16, description="AE title of the PACS (DIMSE), as its administrator gave it."
    )
    calling_aet: str = Field(
        "CASEBOOK", min_length=1, max_length=16, description="Casebook's own AE title (DIMSE); the PACS must know it."
    )
    dimse_tls: bool = Field(
        False, description="DICOM TLS for DIMSE (the PACS's certificate verified against `ca_bundle` or the system's)."
    )
    password_env: str = Field(
        "CASEBOOK_PACS_PASSWORD",
        description="Name of the environment variable holding the PACS password (the password itself is never "
        "a setting, never logged, never stored).",
    )
    ca_bundle: Path | None = Field(
        None,
        description="PEM file of the certificate authorities that sign the PACS's and the FHIR endpoint's TLS "
        "certificates; empty uses the system's. Certificates are always verified for https.",
    )
    timeout_s: float = Field(20.0, gt=0, description="Seconds one request to the PACS or FHIR endpoint may take.")
    retries: int = Field(
        3,
        ge=1,
        le=10,
        description="Attempts per request when the PACS is unreachable, times out or answers 429/503/504 "
        "(searches, retrievals and STOW of an SR, which is idempotent: its UIDs are fixed per report version).",
    )
    backoff_s: float = Field(
        0.5, ge=0, description="First wait between attempts, in seconds; it doubles after each failed attempt."
    )
    search_limit: int = Field(50, ge=1, le=1000, description="Most studies one PACS search lists.")
    organization: str = Field(
        "Casebook", description="Verifying organization and manufacturer written into exported DICOM SRs."
    )
    fhir_url: str | None = Field(
        None,
        description="FHIR R4 base URL; a signed report's DiagnosticReport (and Observations) are POSTed there as "
        "one transaction Bundle. Empty: FHIR export goes to `fhir_folder` only.",
    )
    fhir_token_env: str = Field(
        "CASEBOOK_FHIR_TOKEN",
        description="Name of the environment variable holding a bearer token for `fhir_url` (unset: no token).",
    )
    fhir_folder: Path | None = Field(
        None,
        description="Folder the FHIR Bundles are written to (one JSON file per report version, mode 0600), e.g. "
        "an interface engine's inbox; it holds the patient's identifiers, so keep it outside the data folder.",
    )
