"""One answer per source: which document each piece of evidence comes from, whom it is for, where sources differ.

* :func:`source_ref` names a hit's document (title, issuer, year, section, page, owner);
* :func:`question_population` and :func:`passage_population` name the patient group a question
  and a passage are about (``guideline.populations``: children, pregnancy, HIV, renal, hepatic...);
  a question that names no group is about adults;
* :func:`by_document` picks the evidence so that every document that covers the question keeps
  its best chunks (``guideline.evidence_per_source``), and :func:`per_source` drafts each document's bullets apart, so two guidelines
  are never merged into one list;
* :func:`disagreements` compares the values (doses, durations, timings with their units) the
  documents state for the same patient group and reports each difference as one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from core.config.guideline import GuidelineQASettings
from core.guideline.constraints import Candidate
from core.guideline.doses import dose_statements
from core.guideline.slots import focus_coverage
from core.guideline.types import Bullet, Disagreement, SourceRef
from core.kb.types import Hit

__all__ = [
    "by_document",
    "disagreements",
    "named_groups",
    "owner_of",
    "passage_population",
    "per_source",
    "question_population",
    "source_ref",
    "subsection_of",
    "value_slots",
    "values_of",
]

# A value a guideline states: a number (or a number word) with its unit.
_NUM = r"(?:\d+(?:[.,]\d+)?(?:\s*(?:-|to)\s*\d+(?:[.,]\d+)?)?|one|two|three|four|five|six|seven|eight|nine|ten|twelve)"
_UNIT = r"(?:mg/kg|mg|g|mcg|micrograms?|ml|weeks?|months?|days?|hours?|years?|air changes per hour|ach|cells/mm3|%)"
_WORDS = {w: str(i) for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"])}  # fmt: skip
_VALUE = re.compile(rf"\b{_NUM}\s*{_UNIT}\b", re.IGNORECASE)


def owner_of(kb: str) -> str:
    """Whose space a knowledge base is: ``curated`` (the demo KBs), ``shared`` (``user``) or the doctor's slug."""
    if kb == "user":
        return "shared"
    if kb.startswith("user."):
        return kb.removeprefix("user.")
    return "curated"


# A numbered subsection heading on its own line inside a chunk ("2.1 Rheumatoid Arthritis, ..."): a label's
# section is one chunk with its subsections' titles as lines.
_SUBHEADING = re.compile(r"^(\d+(?:\.\d+)+)\s+\S[^\n]{0,150}$", re.M)


def subsection_of(section: str, text: str, sentence: str) -> str | None:
    """The numbered subsection of ``section`` whose heading stands last above ``sentence`` in ``text``, or ``None``.

    Only a heading numbered under the section's own number counts ("2.1 ..." under "2 DOSAGE AND
    ADMINISTRATION"), so a cited dose names the subsection it was read from.
    """
    number = re.match(r"(\d+)\b", section.strip())
    where = text.find(sentence) if sentence else -1
    if number is None or where < 0:
        return None
    heads = [m for m in _SUBHEADING.finditer(text, 0, where) if m.group(1).startswith(number.group(1) + ".")]
    return heads[-1].group(0).strip() if heads else None


def source_ref(hit: Hit, sentence: str = "", carried: str | None = None) -> SourceRef:
    """The document, section and page of one hit; with the quoted ``sentence``, its numbered subsection: the
    last one above the sentence in the chunk, else ``carried``, the one in force where the chunk begins
    (:mod:`core.guideline.headings`)."""
    section = hit.section_path[-1] if hit.section_path else hit.section_title
    section = subsection_of(section or "", hit.text, sentence) or (carried if sentence else None) or section
    return SourceRef(doc_id=hit.doc_id, title=hit.title or hit.source, issuer=hit.organisation, year=hit.year,
                     section=section or "", page=hit.page, kb=hit.kb, owner=owner_of(hit.kb))  # fmt: skip


def _groups(cfg: GuidelineQASettings) -> dict[str, re.Pattern[str]]:
    return {name: re.compile(p, re.IGNORECASE) for name, p in cfg.populations.items()}


