"""Every error Casebook raises on purpose, in one tree.

Each error carries a ``hint``: one sentence a doctor or an operator can act on.
Code catches the narrowest class it can handle; the CLI and the pages print
``str(err)`` and ``err.hint``.

    CasebookError
    ├── ConfigError                  a setting or preset is wrong
    ├── NotFoundError                an id that names nothing (scan, patient, draft)
    ├── InvalidInputError            input rejected before anything is written
    │   ├── EmbeddingError           wrong dimension, NaN or infinite values
    │   ├── ImportRejectedError      a case file with rejected rows (nothing imported)
    │   ├── DocumentError            a document that cannot be parsed
    │   ├── ImageRejectedError       an image import refused (nothing imported)
    │   ├── CorpusInputError         bad corpus lines or embeddings (listed by line number)
    │   └── CommunicationRequiredError  a critical result with no communication record (signing, amending)
    ├── ReadOnlyViolationError       inference tried to write
    ├── ImmutableRecordError         a signed report was about to change
    ├── RecordIntegrityError         a record's seal or the record key does not verify
    ├── ConflictError                a stale draft edit or a concurrent amendment
    ├── AccessDeniedError            another doctor's draft, another patient's scan
    ├── IndexStateError              an index is missing, stale or corrupt
    │   ├── MissingIndexError        a knowledge base that was never built (no index at all)
    │   └── EncoderMismatchError     queried with another encoder than the one that built it
    ├── DiskFullError                an index build ran out of room; the previous version serves
    ├── BackendError                 an LLM or embedding backend failed
    │   ├── BackendTimeoutError      past the feature's time budget, or certain to be
    │   ├── BackendCancelledError    the user pressed Cancel; generation stopped
    │   └── BackendAuthError
    ├── RateLimitedError             too many requests; retry_after_s says when
    └── PacsError                    the PACS or the FHIR endpoint failed; nothing local was lost
        ├── PacsNotConfiguredError   no endpoint is set
        ├── PacsUnreachableError     no connection (host down, wrong port, TLS failure)
        ├── PacsAuthError            the endpoint refused the credentials (401/403)
        ├── PacsTimeoutError         no answer within pacs.timeout_s
        └── PacsRefusedError         the endpoint answered but refused the request or the stored object

:func:`disk_full_as_error` turns the shapes "no room left" takes (an ``OSError``
with ENOSPC, EDQUOT or EFBIG, numpy's short write, SQLite's SQLITE_FULL, a FAISS
write error naming one of those) into :class:`DiskFullError`.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "AccessDeniedError",
    "BackendAuthError",
    "BackendCancelledError",
    "BackendError",
    "BackendTimeoutError",
    "CasebookError",
    "CommunicationRequiredError",
    "ConfigError",
    "ConflictError",
    "CorpusInputError",
    "DiskFullError",
    "DocumentError",
    "EmbeddingError",
    "EncoderMismatchError",
    "ImageRejectedError",
    "ImmutableRecordError",
    "ImportRejectedError",
    "IndexStateError",
    "InvalidInputError",
    "MissingIndexError",
    "NotFoundError",
    "PacsAuthError",
    "PacsError",
    "PacsNotConfiguredError",
    "PacsRefusedError",
    "PacsTimeoutError",
    "PacsUnreachableError",
    "RateLimitedError",
    "ReadOnlyViolationError",
    "RecordIntegrityError",
    "disk_full_as_error",
    "is_disk_full",
]


class CasebookError(Exception):
    """Base of every deliberate Casebook error."""

    hint: str = "See the logs for details."

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        if hint is not None:
            self.hint = hint


class ConfigError(CasebookError):
    """A setting, preset or environment override is invalid."""

    hint = "Check the settings file and CASEBOOK_* environment variables (docs/SETTINGS.md)."


class NotFoundError(CasebookError):
    """An identifier that names no stored record."""

    hint = "List what exists with `python -m core scans --json`."


class InvalidInputError(CasebookError):
    """Input rejected before anything was written."""

    hint = "Correct the input and try again; nothing was changed."


class EmbeddingError(InvalidInputError):
    """An embedding with the wrong dimension or non-finite values."""

    hint = "Embeddings must be 512 finite numbers from the imaging encoder."


class ImportRejectedError(InvalidInputError):
    """A case import with invalid rows; the whole file was rejected."""

    hint = "Fix the listed rows and import again; no row was imported."

    def __init__(self, message: str, rejected: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.rejected = rejected


class ImageRejectedError(InvalidInputError):
    """An image import refused as a whole: not DICOM, truncated, undecodable, over a limit, burned-in text."""

    hint = "Nothing was imported. Fix or remove the named file and import again."


class DocumentError(InvalidInputError):
    """A document (XML, PDF, Markdown, HTML) that cannot be ingested."""

    hint = "The file was skipped; the other files were ingested."


class CorpusInputError(InvalidInputError):
    """A corpus file or its embeddings with bad lines or rows; nothing was built.

    ``problems`` lists ``(line number, message)``; line 0 is a problem with the
    file as a whole (an embeddings matrix of the wrong shape).
    """

    hint = "Fix the listed lines and run the same command again; the previous version keeps serving."

    def __init__(self, message: str, problems: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.problems = problems


class CommunicationRequiredError(InvalidInputError):
    """A report (or an amendment) names a critical finding that no communication record covers; nothing was signed.

    ``findings`` lists the critical findings the text names without a record (empty when the
    doctor flagged the result critical without naming one of the list).
    """

    hint = "Record who was told, when, how, and that they read the result back, then sign again."

    def __init__(self, message: str, findings: list[str] | None = None) -> None:
        super().__init__(message)
        self.findings = list(findings or [])


class ReadOnlyViolationError(CasebookError):
    """An inference path tried to write to the store."""

    hint = "Inference reads only; writes go through the explicit save actions."


class ImmutableRecordError(CasebookError):
    """A signed report cannot change; a new version must be created."""

    hint = "Signed reports are read-only. Create an amended version instead."


class RecordIntegrityError(CasebookError):
    """A stored record cannot be trusted: its seal does not verify, or its key is not held."""

    hint = "Run `python -m core reports verify` and `python -m core audit verify`; restore the record key file."


class AccessDeniedError(CasebookError):
    """The signed-in user may not touch this record (another doctor's draft, another patient's scan)."""

    hint = "Only the author of a draft can change or sign it; start your own draft."


class ConflictError(CasebookError):
    """Someone else changed the record first (a stale draft edit, a concurrent amendment).

    ``current`` holds the record's current text (``findings``, ``impression``,
    ``recommendations``, ``version``) when there is one, so nothing is silently lost.
    """

    hint = "Reload to see the current text, then apply your change again."

    def __init__(self, message: str, *, current: dict[str, object] | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.current = current


class IndexStateError(CasebookError):
    """An index is missing, stale, corrupt or built by a different encoder."""

    hint = "Rebuild it with `python -m core index rebuild` (or the Settings page)."


class MissingIndexError(IndexStateError):
    """A knowledge base with no index at all (never built), as opposed to a stale or damaged one."""


class EncoderMismatchError(IndexStateError):
    """A query encoder other than the one the index records (model id or dimension differ)."""

    hint = "Query with the encoder named in the index manifest, or ingest the corpus again with this one."


class DiskFullError(CasebookError):
    """A write ran out of room (no space, a quota or a file-size limit); nothing half-built was kept."""

    hint = "Free disk space and run the same command again; the previous version still serves."


# ENOSPC: no space left; EDQUOT: quota exceeded; EFBIG: past RLIMIT_FSIZE or the file system's file size limit.
_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})
# numpy's tofile (np.save on a real file) reports a short fwrite without an errno.
_NUMPY_SHORT_WRITE = re.compile(r"^\d+ requested and \d+ written$")
# FAISS raises RuntimeError("... write error in PATH: N != M (<strerror>)") through its SWIG wrapper.
_FAISS_FULL = re.compile(r"write error in .*\((" + "|".join(re.escape(os.strerror(e)) for e in _FULL_ERRNOS) + r")\)")


def is_disk_full(exc: BaseException) -> bool:
    """Whether ``exc`` is a write refused for lack of room, and nothing else."""
    if isinstance(exc, OSError):
        return exc.errno in _FULL_ERRNOS or (exc.errno is None and bool(_NUMPY_SHORT_WRITE.match(str(exc))))
    if isinstance(exc, sqlite3.OperationalError):
        return getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
    return isinstance(exc, RuntimeError) and bool(_FAISS_FULL.search(str(exc)))


@contextlib.contextmanager
def disk_full_as_error(where: Path, what: str, hint: str) -> Iterator[None]:
    """Re-raise a disk-full error inside the block as :class:`DiskFullError` (``what``, ``where``, ``hint``).

    Every other error passes through unchanged.
    """
    try:
        yield
    except Exception as exc:
        # a database driver's error wrapped by SQLAlchemy (DBAPIError) carries the driver's in ``orig``
        if not (is_disk_full(exc) or is_disk_full(getattr(exc, "orig", None) or exc)):
            raise
        raise DiskFullError(f"{what}: no room left under {where} ({exc})", hint=hint) from exc


class BackendError(CasebookError):
    """An LLM or embedding backend failed."""

    hint = "The answer falls back to the extractive composer; check the backend settings."


class BackendTimeoutError(BackendError):
    """A backend did not answer within its time budget."""


class BackendCancelledError(BackendError):
    """Generation was stopped because the user cancelled it."""

    hint = "Cancelled: the answer shown is the one without the model. Ask again to run the model."


class BackendAuthError(BackendError):
    """A backend refused the credentials."""

    hint = "Set a valid API key (environment or Streamlit secrets)."


class RateLimitedError(CasebookError):
    """Too many requests in the current window."""

    def __init__(self, message: str, retry_after_s: float) -> None:
        super().__init__(message, hint=f"Retry in {max(1, round(retry_after_s))} s.")
        self.retry_after_s = retry_after_s


class PacsError(CasebookError):
    """The PACS (DICOMweb) or the FHIR endpoint failed; local records are unchanged and a queued export stays queued."""

    hint = "Nothing local was lost; a report export stays queued and can be sent again (`python -m core pacs resend`)."


class PacsNotConfiguredError(PacsError):
    """No PACS or FHIR endpoint is configured."""

    hint = "Set pacs.url (and pacs.username, with the password in the variable named by pacs.password_env)."


class PacsUnreachableError(PacsError):
    """No connection to the endpoint: host down, wrong address or port, refused, or a TLS failure."""

    hint = "Check pacs.url and that the PACS is up and reachable from this machine; queued exports can be re-sent."


class PacsAuthError(PacsError):
    """The endpoint refused the credentials (HTTP 401 or 403)."""

    hint = "Check pacs.username and the password in the variable named by pacs.password_env (or the FHIR token)."


class PacsTimeoutError(PacsError):
    """The endpoint did not answer within ``pacs.timeout_s`` (after the retries)."""

    hint = "The PACS is slow or overloaded; try again later or raise pacs.timeout_s. Queued exports can be re-sent."


class PacsRefusedError(PacsError):
    """The endpoint answered but refused the request or the stored object (a 4xx/5xx, a failed STOW)."""

    hint = "The PACS refused it; its administrator's log says why. The signed report is unchanged and stays queued."
