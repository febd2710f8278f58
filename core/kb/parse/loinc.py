"""LOINC section codes of FDA Structured Product Labels, and a title fallback.

Codes from the FDA SPL section list (LOINC "SPL section" answers). When a
section carries no code, or the catch-all 42229-5 "SPL unclassified", its
title is matched against these names instead.
"""

from __future__ import annotations

import re

__all__ = ["SECTION_NAMES", "UNCLASSIFIED", "classify_section"]

UNCLASSIFIED = "42229-5"

SECTION_NAMES: dict[str, str] = {
    "34066-1": "Boxed warning",
    "34067-9": "Indications and usage",
    "34068-7": "Dosage and administration",
    "43678-2": "Dosage forms and strengths",
    "34070-3": "Contraindications",
    "43685-7": "Warnings and precautions",
    "34071-1": "Warnings",
    "42232-9": "Precautions",
    "34084-4": "Adverse reactions",
    "34073-7": "Drug interactions",
    "43684-0": "Use in specific populations",
    "42228-7": "Pregnancy",
    "77290-5": "Lactation",
    "34080-2": "Nursing mothers",
    "34081-0": "Pediatric use",
    "34082-8": "Geriatric use",
    "77291-3": "Females and males of reproductive potential",
    "34088-5": "Overdosage",
    "34089-3": "Description",
    "34090-1": "Clinical pharmacology",
    "43679-0": "Mechanism of action",
    "43681-6": "Pharmacodynamics",
    "43682-4": "Pharmacokinetics",
    "43680-8": "Nonclinical toxicology",
    "34083-6": "Carcinogenesis, mutagenesis, impairment of fertility",
    "34092-7": "Clinical studies",
    "34093-5": "References",
    "34069-5": "How supplied/storage and handling",
    "44425-7": "Storage and handling",
    "34076-0": "Patient counseling information",
    "42231-1": "Medication guide",
    "68498-5": "Patient medication information",
    "34074-5": "Drug and laboratory test interactions",
    "42227-9": "Drug abuse and dependence",
    "34085-1": "Controlled substance",
    "34086-9": "Abuse",
    "34087-7": "Dependence",
    "43683-2": "Recent major changes",
    "48780-1": "SPL product data elements",
    "51945-4": "Package label, principal display panel",
    "60561-8": "Other safety information",
    "50569-3": "Instructions for use",
    "50570-1": "Do not use",
    "50565-1": "Keep out of reach of children",
    "34072-1": "Warnings (OTC)",
    "55106-9": "OTC active ingredient",
    "55105-1": "OTC purpose",
}

# Title patterns in the order they are tried (more specific first).
_TITLE_RULES: tuple[tuple[str, str], ...] = (
    (r"boxed warning|warning:.*(death|suicid|risk)", "34066-1"),
    (r"indications?\s*(and|&)\s*usage|^indications?$", "34067-9"),
    (r"dosage\s*forms?\s*(and|&)\s*strengths?", "43678-2"),
    (r"dosage\s*(and|&)\s*administration", "34068-7"),
    (r"contraindications?", "34070-3"),
    (r"warnings?\s*(and|&)\s*precautions?", "43685-7"),
    (r"adverse\s*reactions?", "34084-4"),
    (r"drug\s*interactions?", "34073-7"),
    (r"use\s*in\s*specific\s*populations?", "43684-0"),
    (r"overdosage|overdose", "34088-5"),
    (r"clinical\s*pharmacology", "34090-1"),
    (r"mechanism\s*of\s*action", "43679-0"),
    (r"pharmacokinetics", "43682-4"),
    (r"pharmacodynamics", "43681-6"),
    (r"nonclinical\s*toxicology", "43680-8"),
    (r"clinical\s*studies", "34092-7"),
    (r"how\s*supplied", "34069-5"),
    (r"patient\s*counsel", "34076-0"),
    (r"medication\s*guide", "42231-1"),
    (r"^description$", "34089-3"),
    (r"^pregnancy", "42228-7"),
    (r"^lactation", "77290-5"),
    (r"pediatric\s*use", "34081-0"),
    (r"geriatric\s*use", "34082-8"),
    (r"^warnings?$", "34071-1"),
    (r"^precautions?$", "42232-9"),
)


def _clean_title(title: str) -> str:
    """Drop section numbers ("5.1", "4") and surrounding noise from a label heading."""
    return re.sub(r"^\s*\d+(\.\d+)*\s*", "", title).strip(" .:").lower()


def classify_section(code: str | None, title: str) -> str | None:
    """The LOINC code of a section: its own known code, else one inferred from its title, else ``None``."""
    if code and code != UNCLASSIFIED and code in SECTION_NAMES:
        return code
    cleaned = _clean_title(title)
    for pattern, loinc in _TITLE_RULES:
        if re.search(pattern, cleaned):
            return loinc
    if code and code != UNCLASSIFIED:
        return code  # an unknown but explicit code is still the label's own statement
    return None
