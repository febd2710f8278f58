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
    "RARE_ANSWER_SLOTS",
    "Slot",
    "asked_condition",
    "asked_result",
    "fills_slot",
    "focus_coverage",
    "focus_prefixes",
    "mentions_focus",
    "no_answer_reason",
    "other_condition",
    "question_slot",
    "states_answer",
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
_TRANSMISSION = re.compile(r"transmi(t|ss)|\bspread|airborne|droplet|person to person|contagious", re.I)
# Weaker: says who is infectious or that coughing reaches others, not how it passes (ranked after the above).
_INFECTIOUS = re.compile(r"\binfectious\b|\bcough(s|ing)?\b.{0,40}\b(air|others)\b", re.I)
# A named test: the words a diagnosis sentence uses for one (a "how is X tested?" answer names a test).
_NAMED_TEST = re.compile(r"\b(tuberculin|tst|igras?|interferon-gamma|quantiferon|t-spot|tbst|culture|cultures|smear|"
                         r"microscopy|naat|xpert|pcr|lf-lam|lipoarabinomannan|line probe|lpa|radiograph\w*|x-ray|"
                         r"computed tomography|ct scan|urinary antigen|procalcitonin|gram stain|assays?|dst|"
                         r"susceptibility testing|sputum)\b", re.I)  # fmt: skip
# A sentence that defines its subject ("LTBI ... describes a person who ...", "XDR-TB is MDR-TB plus ...").
_DEFINES = re.compile(r"\b(describes?|means|refers? to|(?:is|are) (?:defined|called) |(?:is|are) (?:an?|the) )", re.I)
# A sentence that goes on from the one before it ("Such a person has no symptoms ...").
ANAPHOR = re.compile(r"^(Such|This|These|It|They|Its|Their)\b")
# The result a "what does a positive X mean?" question asks about, and a sentence saying what a result means (or
# does not show): "A positive IGRA means ...", "a positive result does not distinguish latent infection ...".
_RESULT = re.compile(r"\b(pos[a-z]*ti?ve|neg[a-z]*ti?ve|indeterminate|borderline)\b", re.I)  # "positve" too
_MEANS = re.compile(r"\b(means?|meaning|indicates?|suggests?|shows?|signif\w*|implies|reflects?|confirms?|"
                    r"distinguish\w*|exclude[sd]?|rules? out|interpreted|sensiti[sz]ed|carries|likely|probably)\b", re.I)
_CAUTION = re.compile(r"contraindicat|\bavoid|\bshould not\b|\bmust not\b|\bnot (?:be )?(?:used|given|recommended)", re.I)


@dataclass(frozen=True)
class Slot:
    """What a question asks for: the slot name (or ``None``), whether it is yes/no, and its focus prefixes.

    ``focus`` includes the other names of the concepts the question names; ``terms``
    only the question's own topic words. ``condition`` is the one disease the question
    names (``cfg.conditions``), ``result`` the test result a ``result_meaning`` question asks about.
    """

    name: str | None
    yes_no: bool
    focus: frozenset[str]
    terms: frozenset[str] = frozenset()
    condition: str | None = None
    result: str | None = None


def question_slot(question: str, cfg: GuidelineQASettings, drug_names: Collection[str]) -> Slot:
    """The slot, yes/no form and focus of ``question``."""
    lowered = question.lower()
    name = next((s for s, pats in cfg.slot_patterns.items() if any(re.search(p, lowered) for p in pats)), None)
    first = re.findall(r"[a-z']+", lowered)[:1]
    terms = focus_prefixes(question, cfg, drug_names, with_concepts=False)
    focus = focus_prefixes(question, cfg, drug_names)
    result = asked_result(question) if name == "result_meaning" else None
    if name == "result_meaning":  # the focus is the test: "positive" alone finds every other test's result
        drop = {word_prefix(w, cfg.focus_prefix) for w in ("positive", "negative", "indeterminate", "borderline")}
        drop |= {word_prefix(m.lower(), cfg.focus_prefix) for m in _RESULT.findall(question)}
        focus, terms = focus - drop, terms - drop
    return Slot(name, bool(first) and first[0] in cfg.yes_no_starts, focus, terms, asked_condition(question, cfg),
                result)  # fmt: skip


def asked_condition(question: str, cfg: GuidelineQASettings) -> str | None:
    """The one disease of ``cfg.conditions`` that ``question`` names, or ``None`` (none, or several)."""
    named = [c for c, pattern in cfg.conditions.items() if re.search(pattern, question, re.I)]
    return named[0] if len(named) == 1 else None


def asked_result(question: str) -> str | None:
    """The test result a question asks about (``positive``, ``negative``...), lowercase, or ``None``."""
    found = _RESULT.search(question)
    return _result_word(found.group(1)) if found else None


