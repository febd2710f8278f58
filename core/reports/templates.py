"""Structured report templates per anatomy and finding, in our own words (the spirit of RSNA RadReport).

A template is a few fields with fixed choices (or free text); :func:`prefill` fills only
what the AI reading supports (the finding named in it, the side its region names) and
marks those fields, plus what the record says (whether a prior study exists);
:func:`render` writes FINDINGS and IMPRESSION sentences from the chosen values. A
sentence written from an AI-prefilled value carries ``AI_MARK`` until the doctor edits
or confirms it at signing (:mod:`core.reports.signing`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.reports.drafts import AI_MARK

__all__ = ["TEMPLATES", "Prefill", "ReportTemplate", "TemplateField", "prefill", "render", "template_for"]

NO_PRIOR = "no prior study for comparison"


@dataclass(frozen=True)
class TemplateField:
    """One field: ``options`` to choose from, or free text when empty; ``sentence`` formats the chosen value."""

    key: str
    label: str
    sentence: str
    options: tuple[str, ...] = ()


@dataclass(frozen=True)
class ReportTemplate:
    """A finding's structured report: its fields and the impression sentence built from them."""

    key: str
    title: str
    finds: tuple[str, ...]  # words in the AI reading that choose this template
    fields: tuple[TemplateField, ...]
    impression: str  # formatted with the field values (missing ones read "unspecified")
    critical_values: dict[str, str] = field(default_factory=dict)  # field -> value that makes the finding critical


@dataclass(frozen=True)
class Prefill:
    """A prefilled value and where it came from: ``ai`` (the AI reading) or ``record`` (the database)."""

    value: str
    source: str


COMPARISON = TemplateField(
    "comparison",
    "Comparison",
    "Comparison: {}.",
    (NO_PRIOR, "new since the prior study", "larger than on the prior study", "smaller than on the prior study",
     "unchanged from the prior study"),
)  # fmt: skip
SIDE = TemplateField("side", "Side", "Side: {}.", ("right", "left", "both sides"))

PNEUMOTHORAX = ReportTemplate(
    "pneumothorax",
    "Pneumothorax",
    ("pneumothorax",),
    (
        SIDE,
        TemplateField(
            "size", "Size", "Size: {}.", ("small (rim under 2 cm at the hilum)", "large (rim 2 cm or more at the hilum)")
        ),
        TemplateField("tension", "Tension", "Tension: {}.", ("no signs of tension", "signs of tension")),
        TemplateField(
            "shift",
            "Mediastinal shift",
            "Mediastinum: {}.",
            ("no shift", "shifted away from the pneumothorax", "shifted towards the pneumothorax"),
        ),
        COMPARISON,
    ),
    "{size} pneumothorax on the {side}, {tension}; mediastinum {shift}.",
    {"tension": "signs of tension"},
)
PNEUMONIA = ReportTemplate(
    "pneumonia",
    "Pneumonia",
    ("pneumonia", "consolidation"),
    (
        SIDE,
        TemplateField("zone", "Zone or lobe", "Location: {}."),
        TemplateField("pattern", "Pattern", "Pattern: {}.", ("consolidation", "ground-glass opacity", "mixed")),
        TemplateField("effusion", "Pleural effusion", "Pleural effusion: {}.", ("none", "small", "large")),
        COMPARISON,
    ),
    "{pattern} in the {zone} on the {side}, in keeping with pneumonia; pleural effusion {effusion}.",
)
NODULE = ReportTemplate(
    "nodule",
    "Pulmonary nodule",
    ("nodule",),
    (
        TemplateField("location", "Location", "Location: {}."),
        TemplateField("size_mm", "Size (mm)", "Size: {} mm."),
        TemplateField("type", "Type", "Type: {}.", ("solid", "part-solid", "ground-glass")),
        COMPARISON,
    ),
    "{type} nodule of {size_mm} mm in the {location}.",
)
GENERAL = ReportTemplate(
    "general",
    "General",
    (),
    (TemplateField("finding", "Main finding", "Finding: {}."), COMPARISON),
    "{finding}.",
)
TEMPLATES: dict[str, ReportTemplate] = {t.key: t for t in (PNEUMOTHORAX, PNEUMONIA, NODULE, GENERAL)}


def template_for(diagnosis: str) -> ReportTemplate:
    """The template whose finding the AI reading names, else the general one."""
    text = diagnosis.lower()
    return next((t for t in TEMPLATES.values() if any(w in text for w in t.finds)), GENERAL)


def prefill(template: ReportTemplate, diagnosis: str, region: str | None, has_prior: bool) -> dict[str, Prefill]:
    """Only what the AI reading supports (marked ``ai``) and what the record says (``record``); nothing guessed."""
    text, where = diagnosis.lower(), (region or "").lower()
    out: dict[str, Prefill] = {}
    keys = {f.key for f in template.fields}
    if "side" in keys:
        sides = [s for s in ("right", "left") if s in where or s in text]
        if len(sides) == 1:
            out["side"] = Prefill(sides[0], "ai")
        elif "bilateral" in where or "bilateral" in text:
            out["side"] = Prefill("both sides", "ai")
    if template is PNEUMOTHORAX and "tension" in text:
        out["tension"] = Prefill("signs of tension", "ai")
    if template is PNEUMONIA and "consolidation" in text:
        out["pattern"] = Prefill("consolidation", "ai")
    if template is GENERAL and diagnosis.strip():
        out["finding"] = Prefill(diagnosis.strip(), "ai")
    if not has_prior:
        out["comparison"] = Prefill(NO_PRIOR, "record")
    return out


def render(template: ReportTemplate, values: dict[str, str], ai_keys: set[str]) -> tuple[str, str]:
    """FINDINGS and IMPRESSION from the chosen values; a sentence from an AI-prefilled value is marked."""
    sentences = []
    for f in template.fields:
        value = values.get(f.key, "").strip()
        if not value:
            continue
        sentence = f.sentence.format(value)
        if f.key in ai_keys:
            sentence = f"{sentence[:-1]} ({AI_MARK})."
        sentences.append(sentence)
    shown = {f.key: (values.get(f.key, "").strip() or "unspecified") for f in template.fields}
    impression = template.impression.format(**shown)
    impression = impression[0].upper() + impression[1:]
    if ai_keys & {k for k, v in values.items() if v.strip()}:
        impression = f"{impression[:-1]} ({AI_MARK})."
    return " ".join(sentences), impression


def is_critical_value(template: ReportTemplate, values: dict[str, str]) -> bool:
    """True when a chosen value makes the finding critical (e.g. signs of tension)."""
    return any(values.get(k, "").strip() == v for k, v in template.critical_values.items())
