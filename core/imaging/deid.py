"""De-identification on the way in: DICOM PS3.15 Annex E Basic Profile through ``dicognito``.

Per file, in this order:

1. ``dicognito`` (seeded with the patient's secret ``uid_seed``) replaces names,
   ids, accession numbers, institution, addresses and equipment identifiers,
   remaps every UID consistently (same seed and UID give the same new UID, so a
   series imported twice is recognised) and shifts every date and time by one
   offset per patient (the seed fixes it): the *Retain Longitudinal Temporal
   Information with Modified Dates* option. With that option off
   (``imaging.retain_longitudinal_dates``) every date and time is removed instead.
2. Private tags are dropped (``Dataset.remove_private_tags``).
3. The whole Basic Profile table (Table E.1-1, from a maintained source) is applied
   over what dicognito left: :mod:`core.imaging.annex_e` (X removed, Z emptied, D
   replaced, curves and overlays removed whole, the birth date removed or kept as its
   year by ``imaging.birth_date``); then :data:`EXTRA_REMOVED`, the hand list this
   module had before, as a floor.
4. The de-identification is recorded in the file (Patient Identity Removed,
   De-identification Method and its code sequence, PS3.16 CID 7050).
5. Fail closed: every original identifying value collected in step 0 is
   searched for in every remaining text element; a hit refuses the import.

Patients are linked across imports by an HMAC-SHA256 of their original
identity (issuer, id, name, birth date) under a key kept outside the database
(:func:`identity_key`); the original values are never stored.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from pathlib import Path
from typing import Any, Literal

from core.errors import ImageRejectedError

__all__ = [
    "EXTRA_REMOVED",
    "IDENTIFYING",
    "Deidentifier",
    "burned_in",
    "identifying_values",
    "identity_hmac",
    "identity_key",
]

# Annex E Table E.1-1 attributes with action X that dicognito 0.19 leaves in place.
EXTRA_REMOVED = (
    "StudyDescription",
    "SeriesDescription",
    "ImageComments",
    "PatientComments",
    "AdditionalPatientHistory",
    "RequestedProcedureDescription",
    "PerformedProcedureStepDescription",
    "ProtocolName",
    "AdmittingDiagnosesDescription",
    "DerivationDescription",
    "ReasonForStudy",
    "RequestAttributesSequence",
    "StudyComments",
    "InterpretationText",
    "TextComments",
    "TimezoneOffsetFromUTC",
    "PatientAge",
    "PatientSize",
    "PatientWeight",
    "EthnicGroup",
    "PatientSexNeutered",
    "DeviceSerialNumber",
    "SourceApplicationEntityTitle",
)
# Values that identify the patient or the encounter; they must not survive de-identification.
IDENTIFYING = (
    "PatientName",
    "PatientID",
    "IssuerOfPatientID",
    "OtherPatientIDs",
    "OtherPatientNames",
    "PatientBirthName",
    "PatientMotherBirthName",
    "PatientBirthDate",
    "PatientAddress",
    "AccessionNumber",
    "StudyID",
    "InstitutionName",
    "InstitutionAddress",
    "InstitutionalDepartmentName",
    "ReferringPhysicianName",
    "PerformingPhysicianName",
    "NameOfPhysiciansReadingStudy",
    "OperatorsName",
    "PhysiciansOfRecord",
    "RequestingPhysician",
    "StationName",
    "DeviceSerialNumber",
    "StudyInstanceUID",
    "SeriesInstanceUID",
    "SOPInstanceUID",
    "FrameOfReferenceUID",
    "MediaStorageSOPInstanceUID",
    "StudyDate",
    "SeriesDate",
    "AcquisitionDate",
    "ContentDate",
)
_CODES = {
    "113100": "Basic Application Confidentiality Profile",
    "113107": "Retain Longitudinal Temporal Information Modified Dates Option",
}
# Kept by the Basic Profile and not identifying; a vendor name may contain a test file's "institution".
_EQUIPMENT = {"Manufacturer", "ManufacturerModelName", "SoftwareVersions"}
_FREE_TEXT = {"AE", "LO", "LT", "PN", "SH", "ST", "UC", "UT"}
_TEXT_VRS = {"AE", "AS", "CS", "DA", "DS", "DT", "IS", "LO", "LT", "PN", "SH", "ST", "TM", "UC", "UI", "UR", "UT"}


def identity_key(store_root: Path) -> bytes:
    """The HMAC key for patient identities: ``<store root>/keys/identity.key`` (created once, mode 0600).

    It lives beside the image store (shared by every replica) and never in the database,
    so the identity map alone cannot be matched against guessed patient ids.
    """
    path = store_root / "keys" / "identity.key"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_bytes(32))
    return path.read_bytes()


def _text(value: Any) -> str:
    return str(value).strip() if value is not None else ""


def identity_hmac(ds: Any, key: bytes) -> str | None:
    """Keyed hash of the original patient identity, or ``None`` when the file names nobody."""
    parts = [_text(ds.get(k)) for k in ("IssuerOfPatientID", "PatientID", "PatientName", "PatientBirthDate")]
    if not any(parts[1:]):
        return None
    return hmac.new(key, "\x1f".join(parts).encode(), hashlib.sha256).hexdigest()


def identifying_values(ds: Any) -> set[str]:
    """Every original identifying value (and name component) in ``ds`` at least 3 characters long."""
    found: set[str] = set()
    meta = getattr(ds, "file_meta", None)
    for source in (ds, meta) if meta is not None else (ds,):
        for kw in IDENTIFYING:
            value = source.get(kw)
            if value is None:
                continue
            values = list(value) if isinstance(value, list) or type(value).__name__ == "MultiValue" else [value]
            for v in values:
                text = _text(v)
                found.add(text)
                found.update(p.strip() for p in text.replace("=", "^").split("^"))
    return {v for v in found if len(v) >= 3}


def burned_in(ds: Any) -> bool:
    """Whether the file declares burned-in annotation (text drawn into the pixels)."""
    return _text(ds.get("BurnedInAnnotation")).upper() == "YES"


class Deidentifier:
    """De-identifies datasets of one patient consistently (one ``uid_seed`` per patient)."""

    def __init__(self, uid_seed: str, *, retain_dates: bool, birth_date: Literal["remove", "year"] = "remove") -> None:
        from dicognito.anonymizer import Anonymizer

        self._anonymizer = Anonymizer(seed=uid_seed)
        self._seed = uid_seed
        self.retain_dates = retain_dates
        self.birth_date = birth_date

    def apply(self, ds: Any, name: str) -> None:
        """De-identify ``ds`` in place; raises :class:`ImageRejectedError` if an original value survives."""
        from core.imaging.annex_e import apply_annex_e

        originals = identifying_values(ds)
        birth_year = _text(ds.get("PatientBirthDate"))[:4]
        if self.birth_date == "year":  # kept by choice (imaging.birth_date): its year is no leak
            originals.discard(_text(ds.get("PatientBirthDate")))
        self._anonymizer.anonymize(ds)
        ds.remove_private_tags()
        apply_annex_e(ds, retain_dates=self.retain_dates, birth_date=self.birth_date,
                      birth_year=birth_year if birth_year.isdigit() else "", uid_salt=self._seed)  # fmt: skip
        meta = getattr(ds, "file_meta", None)
        if meta is not None and "SOPInstanceUID" in ds:  # the file meta names the same (re-derived) instance
            meta.MediaStorageSOPInstanceUID = ds.SOPInstanceUID
        for kw in EXTRA_REMOVED:
            for source in (ds, ds.file_meta):
                if kw in source:
                    delattr(source, kw)
        if not self.retain_dates:
            for elem in list(ds.iterall()):
                if elem.VR in ("DA", "DT", "TM"):
                    elem.value = ""
            if self.birth_date == "year" and birth_year.isdigit():  # the year alone is kept by choice
                ds.PatientBirthDate = f"{birth_year}0101"
        self._record(ds)
        leaked = self._survivors(ds, originals)
        if leaked:
            # the element names are safe to show; the values are not
            raise ImageRejectedError(
                f"{name}: de-identification left an original identifying value in {', '.join(sorted(leaked))}",
                hint="The file was refused; nothing was imported. Report the file's layout to the maintainers.",
            )

    def _record(self, ds: Any) -> None:
        from pydicom.dataset import Dataset

        ds.PatientIdentityRemoved = "YES"
        ds.LongitudinalTemporalInformationModified = "MODIFIED" if self.retain_dates else "REMOVED"
        codes = ["113100"] + (["113107"] if self.retain_dates else [])
        ds.DeidentificationMethod = "Casebook: " + "; ".join(_CODES[c] for c in codes)
        items = []
        for code in codes:
            item = Dataset()
            item.CodeValue, item.CodingSchemeDesignator, item.CodeMeaning = code, "DCM", _CODES[code]
            items.append(item)
        ds.DeidentificationMethodCodeSequence = items

    @staticmethod
    def _survivors(ds: Any, originals: set[str]) -> set[str]:
        hits: set[str] = set()
        if not originals:
            return hits
        for source in (ds, ds.file_meta):
            for elem in source.iterall():
                if elem.VR not in _TEXT_VRS or elem.value in (None, "") or elem.keyword in _EQUIPMENT:
                    continue
                text = str(elem.value)
                # free text may embed a value; coded and numeric values must equal one to be a leak
                leak = any(o in text for o in originals) if elem.VR in _FREE_TEXT else text.strip() in originals
                if leak:
                    hits.add(elem.keyword or str(elem.tag))
        return hits
