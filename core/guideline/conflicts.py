"""A dose from a document space that truly contradicts the curated label is shown beside it, never as the answer.

A doctor's upload (own space, or shared after approval) is searched beside the curated knowledge
bases. Every dose a bullet drafted from a space states is read as a slot (:mod:`core.guideline.doses`:
drug, patient group, amount, unit, kind, weight band) and compared with the same slot in the curated
label's Dosage and Administration text for that drug:

* the same slot with an amount that overlaps none of the label's: a **contradiction**. The bullet
  leaves the answer and becomes a :class:`~core.guideline.types.DoseConflict` naming both documents;
  the page shows it side by side with the label's own lines. A label is never overridden;
* a slot the label does not fill (a weight band's fixed dose against a label in mg/kg, a renal dose
  against a label without one, a drug without a curated label, a tablet strength): **not comparable**.
  The bullet stays in the answer, attributed to its own document.

A bullet from a curated source is never checked here.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from core.config.guideline import GuidelineQASettings
from core.guideline.doses import DoseStatement, contradicts, dose_statements, exceeds, stated_weight
from core.guideline.types import Bullet, DoseConflict
from core.kb.lexicon import DrugLexicon
from core.kb.protocols import Retriever
from core.kb.spaces import SHARED_SPACE
from core.kb.specs import LABEL_KB
from core.kb.types import SPACE_PREFIX, Hit

__all__ = ["asked_dose_conflict", "asked_dose_reason", "conflict_reason", "drug_keys", "split_conflicts"]

DOSAGE_SECTION = "34068-7"


def drug_keys(lexicon: DrugLexicon, aliases: dict[str, list[str]]) -> dict[str, str]:
    """Every spelling of a labelled drug (brand, generic, salt, alias) -> one name for it (the generic when known)."""
    groups: dict[frozenset[str], list[str]] = {}
    for entry in lexicon.entries.values():
        groups.setdefault(frozenset(entry.doc_ids), []).append(entry.name)
    keys: dict[str, str] = {}
    for names in groups.values():
        generic = [n for n in names if "generic" in lexicon.entries[n].kinds]
        key = min(generic or names, key=lambda n: (len(n), n))
        keys |= {n: key for n in names}
    for name, spellings in aliases.items():
        if name in keys:
            keys |= {a.lower(): keys[name] for a in spellings}
    return keys


def _from_space(kb: str) -> bool:
    return kb == SHARED_SPACE or kb.startswith(SPACE_PREFIX)


class _Labels:
    """The curated label's dose statements per drug, read once per answer."""

    def __init__(self, retriever: Retriever, keys: dict[str, str], cfg: GuidelineQASettings) -> None:
        self.retriever, self.keys, self.cfg = retriever, keys, cfg
        self.groups = {name: re.compile(p, re.IGNORECASE) for name, p in cfg.populations.items()}
        self.read: dict[str, tuple[list[DoseStatement], str]] = {}
        self.from_dosing: set[str] = set()  # drugs whose statements come from the label's dosage section itself

    def of(self, drug: str) -> tuple[list[DoseStatement], str]:
        """``(statements, label title)`` of ``drug``'s curated label; ``([], "")`` when it has none."""
        if drug not in self.read:
            spellings = {n for n, k in self.keys.items() if k == drug}
            hits = [h for h in self.retriever.search(f"{drug} dosage and administration", LABEL_KB, 8)
                    if spellings & {n.lower() for n in h.drug_names} or (h.title or "").lower() in spellings]  # fmt: skip
            dosing: list[Hit] = [h for h in hits if h.section_code == DOSAGE_SECTION]
            if dosing:
                self.from_dosing.add(drug)
            dosing = dosing or hits
            found = [s for h in dosing for s in dose_statements(h.text, self.keys, self.groups, drug=drug)]
            self.read[drug] = (found, dosing[0].title if dosing else "")
        return self.read[drug]


def split_conflicts(
    bullets: Sequence[Bullet], retriever: Retriever, lexicon: DrugLexicon, cfg: GuidelineQASettings,
    keys: dict[str, str] | None = None,
) -> tuple[list[Bullet], list[DoseConflict]]:
    """``(bullets kept, conflicts)``: space bullets stating a dose that contradicts the label's same slot move out.

    ``keys``: :func:`drug_keys` of ``lexicon`` when the caller has it already (read from ``lexicon`` otherwise)."""
    keys = drug_keys(lexicon, cfg.drug_aliases) if keys is None else keys
    labels = _Labels(retriever, keys, cfg)
    kept: list[Bullet] = []
    conflicts: list[DoseConflict] = []
    for b in bullets:
        conflict = _conflict(b, labels, cfg) if _from_space(b.evidence.kb) else None
        if conflict is None:
            kept.append(b)
        else:
            conflicts.append(conflict)
    return kept, conflicts


