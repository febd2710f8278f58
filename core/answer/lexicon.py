"""Clinical entities a question may name: the demo catalogue plus common radiology terms.

Each :class:`Entity` has the surface forms a doctor types (names, synonyms,
abbreviations) and the evidence terms that show it in a context bundle. The
catalogue's diagnoses are read from :mod:`core.demo.catalog`, so a new condition
there is recognised without touching this file; synonyms and conditions outside the
catalogue (sarcoidosis, aortic dissection...) are listed here. Typos are corrected
by :func:`correct_token` (optimal-string-alignment distance from rapidfuzz, which
counts a transposed pair as one edit: "mnay" -> "many").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from rapidfuzz import process
from rapidfuzz.distance import OSA

from core.demo.catalog import CATALOG

__all__ = ["AMBIGUOUS_ABBREVIATIONS", "Entity", "correct_token", "entities", "surface_index"]


@dataclass(frozen=True)
class Entity:
    """A condition or finding: what a doctor may type and what shows it in the evidence."""

    name: str
    surfaces: tuple[str, ...]
    evidence: tuple[str, ...]


# Synonyms and abbreviations of catalogue diagnoses (lower case); the evidence terms default to the
# diagnosis itself plus the listed ones.
_SYNONYMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "COPD with emphysema": (
        ("copd", "emphysema", "emphysematous", "chronic obstructive pulmonary disease", "emphysematous copd"),
        ("copd", "emphysema", "emphysematous"),
    ),
    "Community-acquired pneumonia": (
        ("pneumonia", "cap", "chest infection", "lrti", "community acquired pneumonia"),
        ("pneumonia",),
    ),
    "Tension pneumothorax": (("tension pneumothorax", "tension ptx"), ("tension pneumothorax",)),
    "Spontaneous pneumothorax": (("spontaneous pneumothorax",), ("spontaneous pneumothorax",)),
    "Pulmonary tuberculosis": (("tb", "tuberculosis", "ptb"), ("tuberculosis",)),
    "Lung adenocarcinoma": (
        ("lung cancer", "lung adenocarcinoma", "lung ca", "nsclc", "bronchogenic carcinoma", "lung malignancy"),
        ("lung adenocarcinoma", "lung cancer"),
    ),
    "Pulmonary embolism": (("pe", "pulmonary embolism", "pulmonary embolus", "pulmonary emboli"), ("embol",)),
    "Benign pulmonary nodule": (("pulmonary nodule", "lung nodule", "nodule", "spn"), ("nodule",)),
    "Pleural effusion": (("pleural effusion", "effusion", "pleural fluid"), ("effusion",)),
    "Idiopathic pulmonary fibrosis": (
        ("ipf", "pulmonary fibrosis", "interstitial lung disease", "ild", "uip", "honeycombing"),
        ("pulmonary fibrosis", "honeycomb"),
    ),
    "Ischemic stroke": (
        ("stroke", "cva", "infarct", "ischaemic stroke", "ischemic stroke", "cerebral infarction"),
        ("stroke", "infarct"),
    ),
    "Glioblastoma": (("glioblastoma", "gbm", "glioma", "high grade glioma"), ("glioblastoma", "glioma")),
    "Meningioma": (("meningioma",), ("meningioma",)),
    "Multiple sclerosis": (
        ("ms", "multiple sclerosis", "demyelination", "demyelinating disease"),
        ("multiple sclerosis", "demyelinat"),
    ),
    "Subdural haematoma": (
        ("subdural haematoma", "subdural hematoma", "subdural", "sdh"),
        ("subdural",),
    ),
    "Lumbar disc herniation": (
        ("disc herniation", "herniated disc", "slipped disc", "disc prolapse", "disc bulge", "pid"),
        ("disc",),
    ),
    "Cervical spondylotic myelopathy": (("myelopathy", "cervical myelopathy", "csm"), ("myelopathy",)),
    "Vertebral compression fracture": (
        ("compression fracture", "vertebral fracture", "wedge fracture", "fracture", "fx"),
        ("fracture",),
    ),
    "Spinal metastasis": (
        ("spinal metastasis", "spinal metastases", "spinal mets", "vertebral metastasis"),
        ("spinal metasta", "vertebral metasta"),
    ),
    "Diabetic retinopathy": (("dr", "diabetic retinopathy", "retinopathy"), ("retinopathy",)),
    "Age-related macular degeneration": (
        ("amd", "armd", "macular degeneration", "age related macular degeneration"),
        ("macular degeneration",),
    ),
    "Glaucomatous optic neuropathy": (("glaucoma", "glaucomatous optic neuropathy"), ("glaucom",)),
    "Retinal detachment": (("retinal detachment", "detached retina", "rd"), ("detachment", "detached")),
    "Invasive ductal carcinoma": (
        ("idc", "invasive ductal carcinoma", "breast cancer", "breast ca", "breast carcinoma"),
        ("ductal carcinoma", "breast cancer"),
    ),
    "Fibroadenoma": (("fibroadenoma", "fa"), ("fibroadenoma",)),
    "Simple breast cyst": (("breast cyst", "simple cyst", "cyst"), ("cyst",)),
    "Ductal carcinoma in situ": (("dcis", "ductal carcinoma in situ"), ("in situ",)),
    "Acute appendicitis": (("appendicitis", "appy", "acute appendicitis"), ("appendicitis",)),
    "Acute cholecystitis": (("cholecystitis", "acute cholecystitis", "gallbladder inflammation"), ("cholecystitis",)),
    "Hepatocellular carcinoma": (
        ("hcc", "hepatocellular carcinoma", "liver cancer", "liver tumour", "liver tumor", "hepatoma"),
        ("hepatocellular",),
    ),
    "Acute pancreatitis": (("pancreatitis", "acute pancreatitis"), ("pancreatitis",)),
    "Renal calculus": (
        ("kidney stone", "renal stone", "renal calculus", "nephrolithiasis", "urolithiasis", "kidney stones"),
        ("calcul", "stone"),
    ),
    "Small bowel obstruction": (("sbo", "small bowel obstruction", "bowel obstruction"), ("obstruction",)),
    "Melanoma": (("melanoma", "mm", "malignant melanoma"), ("melanoma",)),
    "Basal cell carcinoma": (("bcc", "basal cell carcinoma", "basal cell", "rodent ulcer"), ("basal cell",)),
    "Seborrhoeic keratosis": (
        ("seborrhoeic keratosis", "seborrheic keratosis", "seb keratosis", "sk"),
        ("keratosis",),
    ),
    "Benign melanocytic naevus": (("naevus", "nevus", "mole", "melanocytic naevus"), ("naevus", "nevus")),
    "Prostate adenocarcinoma": (
        ("prostate cancer", "prostate ca", "prostate adenocarcinoma", "prostatic carcinoma"),
        ("prostate",),
    ),
    "Colorectal adenocarcinoma": (
        ("crc", "colorectal cancer", "colon cancer", "bowel cancer", "colorectal adenocarcinoma"),
        ("colorectal", "colon cancer"),
    ),
    "Tubular adenoma": (("tubular adenoma", "adenoma", "polyp"), ("adenoma", "polyp")),
    "Diffuse large B-cell lymphoma": (("dlbcl", "lymphoma", "diffuse large b cell lymphoma"), ("lymphoma",)),
    "Reactive lymphadenopathy": (("lymphadenopathy", "reactive nodes", "reactive lymphadenopathy"), ("lymphaden",)),
}

# Conditions and findings outside the catalogue that radiologists name often; the evidence never
# holds them unless a prior report or outcome does.
_EXTRA: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("Pneumothorax", ("pneumothorax", "ptx", "collapsed lung"), ("pneumothorax",)),
    (
        "Intracranial haemorrhage",
        ("haemorrhage", "hemorrhage", "bleed", "ich", "intracranial haemorrhage", "brain bleed", "sah"),
        ("haemorrhag", "hemorrhag", "bleed"),
    ),
    ("Consolidation", ("consolidation",), ("consolidation",)),
    ("Sarcoidosis", ("sarcoidosis", "sarcoid"), ("sarcoid",)),
    ("Metastasis", ("metastasis", "metastases", "mets", "metastatic disease", "secondaries"), ("metasta",)),
    ("Empyema", ("empyema",), ("empyema",)),
    ("Aortic dissection", ("aortic dissection", "dissection"), ("dissection",)),
    ("Abscess", ("abscess",), ("abscess",)),
    ("Atelectasis", ("atelectasis", "collapse"), ("atelecta", "collapse")),
    ("Bronchiectasis", ("bronchiectasis",), ("bronchiectas",)),
    ("Lymphadenopathy", ("enlarged lymph nodes",), ("lymph",)),
    ("Hydrocephalus", ("hydrocephalus",), ("hydroceph",)),
    ("Aneurysm", ("aneurysm",), ("aneurysm",)),
    ("Cord compression", ("cord compression",), ("cord compression",)),
    ("Cauda equina syndrome", ("cauda equina", "ces"), ("cauda equina",)),
    ("Spinal stenosis", ("spinal stenosis", "canal stenosis", "stenosis"), ("stenosis", "narrowing")),
    ("Macular oedema", ("macular oedema", "macular edema", "dme"), ("oedema", "edema")),
    ("Cancer", ("cancer", "malignancy", "carcinoma", "tumour", "tumor", "neoplasm"), ("carcinoma", "cancer")),
)

# Abbreviations that are also ordinary words or titles: counted only when typed in capitals.
AMBIGUOUS_ABBREVIATIONS = frozenset({"ms", "dr", "pe", "mm", "rd", "sk", "cap", "fa", "fx", "ces", "sah", "pid"})


@cache
def entities() -> tuple[Entity, ...]:
    """Every entity: catalogue diagnoses (with synonyms) and the extra radiology terms."""
    out: list[Entity] = []
    for diagnosis in dict.fromkeys(c.diagnosis for c in CATALOG):
        surfaces, evidence = _SYNONYMS.get(diagnosis, ((), ()))
        out.append(
            Entity(diagnosis, tuple(dict.fromkeys((diagnosis.lower(), *surfaces))), (diagnosis.lower(), *evidence))
        )
    out += [Entity(name, surfaces, evidence) for name, surfaces, evidence in _EXTRA]
    return tuple(out)


@cache
def surface_index() -> dict[str, Entity]:
    """Surface form (lower case, hyphens as spaces) -> entity; longer forms win on overlap elsewhere."""
    index: dict[str, Entity] = {}
    for entity in entities():
        for s in entity.surfaces:
            index.setdefault(_plain(s), entity)
    return index


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[-_]", " ", text.lower())).strip()


def correct_token(token: str, vocabulary: tuple[str, ...]) -> str:
    """``token`` or the nearest vocabulary word within one edit (two from 10 letters).

    A tie goes to the candidate of the same length (a transposition), else the token stays unchanged.
    """
    if len(token) < 4 or not token.isalpha():
        return token
    limit = 1 if len(token) < 10 else 2  # two edits only in long words: "empyema" must not become "emphysema"
    hits = process.extract(token, vocabulary, scorer=OSA.distance, score_cutoff=limit, limit=3)
    if not hits:
        return token
    best = min(h[1] for h in hits)
    top = [h[0] for h in hits if h[1] == best]
    if len(top) > 1:
        top = [t for t in top if len(t) == len(token)]
    return str(top[0]) if len(top) == 1 else token
