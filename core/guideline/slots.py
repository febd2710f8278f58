"""Answers that answer: the question's slot and focus, and which evidence sentences fill them (pure).

A question asks for a *slot* (``dose``, ``duration``, ``regimen``,
``contraindication``, ``boxed_warning``, ``transmission``, ``test``, ``definition``; see
``guideline.slot_patterns``) about a
*focus* (its key words minus filler, drug names and the slot's own words). An
evidence sentence answers only when it

* mentions the focus (some focus word, compared by its first ``focus_prefix``
  letters, in the sentence or its section heading), and
* fills the slot: a dose has an amount with a unit (and sentences naming a
  population rank first); a duration names a time span; a regimen names a drug
  or a regimen code; a contraindication or boxed warning comes from that label
  section (or, in a guideline, says "contraindicated", "avoid", "should not");
  a transmission sentence says how the disease passes (transmitted, spread,
  airborne, person to person); a test sentence that names a test (TST, IGRA,
  culture, Xpert, LF-LAM) ranks first, other sentences stay; so does a
  sentence that defines its subject for a definition question, and it carries
  the next sentence when that one goes on from it ("Such a person ...").

Everything else is off-slot and dropped. Yes/no questions get ``Yes`` or ``No``
from the polarity of the best sentence against the question's.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from core.config.guideline import GuidelineQASettings
from core.guideline.text import find_phrases, key_tokens
from core.kb.types import Hit

__all__ = [
    "ANAPHOR",
    "LABEL_SLOT_SECTIONS",
    "Slot",
    "fills_slot",
    "focus_coverage",
    "focus_prefixes",
    "mentions_focus",
    "question_slot",
    "word_prefix",
    "yes_no",
]

# Slots answered by one label section (LOINC code).
LABEL_SLOT_SECTIONS = {"contraindication": "34070-3", "boxed_warning": "34066-1"}
_DOSE = re.compile(r"\d[\d,.]*\s*(?:-|–|to)?\s*\d*[\d,.]*\s*(?:mg|g|mcg|µg|micrograms?|units?|ml|mL)(?:/kg)?\b", re.I)
_POPULATION = re.compile(
    r"\b(adults?|child(ren)?|pediatric|paediatric|infants?|neonates?|adolescents?|patients?|years?|kg|"
    r"weigh\w*|pregnan\w*|elderly|older)\b",
    re.I,
)
_SPAN = re.compile(r"\b(\d+[\d.,–-]*\s*(days?|weeks?|months?|years?|hours?|doses)|one|two|three|four|six|nine|"
                   r"twelve)\b|\b(days?|weeks?|months?)\b", re.I)  # fmt: skip
_REGIMEN_CODE = re.compile(r"\b\d*(?:[HRZEPMLS]{2,}|BPaLM?|Lfx|Mfx)\b")
_TRANSMISSION = re.compile(r"transmi(t|ss)|\bspread|airborne|droplet|person to person|contagious|\binfectious\b"
                           r"|\bcough(s|ing)?\b.{0,40}\b(air|others)\b", re.I)
# A named test: the words a diagnosis sentence uses for one (a "how is X tested?" answer names a test).
_NAMED_TEST = re.compile(r"\b(tuberculin|tst|igras?|interferon-gamma|quantiferon|t-spot|tbst|culture|cultures|smear|"
                         r"microscopy|naat|xpert|pcr|lf-lam|lipoarabinomannan|line probe|lpa|radiograph\w*|x-ray|"
                         r"computed tomography|ct scan|urinary antigen|procalcitonin|gram stain|assays?|dst|"
                         r"susceptibility testing|sputum)\b", re.I)  # fmt: skip
# A sentence that defines its subject ("LTBI ... describes a person who ...", "XDR-TB is MDR-TB plus ...").
_DEFINES = re.compile(r"\b(describes?|means|refers? to|(?:is|are) (?:defined|called) |(?:is|are) (?:an?|the) )", re.I)
# A sentence that goes on from the one before it ("Such a person has no symptoms ...").
ANAPHOR = re.compile(r"^(Such|This|These|It|They|Its|Their)\b")
_CAUTION = re.compile(r"contraindicat|\bavoid|\bshould not\b|\bmust not\b|\bnot (?:be )?(?:used|given|recommended)", re.I)


@dataclass(frozen=True)
class Slot:
    """What a question asks for: the slot name (or ``None``), whether it is yes/no, and its focus prefixes.

    ``focus`` includes the other names of the concepts the question names; ``terms``
    only the question's own topic words.
    """

    name: str | None
    yes_no: bool
    focus: frozenset[str]
    terms: frozenset[str] = frozenset()


def question_slot(question: str, cfg: GuidelineQASettings, drug_names: Collection[str]) -> Slot:
    """The slot, yes/no form and focus of ``question``."""
    lowered = question.lower()
    name = next((s for s, pats in cfg.slot_patterns.items() if any(re.search(p, lowered) for p in pats)), None)
    first = re.findall(r"[a-z']+", lowered)[:1]
    terms = focus_prefixes(question, cfg, drug_names, with_concepts=False)
    return Slot(name, bool(first) and first[0] in cfg.yes_no_starts, focus_prefixes(question, cfg, drug_names), terms)


def focus_prefixes(
    question: str, cfg: GuidelineQASettings, drug_names: Collection[str], with_concepts: bool = True
) -> frozenset[str]:
    """First letters of the question's topic words and of their concepts' variants.

    Topic words are the key tokens minus filler, drug names, label-section words
    (``side effects``: the section answers them) and slot names; a topic word that names a concept (``breastfeeding`` ->
    lactation) brings the concept's other names, so either spelling counts.
    """
    n = cfg.focus_prefix
    drop = set(cfg.question_filler) | {t for name in drug_names for t in _tokens(name, cfg)}
    drop |= {t for pats in cfg.slot_patterns for t in pats.split("_")}
    label_keys = [k for k, group in cfg.section_groups.items() if any(m[:1].isdigit() for m in group)]
    kept = {t for t in key_tokens(question, cfg.stopwords)
            if t not in drop and not t.isdigit() and not any(t.startswith(k) for k in label_keys)}  # fmt: skip
    tokens = kept | {p for t in kept if "-" in t for p in t.split("-") if len(p) > 1 and p not in drop}
    focus = {word_prefix(t, n) for t in tokens}
    if not with_concepts:
        return frozenset(focus)
    for concept, variants in cfg.concepts.items():
        names = [concept, *variants]
        if any({word_prefix(t, n) for t in _tokens(v, cfg)} <= focus for v in names if _tokens(v, cfg)):
            focus |= {word_prefix(t, n) for v in names for t in _tokens(v, cfg) if t not in drop}
    return frozenset(focus)


def word_prefix(token: str, n: int) -> str:
    """The first ``n`` letters of ``token`` after a verb ending (``-ed``, ``-ing``) is cut from a long enough word.

    "tested" and "testing" compare as ``test`` with "test" and "tests" (a plain
    5-letter prefix made "teste" of "tested" and missed every sentence about tests).
    """
    for end in ("ing", "ed"):
        if token.endswith(end) and len(token) - len(end) >= 4:
            return token[: -len(end)][:n]
    return token[:n]


def _tokens(text: str, cfg: GuidelineQASettings) -> set[str]:
    """Key tokens, hyphenated words also split into their parts (``iron-containing`` -> iron, containing)."""
    tokens = key_tokens(text, cfg.stopwords)
    return tokens | {p for t in tokens if "-" in t for p in t.split("-") if len(p) > 1}


def _prefixes(text: str, cfg: GuidelineQASettings) -> set[str]:
    return {word_prefix(t, cfg.focus_prefix) for t in _tokens(text, cfg)}


def focus_coverage(text: str, focus: frozenset[str], cfg: GuidelineQASettings) -> float:
    """Share of the focus words (by first letters) that ``text`` mentions; 0.0 without a focus."""
    return len(focus & _prefixes(text, cfg)) / len(focus) if focus else 0.0


def mentions_focus(sentence: str, hit: Hit, focus: frozenset[str], cfg: GuidelineQASettings) -> bool:
    """Whether the sentence, its section headings or its document title mention a focus word (true without a focus)."""
    if not focus:
        return True
    heading = " ".join((hit.title, hit.section_title, *hit.section_path))
    return bool(focus & _prefixes(f"{sentence} {heading}", cfg))


def fills_slot(sentence: str, hit: Hit, slot: str | None, drug_names: Collection[str]) -> int:
    """How well the sentence fills the slot: 0 (off-slot, drop), 1 (fills it), 2 (fills it fully)."""
    if slot is None:
        return 1
    if slot in LABEL_SLOT_SECTIONS:
        if hit.section_code:
            return 2 if hit.section_code == LABEL_SLOT_SECTIONS[slot] else 0
        return 1 if slot == "contraindication" and _CAUTION.search(sentence) else 0
    if slot == "dose":
        if not _DOSE.search(sentence):
            return 0
        return 2 if _POPULATION.search(sentence) else 1
    if slot == "duration":
        return 2 if _SPAN.search(sentence) else 0
    if slot == "transmission":
        return 2 if _TRANSMISSION.search(sentence) else 0
    if slot == "test":
        return 2 if _NAMED_TEST.search(sentence) else 1
    if slot == "definition":
        return 2 if _DEFINES.search(sentence) else 1
    if slot == "regimen":
        drug = bool(_REGIMEN_CODE.search(sentence) or find_phrases(sentence, drug_names))
        span = bool(_SPAN.search(sentence))
        return 2 if drug and span else int(drug or span)
    return 1


def yes_no(question: str, sentence: str, cfg: GuidelineQASettings, negated: bool = False) -> str:
    """``Yes`` when the sentence has the question's polarity, ``No`` when one of them is negated.

    ``negated`` marks a sentence negative whatever its words (it comes from a Contraindications section).
    """
    negated_q = bool(find_phrases(question, cfg.negation_cues))
    negated_s = negated or bool(find_phrases(sentence, cfg.negation_cues))
    return "No" if negated_q != negated_s else "Yes"
