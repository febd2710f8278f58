"""The PACS over DICOMweb (``dicomweb-client``): search, retrieve and store, with typed errors and back-off.

:class:`PacsClient` speaks to one configured endpoint (``pacs.url``) and nothing
else: the session ignores proxy variables of the environment (``trust_env`` off),
verifies TLS certificates (``pacs.ca_bundle`` or the system's), and authenticates
with HTTP basic auth, the password read from the environment variable that
``pacs.password_env`` names. The password is never logged or stored, and
``dicomweb_client``'s debug logging (which prints query strings holding patient
names) is held at WARNING.

Every call goes through :func:`mapped_errors`, which turns what ``requests`` raises into
the :class:`~core.errors.PacsError` tree: unreachable, bad credentials, timeout,
refused. Connection failures, timeouts and 408/429/503/504 answers are retried
``pacs.retries`` times with exponential back-off (``pacs.backoff_s`` doubling): the
searches and retrievals are reads, and an SR's store is idempotent (its UIDs are
fixed per report version, so a second copy replaces the first).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from http import HTTPStatus
from typing import Any, Protocol
from urllib.parse import urlsplit

import requests

from core.config.pacs import PacsSettings
from core.errors import (
    PacsAuthError,
    PacsError,
    PacsNotConfiguredError,
    PacsRefusedError,
    PacsTimeoutError,
    PacsUnreachableError,
)

__all__ = [
    "SAFE",
    "Pacs",
    "PacsClient",
    "StudyHit",
    "StudyQuery",
    "check_uid",
    "endpoint_label",
    "make_client",
    "mapped_errors",
    "qido_query",
]

log = logging.getLogger(__name__)
# Their DEBUG lines print request paths and query strings, which hold patient names and UIDs here.
logging.getLogger("dicomweb_client").setLevel(logging.WARNING)
logging.getLogger("urllib3.connectionpool").setLevel(logging.INFO)
_RETRIABLE = (
    HTTPStatus.REQUEST_TIMEOUT,
    HTTPStatus.TOO_MANY_REQUESTS,
    HTTPStatus.SERVICE_UNAVAILABLE,
    HTTPStatus.GATEWAY_TIMEOUT,
)
SAFE = re.compile(r"[^A-Za-z0-9*.\-_]")  # the characters a QIDO query value may NOT carry as they are
_UID = re.compile(r"^[0-9]+(\.[0-9]+)*$")
PAGE = 25  # studies per QIDO page: the study list shows progress page by page


def endpoint_label(url: str | None) -> str:
    """``host:port`` of an endpoint, for messages (never the path, query or credentials)."""
    if not url:
        return "(not configured)"
    parts = urlsplit(url)
    return f"{parts.hostname or '?'}:{parts.port or (443 if parts.scheme == 'https' else 80)}"


@dataclass(frozen=True)
class StudyQuery:
    """What a doctor searches the PACS by; empty fields do not filter. Dates are ``YYYYMMDD``."""

    patient_name: str = ""
    patient_id: str = ""
    date_from: str = ""
    date_to: str = ""
    modality: str = ""
    accession: str = ""

    def filters(self) -> dict[str, str]:
        """QIDO-RS query parameters (names take a trailing wildcard)."""
        out: dict[str, str] = {}
        if self.patient_name.strip():
            name = self.patient_name.strip()
            out["PatientName"] = name if name.endswith("*") else name + "*"
        if self.patient_id.strip():
            out["PatientID"] = self.patient_id.strip()
        if self.date_from.strip() or self.date_to.strip():
            out["StudyDate"] = f"{self.date_from.strip()}-{self.date_to.strip()}"
        if self.modality.strip():
            out["ModalitiesInStudy"] = self.modality.strip().upper()
        if self.accession.strip():
            out["AccessionNumber"] = self.accession.strip()
        return out

    def matches(self, hit: StudyHit) -> bool:
        """Whether ``hit`` matches the name and id asked for (the PACS was sent a wider wildcard: ``_qido``)."""
        wanted = self.filters()
        for key, got in (("PatientName", hit.patient_name), ("PatientID", hit.patient_id)):
            if key in wanted and not fnmatchcase(got.upper(), wanted[key].upper()):
                return False
        return True


def qido_query(params: list[tuple[str, str]]) -> str:
    """The query string of ``params``: each value with every character outside :data:`SAFE` made ``*``.

    No value can add, end or change a parameter (``&``, ``=``, ``#``, ``%`` and spaces all become ``*``).
    """
    return "&".join(f"{k}={SAFE.sub('*', v)}" for k, v in params)


def check_uid(value: str) -> str:
    """``value`` when it is a DICOM UID (digits and dots), else :class:`PacsRefusedError` before any request."""
    if not _UID.match(value) or len(value) > 64:
        raise PacsRefusedError("Not a DICOM UID", hint="Pick the study from the PACS study list.")
    return value


@dataclass(frozen=True)
class StudyHit:
    """One study as the PACS lists it. Holds identifying values: show it, never log or store it."""

    study_uid: str
    patient_name: str
    patient_id: str
    date: str
    modalities: str
    accession: str
    description: str
    series: int
    instances: int


def _value(item: dict[str, Any], tag: str) -> str:
    values = item.get(tag, {}).get("Value") or [""]
    v = values[0]
    if isinstance(v, dict):  # a person name in DICOM JSON
        return str(v.get("Alphabetic", ""))
    return "\\".join(str(x) for x in values) if tag == "00080061" else str(v)


def _hit(item: dict[str, Any]) -> StudyHit:
    def num(tag: str) -> int:
        try:
            return int(_value(item, tag) or 0)
        except ValueError:
            return 0

    return StudyHit(
        study_uid=_value(item, "0020000D"),
        patient_name=_value(item, "00100010"),
        patient_id=_value(item, "00100020"),
        date=_value(item, "00080020"),
        modalities=_value(item, "00080061"),
        accession=_value(item, "00080050"),
        description=_value(item, "00081030"),
        series=num("00201206"),
        instances=num("00201208"),
    )


@contextlib.contextmanager
def mapped_errors(what: str, where: str) -> Iterator[None]:
    """Re-raise what ``requests`` and ``retrying`` raise during ``what`` as a :class:`PacsError`."""
    from retrying import RetryError

    try:
        yield
    except PacsError:
        raise
    except requests.Timeout as exc:
        raise PacsTimeoutError(f"{what}: {where} did not answer in time") from exc
    except requests.ConnectionError as exc:
        kind = "a TLS failure" if isinstance(exc, requests.exceptions.SSLError) else "no connection"
        raise PacsUnreachableError(f"{what}: {where} is unreachable ({kind})") from exc
    except requests.HTTPError as exc:
        status = exc.response.status_code if exc.response is not None else 0
        if status in (401, 403):
            raise PacsAuthError(f"{what}: {where} refused the credentials (HTTP {status})") from exc
        if status in (HTTPStatus.REQUEST_TIMEOUT, HTTPStatus.GATEWAY_TIMEOUT):
            raise PacsTimeoutError(f"{what}: {where} answered HTTP {status} (timed out)") from exc
        raise PacsRefusedError(f"{what}: {where} answered HTTP {status}") from exc
    except RetryError as exc:
        response = exc.last_attempt.value if not exc.last_attempt.has_exception else None
        status = getattr(response, "status_code", 0)
        if status in (HTTPStatus.REQUEST_TIMEOUT, HTTPStatus.GATEWAY_TIMEOUT):
            raise PacsTimeoutError(f"{what}: {where} kept answering HTTP {status}") from exc
        raise PacsRefusedError(f"{what}: {where} kept answering HTTP {status} (busy)") from exc
    except ValueError as exc:  # dicomweb-client: a STOW answer listing failed instances, or a malformed answer
        raise PacsRefusedError(f"{what}: {where} refused it ({type(exc).__name__})") from exc


class PacsClient:
    """One DICOMweb endpoint. Build with :meth:`from_settings`; a session may be handed in (tests, TLS set-ups)."""

    def __init__(self, settings: PacsSettings, *, password: str | None = None) -> None:
        if not settings.url:
            raise PacsNotConfiguredError("No PACS is configured (pacs.url is empty)")
        from dicomweb_client.api import DICOMwebClient

        self.where = endpoint_label(settings.url)
        session = requests.Session()
        session.trust_env = False  # no proxy or netrc from the environment: only the configured endpoint
        session.verify = str(settings.ca_bundle) if settings.ca_bundle else True
        secret = password if password is not None else os.environ.get(settings.password_env, "")
        if settings.username:
            session.auth = (settings.username, secret)
        self._client = DICOMwebClient(url=settings.url.rstrip("/"), session=session, timeout=settings.timeout_s)
        self._client.set_http_retry_params(
            retry=True,
            max_attempts=settings.retries,
            wait_exponential_multiplier=int(settings.backoff_s * 500),  # retrying waits 2^n x this (ms)
            retriable_error_codes=_RETRIABLE,
        )
        self.limit = settings.search_limit
        self._session, self._base = session, settings.url.rstrip("/")
        self._retries, self._backoff, self._timeout = settings.retries, settings.backoff_s, settings.timeout_s

    def _qido(self, path: str, params: list[tuple[str, str]]) -> list[dict[str, Any]]:
        """One QIDO-RS query, retried with back-off on connection failures, timeouts and busy answers.

        Query values are sent unescaped where they are safe (letters, digits, ``*.-_``), anything else as
        ``*``: Orthanc 1.10's DICOMweb plug-in does not percent-decode query values, so ``Smith^J`` is sent
        as ``Smith*J`` and the wider match is narrowed here (:meth:`search_studies`).
        """
        url = f"{self._base}/{path}?{qido_query(params)}"
        for attempt in range(self._retries):
            last = attempt == self._retries - 1
            try:
                response = self._session.get(url, headers={"Accept": "application/dicom+json"}, timeout=self._timeout)
            except (requests.Timeout, requests.ConnectionError):
                if last:
                    raise
            else:
                if response.status_code not in _RETRIABLE or last:
                    response.raise_for_status()
                    return list(response.json()) if response.content else []
            time.sleep(self._backoff * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def search_studies(
        self, query: StudyQuery, *, progress: Callable[[float, str], None] | None = None, limit: int | None = None
    ) -> list[StudyHit]:
        """Studies matching ``query`` (at most ``limit``, default ``pacs.search_limit``), newest first, page by page."""
        say = progress or (lambda _f, _m: None)
        most = limit or self.limit
        fields = [("includefield", tag) for tag in ("00081030", "00201206", "00201208")]
        hits: list[StudyHit] = []
        with mapped_errors("Study search", self.where):
            offset = 0
            while offset < most:
                paging = [("limit", str(min(PAGE, most - offset))), ("offset", str(offset))]
                page = self._qido("studies", [*query.filters().items(), *fields, *paging])
                offset += len(page)
                hits.extend(h for h in map(_hit, page) if query.matches(h))
                say(min(0.99, offset / most), f"{len(hits)} studies found")
                if len(page) < PAGE:
                    break
        say(1.0, f"{len(hits)} studies found")
        return sorted(hits, key=lambda h: h.date, reverse=True)

    def retrieve_study(self, study_uid: str) -> list[Any]:
        """Every instance of a study as pydicom datasets, in memory (WADO-RS)."""
        with mapped_errors("Study retrieval", self.where):
            return list(self._client.retrieve_study(check_uid(study_uid)))

    def study_metadata(self, study_uid: str) -> list[Any]:
        """The study's instance headers without pixel data (WADO-RS metadata), as pydicom datasets."""
        from pydicom import Dataset

        with mapped_errors("Study metadata", self.where):
            items = self._client.retrieve_study_metadata(check_uid(study_uid))
        # bulk data (pixels, large private blobs) is only a URI here and is never needed
        return [Dataset.from_json({k: v for k, v in it.items() if "BulkDataURI" not in v}) for it in items]

    def store(self, datasets: list[Any]) -> None:
        """Store datasets with STOW-RS; a refusal of any of them raises :class:`PacsRefusedError`."""
        with mapped_errors("STOW-RS store", self.where):
            answer = self._client.store_instances(datasets)
        failed = getattr(answer, "FailedSOPSequence", None)
        if failed:
            reasons = sorted({str(item.get("FailureReason", "?")) for item in failed})
            raise PacsRefusedError(
                f"STOW-RS store: {self.where} refused {len(failed)} object(s) (reason {', '.join(reasons)})"
            )

    def find_instance(self, study_uid: str, sop_uid: str) -> bool:
        """Whether the PACS holds instance ``sop_uid`` of ``study_uid`` (QIDO-RS)."""
        with mapped_errors("Instance search", self.where):
            found = self._qido(f"studies/{check_uid(study_uid)}/instances", [("SOPInstanceUID", check_uid(sop_uid))])
        return bool(found)


class Pacs(Protocol):
    """What Casebook asks of a PACS, over DICOMweb (:class:`PacsClient`) or DIMSE (``core.pacs.dimse``)."""

    where: str

    def search_studies(
        self, query: StudyQuery, *, progress: Callable[[float, str], None] | None = None, limit: int | None = None
    ) -> list[StudyHit]:
        """Studies matching ``query`` (at most ``limit``, default ``pacs.search_limit``)."""
        ...

    def retrieve_study(self, study_uid: str) -> list[Any]:
        """Every instance of a study, in memory."""
        ...

    def study_metadata(self, study_uid: str) -> list[Any]:
        """The study's instance headers."""
        ...

    def store(self, datasets: list[Any]) -> None:
        """Store datasets in the PACS."""
        ...


def make_client(settings: PacsSettings) -> Pacs:
    """The client ``pacs.protocol`` names."""
    if settings.protocol == "dimse":
        from core.pacs.dimse import DimseClient

        return DimseClient(settings)
    return PacsClient(settings)