def question_population(question: str, cfg: GuidelineQASettings) -> str:
    """The patient group the question names (in ``guideline.populations`` order), else ``adults``.

    A specific group comes before "adults", as for a passage: "an adult living with HIV" is asked about HIV.
    """
    found = named_groups(question, cfg)
    return next((g for g in found if g != "adults"), "adults")


def named_groups(question: str, cfg: GuidelineQASettings) -> list[str]:
    """The patient groups a question names (``guideline.populations``) or places its patient in
    (``guideline.population_cues``: "jaundice on HRZE" is about the liver), in ``populations`` order."""
    cues = {name: re.compile(p, re.IGNORECASE) for name, p in cfg.population_cues.items()}
    return [name for name, pattern in _groups(cfg).items()
            if pattern.search(question) or (name in cues and cues[name].search(question))]  # fmt: skip


def passage_population(hit: Hit, sentence: str, cfg: GuidelineQASettings) -> str | None:
    """The patient group a passage is written for: its nearest heading naming one, else the sentence; else ``None``."""
    groups = _groups(cfg)
    for text in (hit.section_title, *reversed(hit.section_path), _lead(sentence)):
        found = [name for name, pattern in groups.items() if pattern.search(text or "")]
        if found:  # a specific group before "adults" ("An adult of 60 kg with TB and HIV" is about HIV)
            return next((g for g in found if g != "adults"), found[0])
    return None


def _lead(sentence: str) -> str:
    """What a table row or a sentence is about: a row's first cell (``Site of disease: Meningitis, children``; it
    was cut at its first colon before, so the cell's value was never read), else the whole sentence."""
    return sentence.split(" | ", 1)[0] if " | " in sentence else sentence


def by_document(
    ranked: Sequence[Candidate], n: int, floor: Callable[[Candidate], bool], most_docs: int = 4, per_doc: int = 1,
    covers: Callable[[Candidate], bool] | None = None,
) -> list[Candidate]:  # fmt: skip
    """The best ``n`` candidates, plus the best ones of every other document (up to ``most_docs``) that pass ``floor``.

    Every document but the first keeps up to ``per_doc`` chunks: its best, and further ones that also ``cover``
    the question (mention its focus), so the passage a document answers with reaches the evidence even when a
    worked example of the same document ranks above it; the comparison between documents then sees both.
    """
    picked = list(ranked[:n])
    top = picked[0].hit.doc_id if picked else None
    count: dict[str, int] = {}
    for c in picked:
        count[c.hit.doc_id] = count.get(c.hit.doc_id, 0) + 1
    for cand in ranked[n:]:
        doc = cand.hit.doc_id
        if doc not in count:
            if len(count) < most_docs and floor(cand):
                picked.append(cand)
                count[doc] = 1
        elif doc != top and count[doc] < per_doc and floor(cand) and (covers is None or covers(cand)):
            picked.append(cand)
            count[doc] += 1
    return picked


def per_source(evidence: list[Candidate]) -> list[list[Candidate]]:
    """The evidence split by document, in the order each document first appears (best first)."""
    order: dict[str, list[Candidate]] = {}
    for cand in evidence:
        order.setdefault(cand.hit.doc_id, []).append(cand)
    return list(order.values())


def values_of(text: str) -> list[str]:
    """The values a sentence states, normalised (``2 weeks``, ``25 mg/kg``, ``12 air changes per hour``)."""
    out: list[str] = []
    for m in _VALUE.finditer(text):
        value = re.sub(r"\s+", " ", m.group(0).lower()).replace(" to ", "-")
        value = re.sub(r"\b[a-z]+\b", lambda w: _WORDS.get(w.group(0), w.group(0)), value)  # "two weeks" = "2 weeks"
        if value not in out:
            out.append(value)
    return out


_TIME = re.compile(r"^\S+ (?:weeks?|months?|days?|hours?|years?)$")
_AGE_BEFORE = re.compile(r"(?:\baged?|\bage of|older than|younger than|\bunder|\bbelow|\bover|\babove)\s*$", re.I)
_AGE_AFTER = re.compile(r"\s*(?:of age|old\b|and (?:older|over|above)|or (?:older|more|over|above))", re.I)


