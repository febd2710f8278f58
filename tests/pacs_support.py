"""The PACS tests' parts: the Orthanc that scripts/orthanc_setup.sh starts, unique studies, and loopback endpoints.

``CASEBOOK_TEST_ORTHANC_URL`` (printed by ``scripts/orthanc_setup.sh``) names the
real Orthanc with its credentials; without it the ``pacs`` tests are skipped, or
fail when ``CASEBOOK_REQUIRE_ORTHANC`` is set (CI). Each test stores its own copy of
pydicom's packaged files under a fresh patient, study and UIDs, so tests sharing
the server never see each other's studies.

:class:`FakeEndpoint` is a loopback HTTP server for what Orthanc will not do on
request: answer slowly (a timeout), refuse a STOW (HTTP 409), take a FHIR Bundle
(recorded) or refuse its token (401). Its study metadata is a fixed header set.
"""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pydicom
import pytest
from pydicom.uid import generate_uid

from tests.imaging_support import packaged

ORTHANC_ENV = "CASEBOOK_TEST_ORTHANC_URL"
ORTHANC_SKIP = f"{ORTHANC_ENV} is not set: run scripts/orthanc_setup.sh (as root) or `make test`"


@dataclass(frozen=True)
class Orthanc:
    """The test PACS: its DICOMweb URL (no credentials), user and password."""

    url: str
    username: str
    password: str


def orthanc_or_skip() -> Orthanc:
    """The running test Orthanc, or skip (fail in CI) with the reason."""
    raw = os.environ.get(ORTHANC_ENV, "").strip()
    if not raw:
        if os.environ.get("CASEBOOK_REQUIRE_ORTHANC"):
            pytest.fail(ORTHANC_SKIP)
        pytest.skip(ORTHANC_SKIP)
    parts = urlsplit(raw)
    url = f"{parts.scheme}://{parts.hostname}:{parts.port}{parts.path}"
    return Orthanc(url, parts.username or "", parts.password or "")


@dataclass
class PacsStudy:
    """A study stored into the PACS by a test: its original identifiers (what must never leak)."""

    patient_name: str
    patient_id: str
    study_uid: str
    series_uids: list[str]
    sop_uids: list[str]
    accession: str
    datasets: list[Any] = field(default_factory=list)

    def identifiers(self) -> list[str]:
        """Every original identifying value a leak search looks for."""
        return [self.patient_name, self.patient_id, self.accession, self.study_uid, *self.series_uids, *self.sop_uids]


def make_study(*names: str, patient: str | None = None, patient_id: str | None = None) -> PacsStudy:
    """pydicom's packaged ``names`` as one new study (one series per file) of a new (or the given) patient."""
    tag = uuid.uuid4().hex[:8].upper()
    pname = patient or f"Testpacs^Patient{tag}"
    pid = patient_id or f"PID{tag}"
    study = PacsStudy(pname, pid, generate_uid(), [], [], f"ACC{tag}")
    for name in names:
        ds = pydicom.dcmread(packaged(name))
        ds.PatientName, ds.PatientID, ds.AccessionNumber = pname, pid, study.accession
        ds.StudyInstanceUID = study.study_uid
        ds.SeriesInstanceUID, ds.SOPInstanceUID = generate_uid(), generate_uid()
        ds.file_meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        ds.StudyDate = "20240315"
        study.series_uids.append(ds.SeriesInstanceUID)
        study.sop_uids.append(ds.SOPInstanceUID)
        study.datasets.append(ds)
    return study


def leaks(text: str, study: PacsStudy) -> list[str]:
    """The original identifiers of ``study`` found in ``text``."""
    return [v for v in study.identifiers() if v and v in text]


def tree_text(root: Path) -> str:
    """Every file under ``root`` (database, WAL, image store, logs) as one latin-1 string, for leak searches."""
    out = []
    for p in sorted(root.rglob("*")):
        if p.is_file():
            out.append(p.read_bytes().decode("latin-1"))
    return "\n".join(out)


class FakeEndpoint:
    """A loopback DICOMweb + FHIR server with switchable faults; ``posts`` records (path, headers, body)."""

    def __init__(self, metadata: list[dict[str, Any]] | None = None) -> None:
        self.metadata = metadata or []
        self.stow_status = 200
        self.stow_first: list[int] = []  # statuses answered to the next STOWs, in order, before stow_status
        self.fhir_status = 200
        self.delay_s = 0.0
        self.posts: list[tuple[str, dict[str, str], bytes]] = []
        self.gets = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                outer.gets += 1
                time.sleep(outer.delay_s)
                if self.path.endswith("/metadata"):
                    self._send(200, json.dumps(outer.metadata).encode(), "application/dicom+json")
                else:
                    self._send(200, b"[]", "application/dicom+json")

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                outer.posts.append((self.path, dict(self.headers), body))
                time.sleep(outer.delay_s)
                if self.path.startswith("/fhir"):
                    self._send(outer.fhir_status, b'{"resourceType": "Bundle", "type": "transaction-response"}',
                               "application/fhir+json")  # fmt: skip
                else:
                    status = outer.stow_first.pop(0) if outer.stow_first else outer.stow_status
                    self._send(status, b"{}", "application/dicom+json")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.root = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        """Stop the server."""
        self.server.shutdown()
        self.server.server_close()


DIMSE_PORT = int(os.environ.get("CASEBOOK_ORTHANC_DICOM_PORT", "4342"))  # scripts/orthanc_setup.sh's default
DIMSE_AET = "CASEBOOKPACS"  # the test Orthanc's AE title; it admits only CASEBOOK from 127.0.0.1
