"""Direct statements above the bullets: what the label's structure says, and Yes/No (pure).

* **Structural facts** for a drug question whose slot is one label section
  (contraindications, boxed warning): when the target label's section says only
  "None", the answer is "The X label lists no contraindications"; when the label
  has no such section at all, "The X label has no boxed warning". Both come from
  the document store's catalogue (:mod:`core.guideline.catalog`), not from
  sentence overlap, and are made only when every label of the drug is catalogued.
* **Yes/No** for a yes/no question: the polarity of the best delivered bullet
  against the question's (:func:`core.guideline.slots.yes_no`), given only when
  that bullet covers at least ``yes_no_min_coverage`` of the question's focus.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.config.guideline import GuidelineQASettings
from core.guideline.catalog import Catalog
from core.guideline.slots import LABEL_SLOT_SECTIONS, Slot, word_prefix, yes_no
from core.guideline.text import key_tokens
from core.kb.types import Hit

__all__ = ["Statement", "structural_statement", "yes_no_statement"]


@dataclass(frozen=True)
class Statement:
    """A direct answer, what it means (``finding``) and the chunk that shows it (``None`` for an absent section)."""

    text: str
    finding: str
    hit: Hit | None = None


def structural_statement(
    slot: Slot, label_docs: list[str], catalog: Catalog, cfg: GuidelineQASettings
) -> Statement | None:
    """"Lists no ..." or "has no ..." for a label-section slot, or ``None`` when the section has content."""
    code = LABEL_SLOT_SECTIONS.get(slot.name or "")
    if code is None or not catalog.knows(label_docs):
        return None
    title = catalog.titles.get(label_docs[0], "This")
    name = cfg.section_names.get(code, code)
    section = catalog.section(label_docs, code)
    if section is None:
        return Statement(f"The {title} label has no {name}.", "absent_section")
    if section.none:
        return Statement(f"The {title} label lists no {name}: the section says \"None\".", "none_listed", section.hit)
    return None


def yes_no_statement(
    question: str, slot: Slot, best_bullet: str, section_code: str | None, cfg: GuidelineQASettings
) -> Statement | None:
    """``Yes.``/``No.`` for a yes/no question whose best bullet covers enough of its focus, else ``None``.

    A bullet from a Contraindications section counts as negated ("Can X be given
    to premature neonates?" answered from that section is No).
    """
    if not slot.yes_no:
        return None
    if slot.name == "boxed_warning":  # "Does X have a boxed warning?": the section was found, so yes
        return Statement("Yes.", "yes")
    if slot.terms:
        covered = {word_prefix(t, cfg.focus_prefix) for t in key_tokens(best_bullet, cfg.stopwords)} & slot.focus
        if len(covered) / len(slot.terms) < cfg.yes_no_min_coverage:
            return None
    answer = yes_no(question, best_bullet, cfg, negated=section_code == LABEL_SLOT_SECTIONS["contraindication"])
    return Statement(f"{answer}.", answer.lower())