def value_slots(
    text: str, drugs: Mapping[str, str], groups: Mapping[str, re.Pattern[str]], population: str | None = None
) -> dict[str, list[str]]:
    """What a sentence states, by slot: ``{"dose of pyrazinamide (mg/kg)": ["25 mg/kg"], "age": ["14 years"]}``.

    Doses are read as slots (:mod:`core.guideline.doses`: drug, unit, weight band; tablet strengths are
    no dose); the other values by their unit: a time span is an ``age`` when the words around it say so
    ("aged 14 years", "12 years and older"), else a ``duration or timing``; air changes per hour, CD4
    counts and percentages are slots of their own.
    """
    out: dict[str, list[str]] = {}
    found = dose_statements(text, drugs, groups, population=population)
    # a table row's fixed dose (with its band, or with the band cut off by the chunk window)
    fixed = {(d.text, d.drug) for d in found if (d.band or " | " in d.text) and d.unit == "mg" and d.kind == "dose"}
    for d in found:
        if d.kind == "strength" or (d.unit == "mg/kg" and (d.text, d.drug) in fixed):
            continue  # a row's "approximate mg/kg" column restates its fixed dose
        what = f"{'maximum ' if d.kind == 'max' else ''}dose{' of ' + d.drug if d.drug else ''}"
        slot = f"{what} ({d.unit}{' by weight band' if d.band else ''})"  # a band's dose keeps its band
        value = d.label().removeprefix("max ")
        if value not in out.setdefault(slot, []):
            out[slot].append(value)
    for m in _VALUE.finditer(text):
        value = _normal(m.group(0))
        if re.search(r"\b(?:mg/kg|mg|g|mcg|micrograms?|ml)$", value):
            continue  # doses are read as slots above; a volume alone says nothing comparable
        if _TIME.search(value):
            age = _AGE_BEFORE.search(text[max(0, m.start() - 14) : m.start()]) or _AGE_AFTER.match(text, m.end())
            slot = "age" if age else "duration or timing"
        else:
            slot = value.split(" ", 1)[-1]
        if value not in out.setdefault(slot, []):
            out[slot].append(value)
    return out


def _normal(found: str) -> str:
    """A value's normal form: ``two weeks`` is ``2 weeks``, ``4 to 8 weeks`` is ``4-8 weeks``, ``12 ACH`` is
    ``12 air changes per hour``, ``1 week`` is ``1 weeks`` (one form for the singular and plural)."""
    value = re.sub(r"\s+", " ", found.lower()).replace(" to ", "-")
    value = re.sub(r"\b[a-z]+\b", lambda w: _WORDS.get(w.group(0), w.group(0)), value)
    value = re.sub(r"\bach$", "air changes per hour", value)
    return re.sub(r"^(\S+ (?:week|month|day|hour|year))$", r"\1s", value)