def _result_word(word: str) -> str:
    """``positive``, ``negative`` or the word itself, lowercase (a misspelt "positve" is ``positive``)."""
    word = word.lower()
    return "positive" if word.startswith("pos") else "negative" if word.startswith("neg") else word


def other_condition(sentence: str, hit: Hit, condition: str | None, cfg: GuidelineQASettings) -> bool:
    """Whether the sentence is about another disease than the asked ``condition``.

    The nearest context that names any disease decides: the sentence, then its
    section headings, then its document's title. A context naming none (a label's
    dosing line) or naming the asked one is not another disease's; nor is a sentence
    naming another disease inside a section or document on the asked one alone (a
    differential: "consider tuberculosis" in a pneumonia guideline's non-response section).
    """
    if condition is None or condition not in cfg.conditions:
        return False
    patterns = {c: re.compile(p, re.I) for c, p in cfg.conditions.items()}
    levels = (sentence, " ".join((hit.section_title, *hit.section_path)), hit.title)
    named = [{c for c, p in patterns.items() if p.search(context)} for context in levels]
    for k, found in enumerate(named):
        if found:
            return condition not in found and not any(outer == {condition} for outer in named[k + 1 :])
    return False


def focus_prefixes(
    question: str, cfg: GuidelineQASettings, drug_names: Collection[str], with_concepts: bool = True
) -> frozenset[str]:
    """First letters of the question's topic words and of their concepts' variants.

    Topic words are the key tokens minus filler, drug names, label-section words
    (``side effects``: the section answers them), slot names and the one-word names of a disease in
    ``cfg.conditions``; a topic word that names a concept (``breastfeeding`` ->
    lactation) brings the concept's other names, so either spelling counts.
    """
    n = cfg.focus_prefix
    drop = set(cfg.question_filler) | {t for name in drug_names for t in _tokens(name, cfg)}
    drop |= {t for pats in cfg.slot_patterns for t in pats.split("_")}
    # the disease's own one-word names ("tuberculous"): the asked disease is checked by ``other_condition``, so a
    # sentence naming only the disease is no answer about "tuberculous meningitis"
    drop |= {v for c in cfg.conditions for v in (c, *cfg.concepts.get(c, ())) if " " not in v}
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


def fills_slot(
    sentence: str, hit: Hit, slot: str | None, drug_names: Collection[str], result: str | None = None
) -> int:
    """How well the sentence fills the slot: 0 (off-slot, drop), 1 (fills it), 2 (fills it fully).

    ``result`` is the asked test result of a ``result_meaning`` slot ("positive"): the
    sentence must name it and say what it means or does not show.
    """
    if slot is None:
        return 1
    if slot == "result_meaning":
        named = {_result_word(m) for m in _RESULT.findall(sentence)}
        return 2 if (result is None or result in named) and named and _MEANS.search(sentence) else 0
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
        return 2 if _TRANSMISSION.search(sentence) else int(bool(_INFECTIOUS.search(sentence)))
    if slot == "test":
        return 2 if _NAMED_TEST.search(sentence) else 1
    if slot == "definition":
        return 2 if _DEFINES.search(sentence) else 1
    if slot == "regimen":
        drug = bool(_REGIMEN_CODE.search(sentence) or find_phrases(sentence, drug_names))
        span = bool(_SPAN.search(sentence))
        return 2 if drug and span else int(drug or span)
    return 1


# Slots whose answer is a rare kind of sentence: the evidence chunks that hold one are chosen first.
RARE_ANSWER_SLOTS = frozenset({"transmission", "result_meaning"})


def states_answer(text: str, hit: Hit, slot: Slot | None) -> bool:
    """Whether a chunk's text holds a sentence that fills a ``RARE_ANSWER_SLOTS`` slot fully (false otherwise)."""
    if slot is None or slot.name not in RARE_ANSWER_SLOTS:
        return False
    return any(fills_slot(s, hit, slot.name, (), slot.result) == 2 for s in re.split(r"(?<=[.;:!?])\s+", text))


def yes_no(question: str, sentence: str, cfg: GuidelineQASettings, negated: bool = False) -> str:
    """``Yes`` when the sentence has the question's polarity, ``No`` when one of them is negated.

    ``negated`` marks a sentence negative whatever its words (it comes from a Contraindications section).
    """
    negated_q = bool(find_phrases(question, cfg.negation_cues))
    negated_s = negated or bool(find_phrases(sentence, cfg.negation_cues))
    return "No" if negated_q != negated_s else "Yes"


def no_answer_reason(slot: Slot) -> str:
    """Why no evidence sentence answered: the slot left empty, or the focus never mentioned."""
    if slot.name is not None:
        return f"no evidence sentence states the {slot.name.replace('_', ' ')} the question asks for"
    if slot.focus:
        return "no evidence sentence mentions what the question asks about (" + ", ".join(sorted(slot.focus)) + "...)"
    return "the evidence yielded no answer sentence"
