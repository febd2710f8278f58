"""Map a DICOM study's Body Part Examined and Modality to one of Casebook's 8 anatomies.

Body part wins (PS3.16 Annex L code strings, upper case); the modality decides
only where it implies the anatomy (mammography, ophthalmic imaging, slide
microscopy). Anything else is ``None``: the importer then asks for ``--anatomy``.
"""

from __future__ import annotations

from typing import Any

from core.store.models import ANATOMIES

__all__ = ["anatomy_for", "check_anatomy"]

_BODY_PART = {
    "lung": ("CHEST", "LUNG", "THORAX", "CHESTABDOMEN", "CHEST_TO_PELVIS", "RIB"),
    "brain": ("HEAD", "BRAIN", "SKULL", "HEADNECK", "IAC", "SELLA"),
    "spine": ("SPINE", "CSPINE", "TSPINE", "LSPINE", "SSPINE", "COCCYX", "SACRUM", "WHOLESPINE"),
    "eye": ("EYE", "ORBIT", "RETINA", "FUNDUS"),
    "breast": ("BREAST",),
    "abdomen": ("ABDOMEN", "PELVIS", "ABDOMENPELVIS", "LIVER", "KIDNEY", "PANCREAS", "GALLBLADDER", "BOWEL"),
    "skin": ("SKIN",),
}
_MODALITY = {"MG": "breast", "OP": "eye", "OPT": "eye", "OPM": "eye", "SM": "pathology"}


def anatomy_for(ds: Any) -> str | None:
    """The anatomy a dataset's header implies, or ``None`` when it does not say."""
    part = str(ds.get("BodyPartExamined") or "").strip().upper().replace(" ", "")
    for anatomy, parts in _BODY_PART.items():
        if part in parts:
            return anatomy
    return _MODALITY.get(str(ds.get("Modality") or "").strip().upper())


def check_anatomy(value: str) -> str:
    """``value`` if it names one of the 8 anatomies; raises ``ValueError`` otherwise."""
    if value not in ANATOMIES:
        raise ValueError(f"Unknown anatomy {value!r}; choose one of: {', '.join(ANATOMIES)}")
    return value
