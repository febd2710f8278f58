"""Verification after generation: lexical entailment gate, claim-snippet alignment, entity guard.

All pure. The entailment gate rejects a bullet when (a) it names a high-risk
term the evidence never names, (b) fewer than ``tau`` of its key tokens occur
in the evidence, or (c) no single evidence sentence reaches ``min_alignment``
Jaccard with it (so every delivered bullet has a real supporting snippet). The
medical entity guard compares a patient summary with the clinician bullets.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from core.config.guideline import GuidelineQASettings
from core.kb.specs import LABEL_KB
from core.kb.types import Hit
from core.text import chunk_sentences, find_phrases, jaccard, key_tokens, overlap_ratio

__all__ = [
    "EvidenceSentence",
    "Verdict",
    "align",
    "check_bullet",
    "entity_guard",
    "evidence_sentences",
    "medical_entities",
    "source_label",
]

_ABBREV = re.compile(r"(?<![\w-])[A-Z][A-Z0-9]+(?:-[A-Z0-9]+)*(?![\w-])")
_CAPITALISED = re.compile(r"(?<=[a-z0-9,;:)] )[A-Z][a-z]{2,}")


@dataclass(frozen=True)
class EvidenceSentence:
    """One sentence of an evidence chunk, its key tokens and its provenance."""

    text: str
    tokens: frozenset[str]
    chunk_id: str
    kb: str
    source: str


@dataclass(frozen=True)
class Verdict:
    """The entailment gate's decision on one bullet."""

    ok: bool
    reason: str
    overlap: float
    alignment: float
    missing_high_risk: tuple[str, ...] = ()


_SMALL_WORDS = {"and", "or", "of", "in", "for", "with", "the", "a", "an", "to", "on", "by"}


def _tidy_section(title: str) -> str:
    """A label section title without its number, in title case when it was all capitals."""
    title = re.sub(r"^\s*\d+(\.\d+)*\s+", "", title).strip()
    if title.isupper():
        words = title.lower().split()
        title = " ".join(w if i and w in _SMALL_WORDS else w[:1].upper() + w[1:] for i, w in enumerate(words))
    return title


def source_label(hit: Hit) -> str:
    """Where a chunk comes from: ``<drug> label — <section>`` or ``<guideline title> — <section>``.

    A label whose title is a brand name adds the generic name: ``Demoquiline (bedaquiline) label — Contraindications``.
    """
    if hit.set_id or hit.kb == LABEL_KB:
        title = hit.title or "Drug"
        generic = sorted((n for n in hit.drug_names if n != title.lower() and " " not in n), key=len)
        name = f"{title} ({generic[0]})" if generic and generic[0] not in title.lower() else title
        section = _tidy_section(hit.section_title) or hit.section_code or "label"
        return f"{name} label — {section}"
    section = hit.section_path[-1] if hit.section_path else hit.section_title
    return f"{hit.title or hit.doc_id}" + (f" — {section}" if section else "")


def evidence_sentences(hits: Iterable[Hit], stopwords: Collection[str]) -> list[EvidenceSentence]:
    """Every sentence of the evidence chunks with its key tokens."""
    return [
        EvidenceSentence(s, frozenset(key_tokens(s, stopwords)), h.chunk_id, h.kb, source_label(h))
        for h in hits
        for s in chunk_sentences(h.text)
    ]


def align(claim: str, sentences: list[EvidenceSentence], stopwords: Collection[str]) -> tuple[EvidenceSentence, float]:
    """The evidence sentence with the highest Jaccard similarity to ``claim`` (the supporting snippet)."""
    if not sentences:
        raise ValueError("no evidence sentences to align against")
    tokens = key_tokens(claim, stopwords)
    best = max(sentences, key=lambda s: jaccard(tokens, set(s.tokens)))
    return best, jaccard(tokens, set(best.tokens))


def check_bullet(
    bullet: str, evidence_text: str, sentences: list[EvidenceSentence], cfg: GuidelineQASettings
) -> Verdict:
    """Run the lexical entailment gate on one bullet against the evidence."""
    risky = set(find_phrases(bullet, cfg.high_risk_terms)) - set(find_phrases(evidence_text, cfg.high_risk_terms))
    tokens = key_tokens(bullet, cfg.stopwords)
    overlap = overlap_ratio(tokens, key_tokens(evidence_text, cfg.stopwords))
    alignment = align(bullet, sentences, cfg.stopwords)[1] if sentences else 0.0
    if risky:
        return Verdict(False, f"high-risk term absent from evidence: {', '.join(sorted(risky))}", overlap,
                       alignment, tuple(sorted(risky)))  # fmt: skip
    if overlap < cfg.tau:
        return Verdict(False, f"token overlap {overlap:.2f} below tau {cfg.tau}", overlap, alignment)
    if alignment < cfg.min_alignment:
        return Verdict(False, f"best snippet Jaccard {alignment:.2f} below {cfg.min_alignment}", overlap, alignment)
    return Verdict(True, "supported", overlap, alignment)


def medical_entities(text: str, drug_names: Iterable[str], cfg: GuidelineQASettings) -> set[str]:
    """Medical entities in ``text``: lexicon drug names, curated terms, abbreviations, mid-sentence capitalised words."""
    found = {n.lower() for n in find_phrases(text, drug_names)}
    found |= {t.lower() for t in find_phrases(text, cfg.medical_terms)}
    found |= {m.group(0).lower() for m in _ABBREV.finditer(text)}
    found |= {m.group(0).lower() for m in _CAPITALISED.finditer(text)}
    return found


def entity_guard(
    patient: str, clinician: str, drug_names: Iterable[str], cfg: GuidelineQASettings
) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """Split a patient summary into kept sentences and dropped ones with the entities they introduced.

    An entity is introduced when the clinician text does not contain it (whole
    words, case-insensitive): such a sentence is a hallucination and is dropped.
    """
    names = list(drug_names)
    kept: list[str] = []
    dropped: list[tuple[str, list[str]]] = []
    for sentence in chunk_sentences(patient):
        new = sorted(e for e in medical_entities(sentence, names, cfg) if not find_phrases(clinician, [e]))
        (dropped.append((sentence, new)) if new else kept.append(sentence))
    return kept, dropped
