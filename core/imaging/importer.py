"""``python -m core import-dicom``: files, folders or zips in, de-identified series out, all or nothing.

Three passes over the files:

1. **check** (:mod:`core.imaging.import_check`): parse each file, check its pixel
   module and the limits, refuse burned-in annotation unless confirmed, note the
   (keyed-hash) patient identity and the original study/series it belongs to, and
   find each identity's patient. Nothing is written yet.
2. **decode and de-identify**: decode the pixels, de-identify the header
   (:mod:`core.imaging.deid`, one consistent pseudonym, UID map and date offset
   per patient), stage the de-identified file and its decoded frames.
3. **commit**: one database transaction adds patients (if new), the identity
   map, one scan per study, its series and instances, and an audit row; the
   staged files are published inside it and removed again if it fails.

Any error in any pass raises :class:`ImageRejectedError` (or the error that
stopped it) and leaves the database and the image store as they were; a
rejected import still writes an audit row saying so (without file names).
"""

from __future__ import annotations

import io
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from core import audit
from core.contracts import AWAITING_READING
from core.errors import CasebookError, ImageRejectedError, disk_full_as_error
from core.imaging.burnedin import scrub_burned_in
from core.imaging.deid import Deidentifier, identity_key
from core.imaging.dicomio import decode_pixels, read_dicom
from core.imaging.encoders import ImageEncoder, embed_series, make_image_encoder
from core.imaging.import_check import CheckedFile, ImportPatient, Progress, check_files, resolve_patients, study_time
from core.imaging.photos import read_photo
from core.imaging.sources import Source, check_limits, collect_sources
from core.imaging.store import ImageStore, StagedImport
from core.settings import Settings
from core.store.db import Database
from core.store.models import ImageIdentityMap, ImageInstance, ImageSeries, Scan, User, utcnow

__all__ = ["ImportSummary", "ImportedScan", "LinkHook", "import_images"]

log = logging.getLogger(__name__)
IMAGE_IMPORT = "image.import"  # audit event
# Called inside the commit transaction with (scan id, original Study Instance UID) per new scan: an
# importer of another source (core.pacs) records its protected link in the same all-or-nothing write.
LinkHook = Callable[[Session, list[tuple[str, str]]], None]


@dataclass(frozen=True)
class ImportedScan:
    """One study that became a scan."""

    scan_id: str
    anatomy: str
    series: int
    images: int


@dataclass(frozen=True)
class ImportSummary:
    """What an import did (no identifying value anywhere)."""

    import_id: str
    files: int
    scans: list[ImportedScan]
    embedding_note: str


@dataclass
class _SeriesOut:
    row: ImageSeries
    instances: list[ImageInstance] = field(default_factory=list)
    middle: Any = None


def import_images(
    settings: Settings,
    db: Database,
    paths: list[Path],
    *,
    patient: str | None = None,
    anatomy: str | None = None,
    confirm_burned_in: bool = False,
    actor_id: int | None = None,
    progress: Progress | None = None,
    encoder: ImageEncoder | str | None = "settings",
    sources: list[Source] | None = None,
    link: LinkHook | None = None,
) -> ImportSummary:
    """Import DICOM files (and PNG/JPEG photographs) under ``paths``, or ``sources`` read in memory; all or nothing."""
    say = progress or (lambda _f, _m: None)
    try:
        if sources is None:
            sources = collect_sources(paths, settings.imaging)
        else:
            check_limits(sources, settings.imaging)
        summary = _import(settings, db, sources, patient, anatomy, confirm_burned_in, actor_id, say, encoder, link)
    except CasebookError as exc:
        _audit_rejected(db, actor_id, type(exc).__name__)
        raise
    say(1.0, f"Imported {sum(s.images for s in summary.scans)} images in {len(summary.scans)} scan(s)")
    return summary


