"""Answer drafting: the extractive composer, the LLM prompts and their parsing, the patient summary.

Every draft is only a proposal: the pipeline runs each bullet through the
gates in :mod:`core.guideline.gates` before anyone sees it.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from core.config.guideline import GuidelineQASettings
from core.guideline.constraints import Candidate
from core.guideline.gates import source_label
from core.guideline.slots import (
    ANAPHOR,
    RARE_ANSWER_SLOTS,
    Slot,
    fills_slot,
    focus_coverage,
    mentions_focus,
    other_condition,
)
from core.guideline.sources import named_groups
from core.guideline.text import key_tokens, overlap_ratio, split_sentences
from core.llm.base import Message

__all__ = [
    "INSUFFICIENT",
    "Draft",
    "Scored",
    "asked_populations",
    "bullet_prompt",
    "complete_sentences",
    "extractive_bullets",
    "parse_bullets",
    "patient_prompt",
    "plain_language",
    "rank_sentences",
    "with_tables",
]

INSUFFICIENT = "INSUFFICIENT EVIDENCE"
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+(.*\S)\s*$")
_CITE = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


@dataclass(frozen=True)
class Draft:
    """A proposed bullet and the evidence numbers (1-based) it cites."""

    text: str
    cites: tuple[int, ...] = ()
    doc_id: str = ""  # the document it was drafted from, when drafted from one document's evidence


@dataclass(frozen=True)
class Scored:
    """An evidence sentence, its relevance to the question and the evidence chunk (0-based) it comes from."""

    score: float
    text: str
    chunk: int
    source: str


def rank_sentences(
    question: str, evidence: list[Candidate], cfg: GuidelineQASettings, slot: Slot | None = None,
    drug_names: Collection[str] = (),
) -> list[Scored]:  # fmt: skip
    """Complete evidence sentences by relevance to the question, best first, without duplicates.

    Relevance = share of the question's key tokens found in the sentence or its
    chunk's heading and drug names (label sections rarely repeat the drug name), plus
    ``extractive_chunk_weight`` times the chunk's rank score (section boost included).
    With a ``slot`` (:mod:`core.guideline.slots`), sentences that leave the slot
    empty, or miss the question's focus (unless they come from the label section
    the question names), are dropped; those that fill the slot fully get
    ``slot_fill_weight`` more, and every sentence ``focus_weight`` times the share
    of the focus words it mentions itself.
    """
    q = key_tokens(question, cfg.stopwords)
    groups = asked_populations(question, cfg)
    scored: dict[str, Scored] = {}
    named_only = bool(evidence) and all(c.boost > 0 and c.is_label for c in evidence)
    for i, cand in enumerate(evidence):
        head = " ".join((cand.hit.title, cand.hit.section_title, *cand.hit.section_path, *cand.hit.drug_names))
        heading = key_tokens(head, cfg.stopwords)
        pairs = with_tables(complete_sentences(cand.hit.text))
        for k, (sentence, table) in enumerate(pairs):
            tokens = key_tokens(sentence, cfg.stopwords)
            if len(tokens) < cfg.min_sentence_tokens or len(sentence) > cfg.max_sentence_chars:
                continue
            coverage = overlap_ratio(q, tokens | heading)
            score = coverage + cfg.extractive_chunk_weight * cand.rank_score
            if slot is not None:
                fit = fills_slot(sentence, cand.hit, slot.name, drug_names, slot.result)
                on_section = named_only  # the evidence is the label section the question names, nothing else
                if fit == 0 or not (on_section or mentions_focus(sentence, cand.hit, slot.focus, cfg)):
                    continue
                if other_condition(sentence, cand.hit, slot.condition, cfg):
                    continue  # another disease's sentence ("meningitis" in the pneumonia guideline)
                score += cfg.slot_fill_weight * (fit - 1) + cfg.focus_weight * focus_coverage(sentence, slot.focus, cfg)
            if groups:
                section = " ".join((cand.hit.section_title, *cand.hit.section_path))
                score += cfg.population_weight * any(g.search(f"{sentence} {section}") for g in groups)
            # a sentence saying how the disease passes (what the result means) answers "How is TB transmitted?"
            # in its own words ("Tuberculosis ... spreads from person to person"): no shared word needed
            rare = slot is not None and slot.name in RARE_ANSWER_SLOTS and fit == 2
            if (coverage >= cfg.min_question_overlap or rare) and score > getattr(scored.get(sentence), "score", -1.0):
                text = "\n".join((sentence, *table))  # a table's lead-in or header carries the table
                if slot is not None and slot.name == "definition" and fit == 2 and not table:
                    text = " ".join((sentence, *_goes_on(pairs, k)))  # a definition may go on in the next sentence
                scored[sentence] = Scored(score, text, i, source_label(cand.hit))
    return sorted(scored.values(), key=lambda s: s.score, reverse=True)


def _goes_on(pairs: list[tuple[str, tuple[str, ...]]], k: int) -> tuple[str, ...]:
    """The sentence after ``pairs[k]`` when it goes on from it ("Such a person ..."), else ``()``."""
    nxt = pairs[k + 1][0] if k + 1 < len(pairs) else ""
    return (nxt,) if ANAPHOR.match(nxt) else ()


def asked_populations(question: str, cfg: GuidelineQASettings) -> list[re.Pattern[str]]:
    """The patterns of the patient groups (``cfg.populations``) that the question names or places its patient in
    (:func:`core.guideline.sources.named_groups`): a passage is read for a group by these words."""
    return [re.compile(cfg.populations[name], re.I) for name in named_groups(question, cfg)]


def with_tables(sentences: list[str], max_rows: int = 12) -> list[tuple[str, tuple[str, ...]]]:
    """Each sentence with the table it introduces (its rows), or ``()``.

    Table rows are ``a | b`` lines (see :mod:`core.kb.parse.guidelines`). A lead-in ending
    with ``:`` directly before a table ("One point is given for each of the
    following:"), and a table's header row, are no answer without the rows, so they
    carry the next rows of the table (at most ``max_rows``).
    """
    out: list[tuple[str, tuple[str, ...]]] = []
    for i, sentence in enumerate(sentences):
        row = " | " in sentence
        header = row and (i == 0 or " | " not in sentences[i - 1])
        lead_in = not row and sentence.endswith(":")
        rows: list[str] = []
        if header or lead_in:
            for later in sentences[i + 1 :]:
                if " | " not in later or len(rows) >= max_rows:
                    break
                rows.append(later)
        out.append((sentence, tuple(rows)))
    return out


def extractive_bullets(
    question: str, evidence: list[Candidate], cfg: GuidelineQASettings, slot: Slot | None = None,
    drug_names: Collection[str] = (),
) -> list[Draft]:  # fmt: skip
    """The ``max_bullets`` most relevant evidence sentences that answer the slot, verbatim, best first."""
    drafts: list[Draft] = []
    lines: set[str] = set()
    for s in rank_sentences(question, evidence, cfg, slot, drug_names):
        if lines.intersection(s.text.splitlines()):  # a row or table already shown by an earlier bullet
            continue
        drafts.append(Draft(s.text, (s.chunk + 1,)))
        lines.update(s.text.splitlines())
        if len(drafts) == cfg.max_bullets:
            break
    return drafts


def complete_sentences(text: str) -> list[str]:
    """Sentences of a chunk without the cut-off ends of a token window.

    Guideline chunks are windows that may start or stop mid-sentence: a first
    sentence starting in lowercase and a last one without closing punctuation
    are dropped (table rows, ``a | b``, are kept).
    """
    sentences = split_sentences(text)
    stripped = text.lstrip(" -*•\n")
    if sentences and stripped[:1].islower():
        sentences = sentences[1:]
    if sentences and not re.search(r"[.!?;:)]$", sentences[-1]) and " | " not in sentences[-1]:
        sentences = sentences[:-1]
    return sentences


def bullet_prompt(question: str, sentences: list[Scored], cfg: GuidelineQASettings) -> list[Message]:
    """Chat messages asking for cited bullets from the numbered evidence sentences only."""
    lines = [f"[{i}] {s.text} ({s.source})" for i, s in enumerate(sentences, start=1)]
    system = (
        "You answer questions about tuberculosis and community-acquired pneumonia for clinicians, using ONLY the "
        f"numbered evidence. Write 1 to {cfg.max_bullets} short bullet points that answer the question. Start each "
        "with '- ', keep the evidence wording, and end each with the evidence number in brackets, like [1]. Do not "
        f"add anything that is not in the evidence. If the evidence does not answer the question, reply {INSUFFICIENT}."
    )
    user = "Evidence:\n" + "\n".join(lines) + f"\n\nQuestion: {question}\nBullets:"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def parse_bullets(text: str, n_evidence: int) -> tuple[list[Draft], list[int]]:
    """Bullets of a model reply and the citation numbers that resolve to no evidence (removed).

    A reply without list markers is taken sentence by sentence; the
    ``INSUFFICIENT EVIDENCE`` reply gives no bullets.
    """
    if INSUFFICIENT.lower() in text.lower() and not _LIST_ITEM.search(text):
        return [], []
    lines = [m.group(1) for line in text.splitlines() if (m := _LIST_ITEM.match(line))]
    if not lines:
        lines = split_sentences(text)
    drafts: list[Draft] = []
    unknown: list[int] = []
    for line in lines:
        nums = [int(n) for group in _CITE.findall(line) for n in group.split(",")]
        unknown += [n for n in nums if not 1 <= n <= n_evidence]
        clean = re.sub(r"\s+", " ", _CITE.sub("", line)).strip(" -*")
        clean = re.sub(r"\s+([.,;:])", r"\1", clean)
        if clean and INSUFFICIENT.lower() not in clean.lower():
            drafts.append(Draft(clean, tuple(n for n in nums if 1 <= n <= n_evidence)))
    return drafts, unknown


def plain_language(bullets: list[str], cfg: GuidelineQASettings) -> str:
    """Extractive patient summary: the clinician bullets reworded through the glossary (longest phrase first)."""
    terms = sorted(cfg.patient_glossary, key=len, reverse=True)
    pattern = re.compile(r"(?<!\w)(" + "|".join(re.escape(t) for t in terms) + r")(?!\w)", re.I) if terms else None
    out = []
    for b in bullets:
        text = pattern.sub(lambda m: cfg.patient_glossary[m.group(1).lower()], b) if pattern else b
        text = text.rstrip(" .;:") + "."
        out.append(text[0].upper() + text[1:])
    return " ".join(out)


def patient_prompt(bullets: list[str]) -> list[Message]:
    """Chat messages asking for a plain-language patient summary of the clinician bullets."""
    system = (
        "Rewrite the clinician notes for a patient in plain language, in 2 to 4 short sentences. Use only the "
        "information in the notes. Do not add any disease, drug, test, body part or number that the notes do not "
        "mention."
    )
    notes = "\n".join(f"- {b}" for b in bullets)
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": f"Clinician notes:\n{notes}\n\nSummary:"},
    ]
