"""The PACS over DIMSE (``pynetdicom``): C-FIND to search, C-GET to retrieve, C-STORE to send an SR.

:class:`DimseClient` offers what :class:`core.pacs.client.PacsClient` offers, for a PACS
that speaks only classic DICOM networking (``pacs.protocol: dimse``). Casebook calls as
``pacs.calling_aet`` to ``pacs.called_aet`` at ``pacs.dimse_host``:``pacs.dimse_port``,
optionally over DICOM TLS (``pacs.dimse_tls``, verified against ``pacs.ca_bundle``).
DIMSE has no password: the PACS admits Casebook by its AE title and address.

C-GET brings the instances back on the same association (no C-MOVE destination to
open), into memory. Failures become the same typed errors: a refused TCP connection
or an aborted association is :class:`PacsUnreachableError`, a rejected association
(unknown AE title or host) :class:`PacsAuthError`, no answer :class:`PacsTimeoutError`,
a failure status :class:`PacsRefusedError`. Connection failures and timeouts are
retried with back-off like the DICOMweb client's.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from core.config.pacs import PacsSettings
from core.errors import (
    PacsAuthError,
    PacsNotConfiguredError,
    PacsRefusedError,
    PacsTimeoutError,
    PacsUnreachableError,
)
from core.pacs.client import StudyHit, StudyQuery, check_uid

A_ASSOCIATE_RJ = 0x03  # PDU type of an association rejection (PS3.8 9.3.4)

__all__ = ["DimseClient"]

logging.getLogger("pynetdicom").setLevel(logging.WARNING)  # its INFO/DEBUG lines print identifiers
FIND = "1.2.840.10008.5.1.4.1.2.2.1"  # Study Root Query/Retrieve Information Model - FIND
GET = "1.2.840.10008.5.1.4.1.2.2.3"  # Study Root Query/Retrieve Information Model - GET
_FIND_KEYS = (
    "StudyInstanceUID", "PatientName", "PatientID", "StudyDate", "ModalitiesInStudy", "AccessionNumber",
    "StudyDescription", "NumberOfStudyRelatedSeries", "NumberOfStudyRelatedInstances",
)  # fmt: skip


class DimseClient:
    """One DIMSE peer; the same methods as the DICOMweb client."""

    def __init__(self, settings: PacsSettings) -> None:
        if not (settings.dimse_host and settings.called_aet):
            raise PacsNotConfiguredError(
                "No DIMSE peer is configured (pacs.dimse_host and pacs.called_aet)",
                hint="Set pacs.dimse_host, pacs.dimse_port and pacs.called_aet (docs/INTEGRATION.md).",
            )
        self.cfg = settings
        self.where = f"{settings.dimse_host}:{settings.dimse_port}"
        self.limit = settings.search_limit

    def _ae(self, contexts: list[Any]) -> Any:
        from pynetdicom import AE

        ae = AE(ae_title=self.cfg.calling_aet)
        for c in contexts:
            ae.add_requested_context(c) if isinstance(c, str) else ae.add_requested_context(c.abstract_syntax)
        ae.acse_timeout = ae.dimse_timeout = ae.network_timeout = self.cfg.timeout_s
        ae.connection_timeout = self.cfg.timeout_s
        return ae

    def _tls(self) -> tuple[ssl.SSLContext, str] | None:
        if not self.cfg.dimse_tls:
            return None
        ctx = ssl.create_default_context(cafile=str(self.cfg.ca_bundle) if self.cfg.ca_bundle else None)
        return ctx, str(self.cfg.dimse_host)

    @contextmanager
    def _association(self, what: str, contexts: list[Any], **kw: Any) -> Iterator[Any]:
        """An established association, after a TCP check that tells refused from silent; released on exit."""
        host, port = str(self.cfg.dimse_host), self.cfg.dimse_port
        try:
            socket.create_connection((host, port), timeout=self.cfg.timeout_s).close()
        except TimeoutError as exc:
            raise PacsTimeoutError(f"{what}: {self.where} did not answer in time") from exc
        except OSError as exc:
            raise PacsUnreachableError(f"{what}: {self.where} is unreachable (no connection)") from exc
        from pynetdicom import evt

        pdu_types: set[int] = set()  # the first byte of each PDU received: 0x03 is A-ASSOCIATE-RJ
        handlers = [*kw.pop("evt_handlers", []), (evt.EVT_DATA_RECV, lambda e: pdu_types.add(e.data[0]))]
        assoc = self._ae(contexts).associate(
            host, port, ae_title=self.cfg.called_aet, tls_args=self._tls(), evt_handlers=handlers, **kw
        )
        # A peer that rejects and at once closes the connection can reach pynetdicom as an abort
        # (the close is handled before the A-ASSOCIATE-RJ it read: 4 of 30 tries under load); the
        # PDU it received still says rejected.
        if assoc.is_rejected or (not assoc.is_established and A_ASSOCIATE_RJ in pdu_types):
            raise PacsAuthError(
                f"{what}: {self.where} rejected the association (calling AE title or address not allowed)",
                hint="Ask the PACS administrator to register pacs.calling_aet and this host; check pacs.called_aet.",
            )
        if not assoc.is_established:
            raise PacsUnreachableError(f"{what}: {self.where} aborted the association")
        try:
            yield assoc
        finally:
            if assoc.is_established:
                assoc.release()

    def _retried(self, op: Callable[[], Any]) -> Any:
        for attempt in range(self.cfg.retries):
            try:
                return op()
            except (PacsUnreachableError, PacsTimeoutError):
                if attempt == self.cfg.retries - 1:
                    raise
            time.sleep(self.cfg.backoff_s * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def search_studies(
        self, query: StudyQuery, *, progress: Callable[[float, str], None] | None = None, limit: int | None = None
    ) -> list[StudyHit]:
        """Studies matching ``query`` (C-FIND, Study Root), at most ``limit`` (``pacs.search_limit``), newest first."""
        from pydicom import Dataset

        say = progress or (lambda _f, _m: None)
        most = limit or self.limit
        q = Dataset()
        q.QueryRetrieveLevel = "STUDY"
        for key in _FIND_KEYS:
            setattr(q, key, "")
        for key, value in query.filters().items():
            setattr(q, key, value)

        def run() -> list[StudyHit]:
            hits: list[StudyHit] = []
            with self._association("Study search", [FIND]) as assoc:
                for status, ident in assoc.send_c_find(q, FIND):
                    if status is None or "Status" not in status:
                        raise PacsTimeoutError(f"Study search: {self.where} stopped answering")
                    if status.Status not in (0x0000, 0xFF00, 0xFF01):
                        raise PacsRefusedError(f"Study search: {self.where} answered status 0x{status.Status:04X}")
                    if ident is not None and len(hits) < most:
                        hits.append(_hit(ident))
                        say(min(0.99, len(hits) / most), f"{len(hits)} studies found")
            return hits

        hits = self._retried(run)
        say(1.0, f"{len(hits)} studies found")
        return sorted((h for h in hits if query.matches(h)), key=lambda h: h.date, reverse=True)

    def retrieve_study(self, study_uid: str) -> list[Any]:
        """Every instance of a study, in memory (C-GET on one association)."""
        from pydicom import Dataset
        from pynetdicom import StoragePresentationContexts, build_role, evt

        q = Dataset()
        q.QueryRetrieveLevel, q.StudyInstanceUID = "STUDY", check_uid(study_uid)

        def run() -> list[Any]:
            got: list[Any] = []

            def on_store(event: Any) -> int:
                ds = event.dataset
                ds.file_meta = event.file_meta
                got.append(ds)
                return 0x0000

            roles = [build_role(str(c.abstract_syntax), scp_role=True) for c in StoragePresentationContexts]
            contexts = [GET, *StoragePresentationContexts]
            with self._association(
                "Study retrieval", contexts, ext_neg=roles, evt_handlers=[(evt.EVT_C_STORE, on_store)]
            ) as assoc:
                for status, _ident in assoc.send_c_get(q, GET):
                    if status is None or "Status" not in status:
                        raise PacsTimeoutError(f"Study retrieval: {self.where} stopped answering")
                    if status.Status not in (0x0000, 0xFF00, 0xFF01, 0xB000):
                        raise PacsRefusedError(f"Study retrieval: {self.where} answered status 0x{status.Status:04X}")
            return got

        return list(self._retried(run))

    def study_metadata(self, study_uid: str) -> list[Any]:
        """The study's instance headers (retrieved whole with C-GET; the caller drops the pixels)."""
        return self.retrieve_study(study_uid)

    def store(self, datasets: list[Any]) -> None:
        """Send each dataset with C-STORE; a failure status raises :class:`PacsRefusedError`."""
        classes = sorted({str(ds.SOPClassUID) for ds in datasets})

        def run() -> None:
            with self._association("C-STORE", classes) as assoc:
                for ds in datasets:
                    status = assoc.send_c_store(ds)
                    if status is None or "Status" not in status:
                        raise PacsTimeoutError(f"C-STORE: {self.where} stopped answering")
                    if status.Status not in (0x0000, 0xB000, 0xB007, 0xB006):
                        raise PacsRefusedError(f"C-STORE: {self.where} refused it (status 0x{status.Status:04X})")

        self._retried(run)


def _hit(ds: Any) -> StudyHit:
    def num(key: str) -> int:
        try:
            return int(ds.get(key) or 0)
        except (TypeError, ValueError):
            return 0

    mods = ds.get("ModalitiesInStudy") or ""
    return StudyHit(
        study_uid=str(ds.get("StudyInstanceUID") or ""),
        patient_name=str(ds.get("PatientName") or ""),
        patient_id=str(ds.get("PatientID") or ""),
        date=str(ds.get("StudyDate") or ""),
        modalities="\\".join(mods) if not isinstance(mods, str) else mods,
        accession=str(ds.get("AccessionNumber") or ""),
        description=str(ds.get("StudyDescription") or ""),
        series=num("NumberOfStudyRelatedSeries"),
        instances=num("NumberOfStudyRelatedInstances"),
    )
