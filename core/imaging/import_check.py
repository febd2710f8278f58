"""Pass 1 of an image import (:mod:`core.imaging.importer`): check the files and find their patients.

Nothing here writes: :func:`check_files` parses every file, applies the limits and
refuses burned-in annotation unless confirmed; :func:`resolve_patients` maps each
keyed-hash identity to the Casebook patient it was imported for before, the one
named with ``--patient``, or a new pseudonym. Either raises on the first problem.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select

from core.errors import ImageRejectedError, NotFoundError
from core.imaging.anatomy import anatomy_for
from core.imaging.deid import burned_in, identity_hmac
from core.imaging.dicomio import read_dicom
from core.imaging.photos import is_photo, read_photo
from core.imaging.sources import Source
from core.settings import Settings
from core.store.db import Database
from core.store.models import ImageIdentityMap, User, utcnow

__all__ = ["CheckedFile", "ImportPatient", "Progress", "check_files", "resolve_patients", "study_time"]

Progress = Callable[[float, str], None]


@dataclass
class CheckedFile:
    """One file after the check pass: its keyed-hash patient identity, study, series and order in it."""

    source: Source
    identity: str
    study: str
    series: str
    order: tuple[float, float, str]
    anatomy: str | None
    photo: bool = False


@dataclass
class ImportPatient:
    """The Casebook patient a set of files goes to: existing (``new`` False) or to be created at commit."""

    uid_seed: str
    user_id: int | None = None
    pseudonym: str = ""
    hmac: str | None = None
    new: bool = True


def _num(value: Any, default: float) -> float:
    try:
        return float(value[2] if isinstance(value, list) or type(value).__name__ == "MultiValue" else value)
    except (TypeError, ValueError, IndexError):
        return default


def check_files(
    sources: list[Source], settings: Settings, key: bytes, confirm_burned_in: bool, say: Progress
) -> list[CheckedFile]:
    """Parse each file and check its limits and burned-in flag; refuse on the first problem, writing nothing."""
    checked = []
    for i, src in enumerate(sources):
        say(0.3 * i / len(sources), f"Checking file {i + 1} of {len(sources)}")
        data = src.read()
        if is_photo(data):
            read_photo(data, src.name, settings.imaging)
            checked.append(CheckedFile(src, "photo", "photo", "photo", (i, 0.0, src.name), None, photo=True))
            continue
        ds = read_dicom(data, src.name, settings.imaging)
        if burned_in(ds) and not confirm_burned_in:
            raise ImageRejectedError(
                f"{src.name}: the file declares burned-in annotation (text, possibly a name, drawn into the pixels)",
                hint="Look at the images first; import again with the burned-in confirmation if no identifying "
                "text is visible. Nothing was imported.",
            )
        study = str(ds.get("StudyInstanceUID") or f"study-of-{src.name}")
        ident = identity_hmac(ds, key) or f"anonymous:{study}"
        order = (_num(ds.get("InstanceNumber"), 1e9), _num(ds.get("ImagePositionPatient"), 0.0), src.name)
        series = str(ds.get("SeriesInstanceUID") or study)
        checked.append(CheckedFile(src, ident, study, series, order, anatomy_for(ds)))
    return checked


def resolve_patients(db: Database, checked: list[CheckedFile], patient: str | None) -> dict[str, ImportPatient]:
    """Each identity's patient: the one it was imported for before, ``patient`` if given, or a new pseudonym."""
    identities = sorted({c.identity for c in checked})
    fixed_user: int | None = None
    with db.read_only() as s:
        if patient is not None:
            user = s.scalars(select(User).where(User.username == patient.strip().lower())).first()
            if user is None or user.role != "patient":
                raise NotFoundError(f"No patient with username {patient!r}", hint="Give an existing patient username.")
            fixed_user = user.id
        dicom_ids = [i for i in identities if i != "photo"]
        if patient is not None and len(dicom_ids) > 1:
            raise ImageRejectedError(
                f"The files belong to {len(dicom_ids)} different patients but one --patient was given",
                hint="Import each patient's files separately; nothing was imported.",
            )
        if patient is None and "photo" in identities:
            raise ImageRejectedError("Photographs carry no patient identity: give --patient and --anatomy")
        out: dict[str, ImportPatient] = {}
        for ident in identities:
            row = None
            if not ident.startswith(("anonymous:", "photo")):
                row = s.scalars(select(ImageIdentityMap).where(ImageIdentityMap.identity_hmac == ident)).first()
            if row is not None:
                if fixed_user is not None and row.patient_user_id != fixed_user:
                    raise ImageRejectedError(
                        "These studies belong to a patient already imported as another Casebook patient",
                        hint="Import without --patient, or with the patient they were imported for.",
                    )
                out[ident] = ImportPatient(db.keyring.open_seed(row.uid_seed), row.patient_user_id, row.pseudonym, ident, new=False)
            else:
                hmac = None if ident.startswith(("anonymous:", "photo")) else ident
                out[ident] = ImportPatient(secrets.token_hex(16), fixed_user, secrets.token_hex(3).upper(), hmac)
    return out


def study_time(ds: Any) -> dt.datetime:
    """The header's study date and time (UTC), or now when they are missing or malformed."""
    date, time = str(ds.get("StudyDate") or ""), str(ds.get("StudyTime") or "000000")
    try:
        return dt.datetime.strptime(date + time[:6].ljust(6, "0"), "%Y%m%d%H%M%S").replace(tzinfo=dt.UTC)
    except ValueError:
        return utcnow()