def _import(
    settings: Settings,
    db: Database,
    sources: list[Source],
    patient: str | None,
    anatomy: str | None,
    confirm_burned_in: bool,
    actor_id: int | None,
    say: Progress,
    encoder: ImageEncoder | str | None,
    link: LinkHook | None = None,
) -> ImportSummary:
    store = ImageStore.from_settings(settings)
    key = identity_key(store.root)
    checked = check_files(sources, settings, key, confirm_burned_in, say)
    studies: dict[tuple[str, str], list[CheckedFile]] = {}
    for c in checked:
        studies.setdefault((c.identity, c.study), []).append(c)
    missing = [k for k, files in studies.items() if not (anatomy or files[0].anatomy)]
    if missing:
        raise ImageRejectedError(
            f"{len(missing)} study(ies) do not say their anatomy (no Body Part Examined that maps to one)",
            hint="Give --anatomy (lung, brain, spine, eye, breast, abdomen, skin or pathology); nothing was imported.",
        )
    people = resolve_patients(db, checked, patient)
    enc = make_image_encoder(settings) if encoder == "settings" else encoder
    assert not isinstance(enc, str)
    full_hint = "Free space in the image store (or the database's disk) and import again; nothing was imported."
    with disk_full_as_error(store.root, "The image import ran out of room", full_hint):  # after the clean-up below
        staged = store.stage()
        try:
            scans = _decode_and_stage(settings, studies, people, anatomy, staged, say, len(checked))
            note = embed_series(enc, settings, scans)
            say(0.92, "Writing the scans")
            result = _commit(
                db, scans, people, staged, actor_id, len(checked), [study for _i, study in studies], link
            )
        except BaseException:
            staged.unpublish()
            staged.discard()
            raise
    log.info("Image import %s: %d files, %d scans", staged.import_id, len(checked), len(result))
    return ImportSummary(staged.import_id, len(checked), result, note)


