"""One answer per source: which document each piece of evidence comes from, whom it is for, where sources differ.

* :func:`source_ref` names a hit's document (title, issuer, year, section, page, owner);
* :func:`question_population` and :func:`passage_population` name the patient group a question
  and a passage are about (``guideline.populations``: children, pregnancy, HIV, renal, hepatic...);
  a question that names no group is about adults;
* :func:`by_document` picks the evidence so that every document that covers the question keeps
  its best chunk, and :func:`per_source` drafts each document's bullets apart, so two guidelines
  are never merged into one list;
* :func:`disagreements` compares the values (doses, durations, timings with their units) the
  documents state for the same patient group and reports each difference as one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from core.config.guideline import GuidelineQASettings
from core.guideline.constraints import Candidate
from core.guideline.types import Bullet, Disagreement, SourceRef
from core.kb.types import Hit

__all__ = [
    "by_document",
    "disagreements",
    "owner_of",
    "passage_population",
    "per_source",
    "question_population",
    "source_ref",
    "subsection_of",
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


def source_ref(hit: Hit, sentence: str = "") -> SourceRef:
    """The document, section and page of one hit; with the quoted ``sentence``, its numbered subsection."""
    section = hit.section_path[-1] if hit.section_path else hit.section_title
    section = subsection_of(section or "", hit.text, sentence) or section
    return SourceRef(doc_id=hit.doc_id, title=hit.title or hit.source, issuer=hit.organisation, year=hit.year,
                     section=section or "", page=hit.page, kb=hit.kb, owner=owner_of(hit.kb))  # fmt: skip


def _groups(cfg: GuidelineQASettings) -> dict[str, re.Pattern[str]]:
    return {name: re.compile(p, re.IGNORECASE) for name, p in cfg.populations.items()}


def question_population(question: str, cfg: GuidelineQASettings) -> str:
    """The patient group the question names first (in ``guideline.populations`` order), else ``adults``."""
    for name, pattern in _groups(cfg).items():
        if pattern.search(question):
            return name
    return "adults"


def passage_population(hit: Hit, sentence: str, cfg: GuidelineQASettings) -> str | None:
    """The patient group a passage is written for: its nearest heading naming one, else the sentence; else ``None``."""
    groups = _groups(cfg)
    for text in (hit.section_title, *reversed(hit.section_path), _lead(sentence)):
        found = [name for name, pattern in groups.items() if pattern.search(text or "")]
        if found:  # a specific group before "adults" ("An adult of 60 kg with TB and HIV" is about HIV)
            return next((g for g in found if g != "adults"), found[0])
    return None


def _lead(sentence: str) -> str:
    """What a table row or a sentence is about: its first cell (``Population: Children``) or first clause."""
    return re.split(r" \| |[,;:]", sentence, maxsplit=1)[0] if " | " in sentence else sentence


def by_document(ranked: Sequence[Candidate], n: int, floor: Callable[[Candidate], bool], most_docs: int = 4) -> list[Candidate]:
    """The best ``n`` candidates, plus the best one of every other document (up to ``most_docs``) that passes ``floor``."""
    picked = list(ranked[:n])
    docs = {c.hit.doc_id for c in picked}
    for cand in ranked[n:]:
        if len(docs) >= most_docs:
            break
        if cand.hit.doc_id not in docs and floor(cand):
            picked.append(cand)
            docs.add(cand.hit.doc_id)
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


def disagreements(bullets: list[Bullet], topic: str | None) -> list[Disagreement]:
    """Where two documents state different values for the same patient group: one :class:`Disagreement` each.

    Only bullets for the question's own population are compared; a document's values are the union
    over its bullets. Two documents differ when each states a value the other does not.
    """
    by_doc: dict[str, dict[str | None, list[str]]] = {}
    for b in bullets:
        if b.other_population or b.evidence.ref is None:
            continue
        per = by_doc.setdefault(b.evidence.ref.title, {})
        vals = per.setdefault(b.population, [])
        vals += [v for v in values_of(b.text) if v not in vals]
    out: list[Disagreement] = []
    docs = list(by_doc)
    for group in {g for per in by_doc.values() for g in per}:
        stated = {d: by_doc[d].get(group, []) for d in docs if by_doc[d].get(group)}
        if len(stated) < 2:
            continue
        sets = [set(v) for v in stated.values()]
        if any(a - b and b - a for i, a in enumerate(sets) for b in sets[i + 1 :]):
            out.append(Disagreement(topic=(topic or "the answer").replace("_", " "), values=stated))
    return out
