"""Studies from the PACS into Casebook: through the file importer's de-identifying, all-or-nothing path.

:func:`import_studies` retrieves each chosen study with WADO-RS into memory (the
original files never touch the disk), hands them to
:func:`core.imaging.importer.import_images` as in-memory sources, and records the
protected :class:`~core.store.models.PacsStudyLink` (the original Study Instance
UID, sealed, and its keyed hash) inside the importer's own commit transaction:
a study is imported, linked and audited together, or not at all. The patient is
linked through the importer's protected identity map (a keyed hash of the original
identity), so a second study of the same person joins the same Casebook patient.

Each study is its own import: one refused study (burned-in text, an unknown
anatomy, a damaged file) is reported and the others go on. A study already linked
is skipped, so :func:`sync` (every study matching a query) is incremental and safe
to run again. Only doctors import (:func:`require_doctor`).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from core import audit
from core.errors import AccessDeniedError, CasebookError, ImageRejectedError, NotFoundError, PacsError
from core.imaging.importer import import_images
from core.imaging.sources import Source
from core.imaging.store import ImageStore
from core.pacs.client import Pacs, StudyQuery
from core.pacs.sealed import Sealer
from core.settings import Settings
from core.store.db import Database
from core.store.models import PacsStudyLink, User

__all__ = [
    "PACS_IMPORT",
    "StudyOutcome",
    "doctor_id",
    "import_studies",
    "link_hook",
    "linked",
    "require_doctor",
    "sealer_for",
    "sync",
]

log = logging.getLogger(__name__)
PACS_IMPORT = "pacs.import"  # audit event, one per study tried
STUDY_LABEL = "pacs-study"  # associated data of a sealed study UID
SYNC_LIMIT = 100_000  # sync pages through every matching study (narrow it with the query's dates)
Progress = Callable[[float, str], None]


@dataclass(frozen=True)
class StudyOutcome:
    """What happened to one chosen study; ``position`` is its place in the request (no identifier here)."""

    position: int
    status: str  # imported | skipped | refused
    scan_id: str | None = None
    images: int = 0
    error: str | None = None
    hint: str | None = None


def require_doctor(db: Database, actor_id: int | None) -> None:
    """Raise :class:`AccessDeniedError` unless ``actor_id`` is a doctor: only doctors import and export."""
    with db.read_only() as s:
        user = s.get(User, actor_id) if actor_id is not None else None
        if user is None or user.role != "doctor":
            raise AccessDeniedError(
                "Only doctors import from and export to the PACS", hint="Sign in as a doctor (CLI: --doctor USERNAME)."
            )


def doctor_id(db: Database, username: str) -> int:
    """The id of doctor ``username`` (the CLI's ``--doctor``)."""
    with db.read_only() as s:
        user = s.scalars(select(User).where(User.username == username.strip().lower())).first()
    if user is None:
        raise NotFoundError(f"No user {username!r}", hint="Give the username of a doctor with --doctor.")
    require_doctor(db, user.id)
    return user.id


def sealer_for(settings: Settings) -> Sealer:
    """The sealer whose key lives beside the image store."""
    return Sealer(ImageStore.from_settings(settings).root)


def _study_hash(sealer: Sealer, endpoint: str, study_uid: str) -> str:
    # a Study Instance UID is globally unique: the same study seen through a gateway or over DIMSE is the same
    del endpoint
    return sealer.keyed("study", study_uid)


def linked(settings: Settings, db: Database, client: Pacs, study_uids: list[str]) -> dict[str, str]:
    """The studies among ``study_uids`` imported before: original UID -> local scan id."""
    sealer = sealer_for(settings)
    hashes = {_study_hash(sealer, client.where, u): u for u in study_uids}
    with db.read_only() as s:
        rows = s.execute(
            select(PacsStudyLink.study_hmac, PacsStudyLink.scan_id).where(PacsStudyLink.study_hmac.in_(list(hashes)))
        ).all()
    return {hashes[h]: scan for h, scan in rows}


def _sources(datasets: list[Any]) -> list[Source]:
    """The study's image instances as in-memory sources; reports, presentation states and other objects are left."""
    out: list[Source] = []
    for ds in datasets:
        if "PixelData" not in ds:  # an SR (ours, sent back earlier), a KO or a PR: nothing to review
            continue
        buf = io.BytesIO()
        ds.save_as(buf, enforce_file_format=True)
        data = buf.getvalue()
        out.append(Source(f"PACS instance {len(out) + 1}", len(data), partial(bytes, data)))
    if not out:
        raise ImageRejectedError(
            f"The study holds no images ({len(datasets)} other object(s): reports, key objects, presentation states)",
            hint="Nothing was imported; choose a study with images.",
        )
    return out


def link_hook(sealer: Sealer, endpoint: str) -> Callable[[Session, list[tuple[str, str]]], None]:
    """The importer's link hook: one protected :class:`PacsStudyLink` per new scan, in the import's transaction."""

    def link(s: Session, scans: list[tuple[str, str]]) -> None:
        for scan_id, study_uid in scans:
            s.add(
                PacsStudyLink(
                    scan_id=scan_id,
                    study_hmac=_study_hash(sealer, endpoint, study_uid),
                    study_sealed=sealer.seal(study_uid, STUDY_LABEL),
                    endpoint=endpoint,
                )
            )

    return link


def import_studies(
    settings: Settings,
    db: Database,
    client: Pacs,
    study_uids: list[str],
    *,
    actor_id: int | None,
    anatomy: str | None = None,
    confirm_burned_in: bool = False,
    progress: Progress | None = None,
) -> list[StudyOutcome]:
    """Import each study of ``study_uids`` from the PACS, de-identified; skip those imported before."""
    require_doctor(db, actor_id)
    say = progress or (lambda _f, _m: None)
    sealer = sealer_for(settings)
    before = linked(settings, db, client, study_uids)
    out: list[StudyOutcome] = []
    n = max(1, len(study_uids))
    for i, uid in enumerate(study_uids):
        lo, span = i / n, 1 / n

        def step(f: float, m: str, lo: float = lo, span: float = span, i: int = i) -> None:
            say(lo + span * (0.2 + 0.8 * f), f"Study {i + 1} of {n}: {m}")

        if uid in before:
            out.append(StudyOutcome(i + 1, "skipped", before[uid]))
            say(lo + span, f"Study {i + 1} of {n}: imported before")
            continue
        say(lo, f"Study {i + 1} of {n}: retrieving from the PACS")
        try:
            datasets = client.retrieve_study(uid)
            summary = import_images(
                settings,
                db,
                [],
                sources=_sources(datasets),
                anatomy=anatomy,
                confirm_burned_in=confirm_burned_in,
                actor_id=actor_id,
                progress=step,
                link=link_hook(sealer, client.where),
            )
        except PacsError as exc:  # the PACS itself failed: the other studies would fail the same way
            audit.record(db, PACS_IMPORT, actor_id, None, outcome="failed", error=type(exc).__name__)
            raise
        except CasebookError as exc:
            audit.record(db, PACS_IMPORT, actor_id, None, outcome="refused", error=type(exc).__name__)
            out.append(StudyOutcome(i + 1, "refused", error=str(exc), hint=exc.hint))
            continue
        finally:
            datasets = []  # the original headers leave memory with this study
        scan = summary.scans[0]
        audit.record(db, PACS_IMPORT, actor_id, scan.scan_id, import_id=summary.import_id, images=scan.images)
        out.append(StudyOutcome(i + 1, "imported", scan.scan_id, scan.images))
    say(1.0, f"{sum(o.status == 'imported' for o in out)} imported, {sum(o.status == 'skipped' for o in out)} "
        f"imported before, {sum(o.status == 'refused' for o in out)} refused")  # fmt: skip
    return out


def sync(
    settings: Settings,
    db: Database,
    client: Pacs,
    query: StudyQuery,
    *,
    actor_id: int | None,
    anatomy: str | None = None,
    progress: Progress | None = None,
) -> list[StudyOutcome]:
    """Import every study matching ``query`` that is not imported yet; running it again imports nothing twice."""
    require_doctor(db, actor_id)
    hits = client.search_studies(query, limit=SYNC_LIMIT)  # every match, not the page's first search_limit
    return import_studies(
        settings, db, client, [h.study_uid for h in hits], actor_id=actor_id, anatomy=anatomy, progress=progress
    )
