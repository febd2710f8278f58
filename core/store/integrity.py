"""Hashes that make signed reports and the audit log tamper-evident.

A signed report version stores ``content_hash``: sha256 over its scan, signer,
content, version, signing time, amendment reason and the hash of the version it
supersedes, so each amendment chain is a hash chain. An audit row stores
``row_hash``: sha256 over the previous row's hash and its own fields. The
canonical form is JSON with sorted keys and UTC times to the microsecond, so
SQLite and PostgreSQL give the same hash for the same row.

These functions are pure (no database): the migration, the write paths and the
verify commands share them, and the format must never change for stored rows.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from collections.abc import Mapping
from typing import Any

__all__ = ["GENESIS", "audit_row_hash", "canonical_time", "report_hash"]

GENESIS = "0" * 64  # the "previous hash" of the first audit row and of a version 1 report


def canonical_time(value: dt.datetime | None) -> str | None:
    """``value`` in UTC as ``YYYY-MM-DDTHH:MM:SS.ffffff``; a naive time (SQLite returns them) is UTC."""
    if value is None:
        return None
    if value.tzinfo is not None:
        value = value.astimezone(dt.UTC).replace(tzinfo=None)
    return value.strftime("%Y-%m-%dT%H:%M:%S.%f")


def _digest(payload: Mapping[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def report_hash(
    *,
    scan_id: str,
    author_id: int,
    findings: str,
    impression: str,
    recommendations: str,
    is_ai_corrected: bool,
    version: int,
    supersedes_id: int | None,
    signed_at: dt.datetime | None,
    amend_reason: str | None,
    prev_hash: str | None,
) -> str:
    """sha256 of one signed report version, chained to the hash of the version it supersedes."""
    return _digest(
        {
            "scan_id": scan_id,
            "author_id": int(author_id),
            "findings": findings,
            "impression": impression,
            "recommendations": recommendations or "",
            "is_ai_corrected": bool(is_ai_corrected),
            "version": int(version),
            "supersedes_id": supersedes_id,
            "signed_at": canonical_time(signed_at),
            "amend_reason": amend_reason,
            "prev_hash": prev_hash or GENESIS,
        }
    )


def audit_row_hash(
    *,
    prev_hash: str,
    seq: int,
    at: dt.datetime,
    actor_id: int | None,
    action: str,
    scan_ref: str | None,
    backend: str | None,
    prompt_hash: str | None,
    outcome: str,
    detail: Mapping[str, Any] | None,
) -> str:
    """sha256 of one audit row chained to ``prev_hash`` (the previous row's ``row_hash``)."""
    return _digest(
        {
            "prev_hash": prev_hash,
            "seq": int(seq),
            "at": canonical_time(at),
            "actor_id": actor_id,
            "action": action,
            "scan_ref": scan_ref,
            "backend": backend,
            "prompt_hash": prompt_hash,
            "outcome": outcome,
            "detail": dict(detail or {}),
        }
    )
