"""SQLAlchemy 2 models: the contract's tables in snake_case.

Display names, usernames and dates live only in ``users`` and are PHI: nothing
outside this package copies them into prompts, logs or URLs. Scans are
addressed by an opaque random id (``scan_...``), never by the patient.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal, get_args

import numpy as np
from sqlalchemy import (
    JSON,
    Boolean,
    DateTime,
    Float,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship, validates

from core.errors import EmbeddingError

__all__ = [
    "ANATOMIES",
    "EMBEDDING_DIM",
    "SEVERITIES",
    "Anatomy",
    "AuditHead",
    "AuditLog",
    "Base",
    "Conversation",
    "EmbeddingType",
    "HistoricalCase",
    "ImageIdentityMap",
    "ImageInstance",
    "ImageSeries",
    "LoginAttempt",
    "Message",
    "PacsStudyLink",
    "PatientContext",
    "RateLimitHit",
    "Report",
    "ReportDraft",
    "ReportExport",
    "Scan",
    "User",
    "UserSession",
    "utcnow",
    "validate_embedding",
]

EMBEDDING_DIM = 512
Anatomy = Literal["lung", "brain", "spine", "eye", "breast", "abdomen", "skin", "pathology"]
ANATOMIES: tuple[str, ...] = get_args(Anatomy)
SEVERITIES: tuple[str, ...] = ("low", "moderate", "high", "critical")
ROLES: tuple[str, ...] = ("doctor", "patient")


def utcnow() -> dt.datetime:
    """Timezone-aware current time in UTC."""
    return dt.datetime.now(dt.UTC)


def validate_embedding(value: Any, *, dim: int = EMBEDDING_DIM) -> np.ndarray:
    """Return ``value`` as a float32 vector, or raise :class:`EmbeddingError`.

    Accepts lists, tuples and arrays. Rejects a wrong dimension, NaN and
    infinity. The vector is not normalised here: search normalises.
    """
    try:
        arr = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbeddingError(f"Embedding is not a list of numbers: {exc}") from exc
    if arr.ndim != 1 or arr.shape[0] != dim:
        raise EmbeddingError(f"Embedding has dimension {arr.shape if arr.ndim != 1 else arr.shape[0]}, expected {dim}")
    if not np.isfinite(arr).all():
        raise EmbeddingError("Embedding contains NaN or infinite values")
    if not arr.any():
        raise EmbeddingError("Embedding is all zeros")
    return arr


class EmbeddingType(TypeDecorator[np.ndarray]):
    """A validated 512-d float32 vector stored as 2,048 little-endian bytes."""

    impl = LargeBinary
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> bytes | None:
        """Validate and serialise a vector for the database."""
        if value is None:
            return None
        return validate_embedding(value).astype("<f4").tobytes()

    def process_result_value(self, value: Any, dialect: Dialect) -> np.ndarray | None:
        """Read stored bytes back as a float32 vector."""
        if value is None:
            return None
        return np.frombuffer(value, dtype="<f4").copy()


class Base(DeclarativeBase):
    """Declarative base of every table."""


class User(Base):
    """A doctor or a patient. ``display_name`` and ``username`` are PHI."""

    __tablename__ = "users"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    username: Mapped[str] = mapped_column(String(80), unique=True)
    display_name: Mapped[str] = mapped_column(String(200))
    role: Mapped[str] = mapped_column(String(16))
    password_hash: Mapped[str | None] = mapped_column(String(200), default=None)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    context: Mapped[PatientContext | None] = relationship(back_populates="user", uselist=False)


class PatientContext(Base):
    """Age, sex and past conditions of a patient: context, never a diagnosis."""

    __tablename__ = "patient_context"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), primary_key=True)
    age: Mapped[int | None] = mapped_column(Integer, default=None)
    sex: Mapped[str | None] = mapped_column(String(8), default=None)
    past_conditions: Mapped[list[str]] = mapped_column(JSON, default=list)

    user: Mapped[User] = relationship(back_populates="context")


class Scan(Base):
    """One imaging study with the upstream model's result."""

    __tablename__ = "scans"
    __table_args__ = (Index("ix_scans_patient", "patient_id", "created_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    patient_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    anatomy: Mapped[str] = mapped_column(String(16))
    region: Mapped[str | None] = mapped_column(String(40), default=None)
    ai_diagnosis: Mapped[str] = mapped_column(String(200))
    ai_confidence: Mapped[float] = mapped_column(Float)
    embedding: Mapped[np.ndarray | None] = mapped_column(EmbeddingType, default=None)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)

    patient: Mapped[User] = relationship()

    @validates("embedding")
    def _check_embedding(self, _key: str, value: Any) -> np.ndarray | None:
        return None if value is None else validate_embedding(value)


class HistoricalCase(Base):
    """A past case: the memory bank. Never changed by inference."""

    __tablename__ = "historical_cases"
    __table_args__ = (Index("ix_cases_anatomy_region", "anatomy", "region"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    case_id: Mapped[str] = mapped_column(String(40), unique=True)
    anatomy: Mapped[str] = mapped_column(String(16))
    region: Mapped[str | None] = mapped_column(String(40), default=None)
    diagnosis: Mapped[str] = mapped_column(String(200))
    outcome: Mapped[str | None] = mapped_column(String(200), default=None)
    severity: Mapped[str | None] = mapped_column(String(16), default=None)
    embedding: Mapped[np.ndarray] = mapped_column(EmbeddingType)
    age: Mapped[int | None] = mapped_column(Integer, default=None)
    sex: Mapped[str | None] = mapped_column(String(8), default=None)

    @validates("embedding")
    def _check_embedding(self, _key: str, value: Any) -> np.ndarray:
        return validate_embedding(value)


class Report(Base):
    """A signed report. Immutable once ``signed_at`` is set; amendments are new versions."""

    __tablename__ = "reports"
    # one amendment per version: a second version 2 of the same report is refused by the database
    __table_args__ = (Index("uq_reports_supersedes", "supersedes_id", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scan_id: Mapped[str] = mapped_column(ForeignKey("scans.id"), index=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    findings: Mapped[str] = mapped_column(Text)
    impression: Mapped[str] = mapped_column(Text)
    recommendations: Mapped[str] = mapped_column(Text, default="")
    is_ai_corrected: Mapped[bool] = mapped_column(Boolean, default=False)
    version: Mapped[int] = mapped_column(Integer, default=1)
    supersedes_id: Mapped[int | None] = mapped_column(ForeignKey("reports.id"), default=None)
    signed_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), default=None)
    # sha256 over content, signer, time and the superseded version's hash (core.store.integrity)
    content_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    # HMAC of content_hash under the record key, which the database never holds (core.store.keys)
    record_mac: Mapped[str | None] = mapped_column(String(90), default=None)
    amend_reason: Mapped[str | None] = mapped_column(Text, default=None)


class ReportDraft(Base):
    """A draft a doctor saved explicitly. Generated drafts exist only in memory until then."""

    __tablename__ = "report_drafts"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scan_id: Mapped[str] = mapped_column(ForeignKey("scans.id"), index=True)
    author_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    findings: Mapped[str] = mapped_column(Text)
    impression: Mapped[str] = mapped_column(Text)
    recommendations: Mapped[str] = mapped_column(Text, default="")
    from_ai: Mapped[bool] = mapped_column(Boolean, default=False)
    status: Mapped[str] = mapped_column(String(16), default="open")
    report_id: Mapped[int | None] = mapped_column(ForeignKey("reports.id"), default=None)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    version: Mapped[int] = mapped_column(Integer, default=1)  # optimistic lock: a stale edit is a conflict


class Conversation(Base):
    """An Ask AI thread of one doctor on one scan."""

    __tablename__ = "conversations"
    __table_args__ = (Index("ix_conversations_scan_doctor", "scan_id", "doctor_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scan_id: Mapped[str] = mapped_column(ForeignKey("scans.id"))
    doctor_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class Message(Base):
    """One question or answer in a conversation."""

    __tablename__ = "messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    conversation_id: Mapped[int] = mapped_column(ForeignKey("conversations.id"), index=True)
    role: Mapped[str] = mapped_column(String(16))
    content: Mapped[str] = mapped_column(Text)
    cited_case_ids: Mapped[list[str]] = mapped_column(JSON, default=list)
    confidence: Mapped[str | None] = mapped_column(String(8), default=None)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    # an answer's state: "pending" while it is written (the in-flight marker), "answered", "cancelled"
    status: Mapped[str] = mapped_column(String(16), default="answered", server_default="answered")


class RateLimitHit(Base):
    """One counted request of a doctor, for limits shared by every process."""

    __tablename__ = "rate_limit_hits"
    __table_args__ = (Index("ix_rate_limit_doctor_at", "doctor_id", "bucket", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    doctor_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    bucket: Mapped[str] = mapped_column(String(32))
    at: Mapped[float] = mapped_column(Float)


class AuditLog(Base):
    """Who did what with which (opaque) scan. Never holds PHI or prompt text."""

    __tablename__ = "audit_log"
    __table_args__ = (Index("uq_audit_log_seq", "seq", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    actor_id: Mapped[int | None] = mapped_column(Integer, default=None)
    action: Mapped[str] = mapped_column(String(40))
    scan_ref: Mapped[str | None] = mapped_column(String(40), default=None)
    backend: Mapped[str | None] = mapped_column(String(40), default=None)
    prompt_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    outcome: Mapped[str] = mapped_column(String(40))
    detail: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    # hash chain (core.audit): row_hash = sha256(prev_hash + the row's canonical JSON)
    seq: Mapped[int | None] = mapped_column(Integer, default=None)
    prev_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    row_hash: Mapped[str | None] = mapped_column(String(64), default=None)
    row_mac: Mapped[str | None] = mapped_column(String(90), default=None)  # HMAC of row_hash (core.store.keys)


class AuditHead(Base):
    """The single row naming the audit chain's last sequence number and hash; writers lock it."""

    __tablename__ = "audit_head"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    seq: Mapped[int] = mapped_column(Integer, default=0)
    last_hash: Mapped[str] = mapped_column(String(64))


class LoginAttempt(Base):
    """One log-in attempt against an account or from a source, both as sha256 keys (never the name)."""

    __tablename__ = "login_attempts"
    __table_args__ = (Index("ix_login_attempts_key_at", "key_hash", "at"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    key_hash: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(8))  # pending, failed, ok, locked
    at: Mapped[float] = mapped_column(Float)


class UserSession(Base):
    """A server-side log-in session; the browser holds the token, the database only its sha256."""

    __tablename__ = "user_sessions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    created_at: Mapped[float] = mapped_column(Float)
    last_seen_at: Mapped[float] = mapped_column(Float)
    expires_at: Mapped[float] = mapped_column(Float)
    revoked_at: Mapped[float | None] = mapped_column(Float, default=None)


class ImageSeries(Base):
    """One series of images of a scan (or of a historical case): de-identified metadata only.

    UIDs here are the remapped ones; ``kind`` says where the pixels came from
    (``dicom``, ``photo``, ``demo-dicom`` or ``demo-synthetic``). Embeddings from the
    configured image encoder are kept with the encoder's id and version.
    """

    __tablename__ = "image_series"
    __table_args__ = (Index("ix_image_series_scan", "scan_id"), Index("ix_image_series_case", "case_id"))

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scan_id: Mapped[str | None] = mapped_column(ForeignKey("scans.id"), default=None)
    case_id: Mapped[str | None] = mapped_column(String(40), default=None)
    study_uid: Mapped[str | None] = mapped_column(String(64), default=None)
    series_uid: Mapped[str | None] = mapped_column(String(64), default=None, unique=True)
    modality: Mapped[str] = mapped_column(String(16), default="OT")
    kind: Mapped[str] = mapped_column(String(20), default="dicom")
    label: Mapped[str] = mapped_column(String(200), default="")
    n_images: Mapped[int] = mapped_column(Integer, default=0)
    rows: Mapped[int] = mapped_column(Integer, default=0)
    cols: Mapped[int] = mapped_column(Integer, default=0)
    window_center: Mapped[float | None] = mapped_column(Float, default=None)
    window_width: Mapped[float | None] = mapped_column(Float, default=None)
    embedding: Mapped[np.ndarray | None] = mapped_column(EmbeddingType, default=None)
    encoder_id: Mapped[str | None] = mapped_column(String(200), default=None)
    import_id: Mapped[str | None] = mapped_column(String(40), default=None)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ImageInstance(Base):
    """One stored image (a slice, a multi-frame object or a photograph) of a series.

    ``file_sha256`` names the de-identified source file in the image store,
    ``pixels_sha256`` the decoded frames (``.npy``); both are content addresses.
    """

    __tablename__ = "image_instances"
    __table_args__ = (Index("ix_image_instances_series", "series_id", "position"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    series_id: Mapped[int] = mapped_column(ForeignKey("image_series.id"))
    position: Mapped[int] = mapped_column(Integer, default=0)
    sop_uid: Mapped[str | None] = mapped_column(String(64), default=None)
    file_sha256: Mapped[str | None] = mapped_column(String(64), default=None)
    file_ext: Mapped[str] = mapped_column(String(8), default="dcm")
    pixels_sha256: Mapped[str] = mapped_column(String(64))
    frames: Mapped[int] = mapped_column(Integer, default=1)
    rows: Mapped[int] = mapped_column(Integer, default=0)
    cols: Mapped[int] = mapped_column(Integer, default=0)
    samples: Mapped[int] = mapped_column(Integer, default=1)
    slice_location: Mapped[float | None] = mapped_column(Float, default=None)


class ImageIdentityMap(Base):
    """PROTECTED: links an original patient identity to its pseudonym. Read by the importer only.

    The original identity is kept only as a keyed hash (HMAC-SHA256, key outside
    the database), never in clear; ``uid_seed`` keys the consistent UID remapping
    and the per-patient date offset and is stored encrypted under the record key
    (:meth:`core.store.keys.Keyring.seal_seed`), so the database alone cannot undo the shift. Never copy a row into a log, bundle or prompt.
    """

    __tablename__ = "image_identity_map"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    identity_hmac: Mapped[str] = mapped_column(String(64), unique=True)
    patient_user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    pseudonym: Mapped[str] = mapped_column(String(40))
    uid_seed: Mapped[str] = mapped_column(String(160))  # sealed under the record key (Keyring.seal_seed)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class PacsStudyLink(Base):
    """PROTECTED: links a study in the hospital PACS to the scan it was imported as. Read by core.pacs only.

    The PACS's original Study Instance UID is kept sealed (AES-GCM under a key kept
    beside the image store, never in the database: ``core.pacs.sealed``) for the
    report export, which must name the original study; ``study_hmac`` (a keyed hash
    of the UID) lets ``pacs sync`` recognise a study imported before
    without opening anything. Never copy a row into a log, bundle or prompt.
    """

    __tablename__ = "pacs_study_links"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    scan_id: Mapped[str] = mapped_column(ForeignKey("scans.id"), unique=True)
    study_hmac: Mapped[str] = mapped_column(String(64), unique=True)
    study_sealed: Mapped[bytes] = mapped_column(LargeBinary)
    endpoint: Mapped[str] = mapped_column(String(120))
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ReportExport(Base):
    """One signed report version's export to one target (``sr``: DICOM SR by STOW-RS; ``fhir``): the re-send queue.

    ``status`` is ``queued`` until it is ``sent``; a failed attempt keeps it
    queued and records the error class (never the endpoint's answer text).
    """

    __tablename__ = "report_exports"
    __table_args__ = (Index("uq_report_exports_target", "report_id", "target", unique=True),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    report_id: Mapped[int] = mapped_column(ForeignKey("reports.id"))
    target: Mapped[str] = mapped_column(String(8))
    status: Mapped[str] = mapped_column(String(12), default="queued")
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    last_error: Mapped[str | None] = mapped_column(String(80), default=None)
    requested_by: Mapped[int | None] = mapped_column(ForeignKey("users.id"), default=None)
    created_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    sent_at: Mapped[dt.datetime | None] = mapped_column(DateTime(timezone=True), default=None)
