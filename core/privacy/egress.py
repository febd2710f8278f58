"""Egress as an allow-list: what may leave the process for an external language model.

Two layers, both here:

* :func:`outbound_evidence` builds the evidence a prompt carries from an
  explicit list of bundle fields (anatomy, region, diagnosis, confidence, age,
  sex, similarity, case ids) and passes every free-text field (past conditions,
  outcomes, prior report findings and impression) through the
  :class:`~core.privacy.deid.Deidentifier`. A field added to the bundle later
  leaves only once it is added here.
* :class:`Egress` is the one choke point of the remote backends
  (:class:`core.llm.remote.OpenAIWireLLM`, which Groq and the OpenAI-compatible
  backend share): every message, the question included, is normalised and
  de-identified again, with the user table's names, just before it is sent.

The in-process backends (llama.cpp, transformers) send nothing anywhere and do
not pass the choke point (docs/LLM_BACKENDS.md).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, select
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.pool import NullPool

from core.config.privacy import PrivacySettings
from core.contracts import BundleResult
from core.errors import ConfigError
from core.privacy.deid import Deidentifier

if TYPE_CHECKING:  # core.llm imports this module (its factory wraps backends in Egress)
    from core.llm.base import Message
    from core.settings import Settings

__all__ = ["ALLOWED_ROLES", "Egress", "NamesFromDatabase", "outbound_evidence"]

log = logging.getLogger(__name__)
ALLOWED_ROLES = frozenset({"system", "user", "assistant"})


class NamesFromDatabase:
    """The user table's display names and usernames, re-read at most every ``refresh_s`` seconds.

    A SQLite file that does not exist yet gives no names (nothing to protect);
    a database that cannot be read keeps the last names read and logs a warning.
    """

    def __init__(self, url: str, refresh_s: float) -> None:
        self.url = url
        self.refresh_s = refresh_s
        self._names: list[str] = []
        self._read_at = -float("inf")
        self._lock = threading.Lock()

    def _exists(self) -> bool:
        url = make_url(self.url)
        if url.get_backend_name() != "sqlite":
            return True
        db = url.database
        return bool(db) and db != ":memory:" and Path(str(db)).exists()

    def __call__(self) -> list[str]:
        """The names, from the cache while it is fresh."""
        from core.store.models import User

        with self._lock:
            if time.monotonic() - self._read_at < self.refresh_s:
                return self._names
            if not self._exists():
                return self._names
            engine = create_engine(self.url, poolclass=NullPool)
            try:
                with engine.connect() as conn:
                    rows = conn.execute(select(User.display_name, User.username)).all()
                self._names = [str(v) for row in rows for v in row if v]
                self._read_at = time.monotonic()
            except SQLAlchemyError as exc:
                log.warning("Egress could not read the user names (%s); patterns still apply", type(exc).__name__)
            finally:
                engine.dispose()
            return self._names


class Egress:
    """The choke point: messages normalised and de-identified before an external backend sees them."""

    def __init__(self, deid: Deidentifier | None = None) -> None:
        self.deid = deid or Deidentifier()

    @classmethod
    def from_settings(cls, settings: Settings) -> Egress:
        """Names from the configured database, refreshed every ``privacy.names_refresh_s``."""
        return cls(Deidentifier(NamesFromDatabase(settings.database_url, settings.privacy.names_refresh_s)))

    def warm(self) -> None:
        """Build the de-identifier's one-off tables now (the Faker name dictionary, word frequencies, the user names).

        The first scrub takes about 0.5 s on an idle machine and seconds under load; a backend warms
        at construction so that cost is not charged to the first call's time budget.
        """
        self.deid.scrub("Warm-up: Dr Anna Smith saw the patient.")

    def text(self, text: str) -> str:
        """One de-identified string (a raw prompt)."""
        return self.deid.scrub(text)

    def messages(self, messages: Sequence[Message]) -> list[Message]:
        """De-identified copies of ``messages``; a role outside :data:`ALLOWED_ROLES` is refused."""
        out: list[Message] = []
        for m in messages:
            if m["role"] not in ALLOWED_ROLES:
                raise ConfigError(f"Refusing to send a message with role {m['role']!r} to an external backend")
            out.append({"role": m["role"], "content": self.deid.scrub(str(m["content"]))})
        return out


def _age(age: int | None, ceiling: int) -> int | str | None:
    return f"{ceiling}+" if age is not None and age > ceiling else age


_MAX_AGE: int = PrivacySettings.model_fields["max_age_sent"].default  # one default, in the settings group


def outbound_evidence(
    result: BundleResult, *, deid: Deidentifier | None = None, max_age: int = _MAX_AGE, names: Iterable[str] = ()
) -> dict[str, Any]:
    """The bundle as a prompt may carry it: allow-listed fields, free text de-identified.

    ``similarCases[i].caseId`` is set from ``result.case_ids`` (historical case
    ids identify no patient, and answers must cite them).
    """
    bundle = result.bundle
    assert bundle is not None, "outbound_evidence needs a bundle"
    d = deid or Deidentifier(list(names))
    scan, ctx = bundle.currentScan, bundle.patientContext
    return {
        "currentScan": {
            "anatomy": scan.anatomy,
            "region": scan.region,
            "diagnosis": scan.diagnosis,
            "confidence": scan.confidence,
        },
        "patientContext": {
            "age": _age(ctx.age, max_age),
            "sex": ctx.sex,
            "pastConditions": [d.scrub(c) for c in ctx.pastConditions],
        },
        "similarCases": [
            {
                "caseId": cid,
                "diagnosis": c.diagnosis,
                "outcome": d.scrub(c.outcome) if c.outcome else None,
                "similarity": c.similarity,
            }
            for cid, c in zip(result.case_ids, bundle.similarCases, strict=False)
        ],
        "priorReports": [
            {"findings": d.scrub(r.findings), "impression": d.scrub(r.impression)} for r in bundle.priorReports
        ],
    }