def _decode_and_stage(
    settings: Settings,
    studies: dict[tuple[str, str], list[CheckedFile]],
    people: dict[str, ImportPatient],
    anatomy: str | None,
    staged: StagedImport,
    say: Progress,
    total: int,
) -> list[tuple[Scan, list[_SeriesOut], ImportPatient]]:
    deids = {
        i: Deidentifier(p.uid_seed, retain_dates=settings.imaging.retain_longitudinal_dates,
                        birth_date=settings.imaging.birth_date)
        for i, p in people.items()
    }
    done = 0
    out = []
    for (ident, _study), files in studies.items():
        series: dict[str, _SeriesOut] = {}
        created = utcnow()
        for c in sorted(files, key=lambda c: (c.series, c.order)):
            done += 1
            say(0.3 + 0.6 * done / total, f"Decoding and de-identifying file {done} of {total}")
            data = c.source.read()
            if c.photo:
                frames, clean = read_photo(data, c.source.name, settings.imaging)
                file_sha, ext, window, modality, sop, series_uid, study_uid = (
                    staged.add_bytes(clean, "png"),
                    "png",
                    None,
                    "XC",
                    None,
                    None,
                    None,
                )
            else:
                ds = read_dicom(data, c.source.name, settings.imaging)
                decoded = decode_pixels(ds, c.source.name)
                shown, _ = scrub_burned_in(ds, decoded.frames, c.source.name, settings.imaging.burned_in_ocr,
                                           settings.imaging.ocr_frames)  # fmt: skip
                deids[ident].apply(ds, c.source.name)
                buf = io.BytesIO()
                ds.save_as(buf, enforce_file_format=True)
                frames, window, ext = shown, decoded.window, "dcm"
                file_sha = staged.add_bytes(buf.getvalue(), "dcm")
                modality, sop = str(ds.get("Modality") or "OT"), str(ds.get("SOPInstanceUID") or "")
                series_uid, study_uid = str(ds.get("SeriesInstanceUID") or ""), str(ds.get("StudyInstanceUID") or "")
                created = study_time(ds)
            s_out = series.get(c.series)
            if s_out is None:
                kind = "photo" if c.photo else "dicom"
                label = "Photographs" if c.photo else f"{modality} series {len(series) + 1}"
                row = ImageSeries(
                    study_uid=study_uid,
                    series_uid=series_uid or None,
                    modality=modality,
                    kind=kind,
                    label=label,
                    rows=int(frames.shape[1]),
                    cols=int(frames.shape[2]),
                    window_center=window[0] if window else None,
                    window_width=window[1] if window else None,
                    import_id=staged.import_id,
                )
                s_out = series[c.series] = _SeriesOut(row)
            pix = staged.add_frames(frames)
            s_out.instances.append(
                ImageInstance(
                    position=len(s_out.instances),
                    sop_uid=sop or None,
                    file_sha256=file_sha,
                    file_ext=ext,
                    pixels_sha256=pix,
                    frames=int(frames.shape[0]),
                    rows=int(frames.shape[1]),
                    cols=int(frames.shape[2]),
                    samples=3 if frames.ndim == 4 else 1,
                )
            )
            if s_out.middle is None or len(s_out.instances) == (len(files) + 1) // 2:
                s_out.middle = frames[frames.shape[0] // 2]
        scan = Scan(
            id="scan_" + secrets.token_hex(6),
            anatomy=anatomy or files[0].anatomy,
            region=None,
            ai_diagnosis=AWAITING_READING,
            ai_confidence=0.0,
            created_at=created,
        )
        out.append((scan, list(series.values()), people[ident]))
    return out


def _commit(
    db: Database,
    scans: list[tuple[Scan, list[_SeriesOut], ImportPatient]],
    people: dict[str, ImportPatient],
    staged: StagedImport,
    actor_id: int | None,
    n_files: int,
    originals: list[str] | None = None,
    link: LinkHook | None = None,
) -> list[ImportedScan]:
    result = []
    with db.session() as s:
        uids = [o.row.series_uid for _, ss, _ in scans for o in ss if o.row.series_uid]
        if uids and s.scalars(select(ImageSeries.id).where(ImageSeries.series_uid.in_(uids))).first() is not None:
            raise ImageRejectedError(
                "These series were imported before (their de-identified UIDs already exist)",
                hint="Open the existing scan instead; nothing was imported.",
            )
        for p in people.values():
            if p.user_id is None:
                user = User(
                    username=f"imported-{p.pseudonym.lower()}",
                    display_name=f"Imported patient {p.pseudonym}",
                    role="patient",
                    password_hash=None,
                )
                s.add(user)
                s.flush()
                p.user_id = user.id
            if p.new and p.hmac:
                s.add(
                    ImageIdentityMap(
                        identity_hmac=p.hmac,
                        patient_user_id=p.user_id,
                        pseudonym=p.pseudonym,
                        uid_seed=db.keyring.seal_seed(p.uid_seed),  # never in clear (core.store.keys)
                    )
                )
                p.new = False
        for scan, series, person in scans:
            assert person.user_id is not None
            scan.patient_id = person.user_id
            s.add(scan)
            s.flush()
            for o in series:
                o.row.scan_id = scan.id
                o.row.n_images = len(o.instances)
                s.add(o.row)
                s.flush()
                for inst in o.instances:
                    inst.series_id = o.row.id
                s.add_all(o.instances)
            result.append(ImportedScan(scan.id, scan.anatomy, len(series), sum(len(o.instances) for o in series)))
        if link is not None and originals is not None:
            link(s, [(r.scan_id, study) for r, study in zip(result, originals, strict=True)])
        audit.record_in(
            s,
            IMAGE_IMPORT,
            actor_id,
            result[0].scan_id if result else None,
            import_id=staged.import_id,
            files=n_files,
            scans=[r.scan_id for r in result],
            profile="ps3.15-e-basic",
        )
        s.flush()
        staged.publish()
    return result


def _audit_rejected(db: Database, actor_id: int | None, error: str) -> None:
    try:
        audit.record(db, IMAGE_IMPORT, actor_id, None, outcome="rejected", error=error)
    except SQLAlchemyError as exc:  # the refusal itself must reach the user even if the audit write fails
        # one line, no traceback: on a full disk this is expected, and the typed error follows
        log.error("Could not write the audit row of a rejected image import: %s", getattr(exc, "orig", None) or exc)
