"""The shipped clinical vocabulary (data only): synonyms, abbreviations and evidence terms of conditions.

Keyed by a condition's canonical name. :class:`core.answer.lexicon.ConditionLexicon`
joins it with the diagnoses the case store actually holds (handed in by the runtime),
so a diagnosis the vocabulary does not list is still recognised by its own name.
``RELATED`` maps a concept a doctor names to the related findings that record it in an
outcome ("mets" is recorded as "nodal recurrence" or "metastatic disease").
"""

from __future__ import annotations

__all__ = ["AMBIGUOUS_ABBREVIATIONS", "EXTRA", "RELATED", "SYNONYMS", "known_condition_names"]

# Spread beyond the primary is recorded as metastatic disease or as a nodal, distant or liver recurrence.
_METS = ("metasta", "nodal recurrence", "distant recurrence", "liver recurrence")

# A term a doctor types -> the evidence terms (lower-case stems) that record it in an outcome or diagnosis.
RELATED: dict[str, tuple[str, ...]] = {
    "mets": _METS,
    "metastases": _METS,
    "metastatic": _METS,
    "spread": _METS,
    "surgery": ("surgery", "surgical", "resect", "operat"),
    "surgical": ("surgery", "surgical", "resect", "operat"),
    "operation": ("surgery", "surgical", "resect", "operat"),
    "resection": ("surgery", "surgical", "resect", "operat"),
    "procedure": ("surgery", "drain", "intervention", "resect", "operat"),
    "intervention": ("intervention", "drain", "surgery"),
    "drain": ("drain",),
    "cavitation": ("cavit",),
    "cavity": ("cavit",),
    "cavities": ("cavit",),
    "paralysis": ("paraplegia", "paralys"),
    "paraplegia": ("paraplegia", "paralys"),
    "sepsis": ("sepsis", "septic"),
    "scarring": ("fibrosis", "residual changes"),
    "remission": ("remission",),
    "blindness": ("vision loss", "field loss"),
    "bcr": ("biochemical recurrence",),
    "psa": ("biochemical recurrence",),
    "node": ("nodal",),
    "nodes": ("nodal",),
    "nodal": ("nodal",),
}

# Synonyms and abbreviations of catalogue diagnoses (lower case); the evidence terms default to the
# diagnosis itself plus the listed ones.
SYNONYMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
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
EXTRA: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("Pneumothorax", ("pneumothorax", "ptx", "collapsed lung"), ("pneumothorax",)),
    (
        "Intracranial haemorrhage",
        ("haemorrhage", "hemorrhage", "bleed", "ich", "intracranial haemorrhage", "brain bleed", "sah"),
        ("haemorrhag", "hemorrhag", "bleed"),
    ),
    ("Consolidation", ("consolidation",), ("consolidation",)),
    ("Sarcoidosis", ("sarcoidosis", "sarcoid"), ("sarcoid",)),
    ("Metastasis", ("metastasis", "metastases", "mets", "metastatic disease", "secondaries", "metastatic"), _METS),
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
    ("Cancer", ("cancer", "ca", "malignancy", "carcinoma", "tumour", "tumor", "neoplasm"), ("carcinoma", "cancer")),
)

# Abbreviations that are also ordinary words or titles: counted only when typed in capitals.
AMBIGUOUS_ABBREVIATIONS = frozenset({"ms", "dr", "pe", "mm", "rd", "sk", "cap", "fa", "fx", "ces", "sah", "pid"})




def known_condition_names() -> tuple[str, ...]:
    """Every condition name the vocabulary knows (lower case), longest first."""
    names = {n.lower() for n in SYNONYMS} | {n.lower() for n, _, _ in EXTRA}
    return tuple(sorted(names, key=len, reverse=True))
