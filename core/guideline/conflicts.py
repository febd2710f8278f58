"""A dose from a document space that contradicts the curated label is a conflict, never the answer.

A doctor's upload (own space, or shared after approval) is searched beside the curated knowledge
bases. When a bullet drafted from a space states a dose (``300 mg``, ``5 mg/kg``, ``1.5 g``) for
a drug that has a curated label, the label's Dosage and Administration text for the same
population (adults, children; any when the bullet names none) is read, and every dose the bullet
states must be one the label states for that population. A bullet that fails is taken out of the
answer and returned as a :class:`~core.guideline.types.DoseConflict`: the page shows it beside
the label's doses, marked as a conflict. A bullet from a curated source is never checked here.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from core.guideline.types import Bullet, DoseConflict
from core.kb.lexicon import DrugLexicon
from core.kb.protocols import Retriever
from core.kb.spaces import SHARED_SPACE
from core.kb.specs import LABEL_KB
from core.kb.types import SPACE_PREFIX

__all__ = ["doses", "population", "split_conflicts"]

LABELS = LABEL_KB
_DOSE = re.compile(r"(\d+(?:[.,]\d+)?)\s*(mg/kg|mg/m2|mg|g|mcg|µg|micrograms?|milligrams?|grams?)\b", re.IGNORECASE)
_POPULATIONS = (
    ("children", re.compile(r"\b(?:child(?:ren)?|paediatric|pediatric|infants?|neonat\w*|adolescents?)\b", re.I)),
    ("adults", re.compile(r"\badults?\b", re.I)),
)
_UNIT = {"g": ("mg", 1000.0), "gram": ("mg", 1000.0), "grams": ("mg", 1000.0), "milligram": ("mg", 1.0),
         "milligrams": ("mg", 1.0), "mcg": ("mg", 0.001), "µg": ("mg", 0.001), "microgram": ("mg", 0.001),
         "micrograms": ("mg", 0.001)}  # fmt: skip


def doses(text: str) -> set[tuple[float, str]]:
    """Every ``(amount, unit)`` stated in ``text``, grams and micrograms in mg."""
    out = set()
    for m in _DOSE.finditer(text):
        unit = m.group(2).lower()
        base, factor = _UNIT.get(unit, (unit, 1.0))
        out.add((round(float(m.group(1).replace(",", ".")) * factor, 4), base))
    return out


def population(text: str) -> str | None:
    """``children`` or ``adults`` when ``text`` names one (children first: "adults and children" is both)."""
    found = [name for name, pattern in _POPULATIONS if pattern.search(text)]
    return found[0] if len(found) == 1 else None


def _label_doses(retriever: Retriever, drug: str, who: str | None) -> set[tuple[float, str]] | None:
    """Doses the curated label of ``drug`` states for ``who`` (any population when ``None``); ``None`` when no label."""
    hits = [h for h in retriever.search(f"{drug} dosage and administration {who or ''}", LABELS, 8)
            if drug in {n.lower() for n in h.drug_names} or drug in (h.title or "").lower()]  # fmt: skip
    if not hits:
        return None
    out: set[tuple[float, str]] = set()
    for h in hits:
        for line in re.split(r"(?<=[.;])\s+|\n+", h.text):
            if who is None or population(line) in (who, None):
                out |= doses(line)
    return out


def _from_space(kb: str) -> bool:
    return kb == SHARED_SPACE or kb.startswith(SPACE_PREFIX)


def split_conflicts(
    bullets: Sequence[Bullet], retriever: Retriever, lexicon: DrugLexicon
) -> tuple[list[Bullet], list[DoseConflict]]:
    """``(bullets kept, conflicts)``: space bullets whose doses the curated label does not state move out."""
    kept: list[Bullet] = []
    conflicts: list[DoseConflict] = []
    for b in bullets:
        stated = doses(b.text)
        if not _from_space(b.evidence.kb) or not stated:
            kept.append(b)
            continue
        who = population(b.text)
        clash = None
        for entry in lexicon.find_in(b.text):
            label = _label_doses(retriever, entry.name, who)
            if label is not None and not stated <= label:
                clash = DoseConflict(text=b.text, kb=b.evidence.kb, chunk_id=b.evidence.chunk_id, drug=entry.name,
                                     population=who, stated=sorted(f"{a:g} {u}" for a, u in stated - label),
                                     label=sorted(f"{a:g} {u}" for a, u in label))  # fmt: skip
                break
        if clash is None:
            kept.append(b)
        else:
            conflicts.append(clash)
    return kept, conflicts