def disagreements(
    bullets: list[Bullet], topic: str | None, drugs: Mapping[str, str] | None = None,
    cfg: GuidelineQASettings | None = None, weight: float | None = None, terms: frozenset[str] = frozenset(),
) -> list[Disagreement]:  # fmt: skip
    """Where two documents state different values for the same slot and patient group: one :class:`Disagreement` each.

    Only bullets for the question's own population are compared (a bullet naming no group counts as
    the general, adult one). A slot is what a value measures (:func:`value_slots`): the dose of one
    drug in one unit and weight band, an age, a duration or timing, air changes per hour; values of
    different slots are never compared (a minimum age is no duration); a dose of a drug the lexicon does not
    know is compared only under the same section heading (numbers aside). A document's values for a slot
    are the union over its bullets; two documents differ when each states a value the other does not.
    ``topic`` (the question's slot) is kept for callers; the difference is named by its own slot. With
    the patient's ``weight`` (kg, from the question), weight-band tables are compared in that band only.
    With the question's ``terms`` (its focus prefixes, :class:`core.guideline.slots.Slot`), a document's
    values for a slot come from its bullets that mention the most of them (text and section): "adult TB
    meningitis - total duration?" compares the meningitis rows, not the pleural row beside them.
    """
    groups = {name: re.compile(p, re.IGNORECASE) for name, p in (cfg.populations if cfg else {}).items()}
    found: dict[str, dict[tuple[str | None, str], list[tuple[float, list[str]]]]] = {}
    for b in bullets:
        if b.other_population or b.evidence.ref is None:
            continue
        group = None if b.population in (None, "adults") else b.population
        per = found.setdefault(b.evidence.ref.title, {})
        heading = re.sub(r"^[\d.\s]+", "", b.evidence.ref.section).strip().lower()
        near = focus_coverage(f"{b.text}\n{heading}", terms, cfg) if terms and cfg else 0.0
        for slot, values in value_slots(b.text, drugs or {}, groups, b.population).items():
            if re.match(r"(?:maximum )?dose \(", slot):  # no known drug: the heading names what is dosed
                slot = f"{slot} under '{heading}'"  # 3HP's 900 mg is no adalimumab dose; pyridoxine is pyridoxine
            per.setdefault((group, slot), []).append((near, values))
    by_doc: dict[str, dict[tuple[str | None, str], list[str]]] = {}
    for doc, per in found.items():  # a document states, for a slot, what its bullets nearest the question state
        for key, entries in per.items():
            best = max(near for near, _ in entries)
            vals = by_doc.setdefault(doc, {}).setdefault(key, [])
            vals += [v for near, values in entries if near == best for v in values if v not in vals]
    out: list[Disagreement] = []
    keys = list(dict.fromkeys(k for per in by_doc.values() for k in per))
    for group, slot in keys:
        stated = {d: per[(group, slot)] for d, per in by_doc.items() if per.get((group, slot))}
        shown: dict[str, list[str]] = {}
        docs = list(stated)
        for i, first in enumerate(docs):
            for second in docs[i + 1 :]:
                pair = (_in_band(stated[first], weight), _in_band(stated[second], weight))
                for doc, vals in zip((first, second), _differing(*pair), strict=True):
                    if vals:
                        shown[doc] = shown.get(doc, []) + [v for v in vals if v not in shown.get(doc, [])]
        if len(shown) >= 2:
            out.append(Disagreement(topic=slot + (f" ({group})" if group else ""), values=shown))
    return out


_BAND = re.compile(r"^(.*) \((\d+(?:\.\d+)?)-(\d+(?:\.\d+)?) kg\)$")


def _in_band(values: list[str], weight: float | None) -> list[str]:
    """The values for the band holding ``weight`` (all of them without a weight, or for values without a band)."""
    if weight is None:
        return values
    return [v for v in values if not (m := _BAND.match(v)) or float(m.group(2)) <= weight <= float(m.group(3))]


def _differing(a: list[str], b: list[str]) -> tuple[list[str], list[str]]:
    """What each of two documents states differently for one slot: ``([], [])`` when they do not differ.

    Plain values differ when each document states one the other does not (both shown in full). A weight
    band's doses differ only where both documents have the same band (within 1 kg: "40-54" and "40-55")
    with another amount; only those bands are shown (two tables cut at other weights do not disagree).
    """
    bands_a = [(m.group(1), float(m.group(2)), float(m.group(3)), v) for v in a if (m := _BAND.match(v))]
    bands_b = [(m.group(1), float(m.group(2)), float(m.group(3)), v) for v in b if (m := _BAND.match(v))]
    if bands_a and bands_b:
        pairs = [(x[3], y[3]) for x in bands_a for y in bands_b
                 if abs(x[1] - y[1]) <= 1 and abs(x[2] - y[2]) <= 1 and x[0] != y[0]]  # fmt: skip
        return list(dict.fromkeys(p[0] for p in pairs)), list(dict.fromkeys(p[1] for p in pairs))
    if set(a) - set(b) and set(b) - set(a):
        return a, b
    return [], []