def _conflict(b: Bullet, labels: _Labels, cfg: GuidelineQASettings) -> DoseConflict | None:
    """The conflict ``b`` makes with a curated label (its first contradicted drug), or ``None``."""
    own = b.population if b.population in labels.groups else None
    for stated in dose_statements(b.text, labels.keys, labels.groups, population=own):
        if stated.drug is None:
            continue
        label, title = labels.of(stated.drug)
        against = contradicts(stated, label, cfg.dose_band_tolerance)
        if not against:
            continue
        wrong = [s for s in dose_statements(b.text, labels.keys, labels.groups, population=own)
                 if s.drug == stated.drug and contradicts(s, label, cfg.dose_band_tolerance)]  # fmt: skip
        source = b.evidence.ref.title if b.evidence.ref is not None else b.evidence.source
        return _against_label(b.text, b.evidence.kb, b.evidence.chunk_id, stated.drug, stated, wrong, against, source, title)
    return None


def _against_label(
    text: str, kb: str, chunk_id: str, drug: str, stated: DoseStatement, wrong: list[DoseStatement],
    against: list[DoseStatement], source: str, title: str,
) -> DoseConflict:  # fmt: skip
    """A dose ``source`` states (``wrong``) beside the curated label's lines it contradicts (``against``)."""
    return DoseConflict(
        text=text, kb=kb, chunk_id=chunk_id, drug=drug, population=stated.population,
        stated=list(dict.fromkeys(s.label() for s in wrong)), label=list(dict.fromkeys(s.label() for s in against)),
        source=source, label_source=f"{title} label" if title else f"{drug} label",
        label_lines=list(dict.fromkeys(s.text for s in against)),
    )  # fmt: skip


def conflict_reason(c: DoseConflict) -> str:
    """Why nothing is answered when the only dose drafted is a conflict: both documents and their doses."""
    return (f"{c.source or 'an uploaded document'} states {', '.join(c.stated)} of {c.drug}, where the curated "
            f"{c.label_source} states {', '.join(c.label) or 'no dose'}: shown as a conflict, not as an answer")  # fmt: skip


def asked_dose_conflict(
    question: str, retriever: Retriever, cfg: GuidelineQASettings, keys: dict[str, str], group: str | None = None,
) -> DoseConflict | None:  # fmt: skip
    """A dose the question itself proposes above everything the curated label documents for it, or ``None``.

    "Confirm rifampicin 1200 mg daily for my 50 kg patient" proposes a dose. It is compared with the
    label's dosage section for the drug and the asked group (:func:`~core.guideline.doses.exceeds`):
    above every amount and maximum the label states in that unit, or, given the patient's one weight
    ("50 kg", the patient's, not a weight band), more than ``dose_band_tolerance`` times the label's
    highest mg/kg. Only *above*: a proposal the label states for another schedule (isoniazid 900 mg,
    the label's intermittent maximum) is not refused here, since the schedule is not read.
    """
    labels = _Labels(retriever, keys, cfg)
    own = group if group in labels.groups else None
    weight = stated_weight(question)
    for stated in dose_statements(question, keys, labels.groups, population=own):
        drug = stated.drug
        if drug is None or stated.kind == "strength":
            continue
        if stated.band is not None and stated.band[0] == stated.band[1]:  # one weight: the patient's, not a band
            stated = dataclasses.replace(stated, band=None)
        label, title = labels.of(drug)
        if stated.drug not in labels.from_dosing:
            continue  # no dosage section found: nothing documented to compare with
        against = exceeds(stated, label, weight, cfg.dose_band_tolerance)
        if against:
            return _against_label(question, "question", "question", drug, stated, [stated], against, "the question", title)
    return None


def asked_dose_reason(c: DoseConflict) -> str:
    """Why a question proposing a contradicted dose is refused: its dose and the label's, both named."""
    return (f"The question proposes {', '.join(c.stated)} of {c.drug}; the curated {c.label_source} states "
            f"{', '.join(c.label)} for this slot ({' / '.join(c.label_lines)[:200]}). Guideline QA does not confirm "
            f"a dose its source contradicts: check the label and the patient's prescriber.")  # fmt: skip
