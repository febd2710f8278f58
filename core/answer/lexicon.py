"""Clinical entities a question may name: the case store's diagnoses plus the shipped vocabulary.

Each :class:`Entity` has the surface forms a doctor types (names, synonyms,
abbreviations) and the evidence terms that show it in a context bundle. The
diagnoses come from the case store (the runtime hands them in through
:class:`core.answer.kit.AskKit`), so a new condition there is recognised without an
edit; synonyms and conditions outside the store (sarcoidosis, aortic dissection...)
are in :mod:`core.answer.vocabulary`. Typos are corrected
by :func:`correct_token` (optimal-string-alignment distance from rapidfuzz, which
counts a transposed pair as one edit: "mnay" -> "many").
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from rapidfuzz import process
from rapidfuzz.distance import OSA

from core.answer.vocabulary import AMBIGUOUS_ABBREVIATIONS, EXTRA, SYNONYMS

__all__ = ["AMBIGUOUS_ABBREVIATIONS", "ConditionLexicon", "Entity", "correct_token", "default_lexicon"]


@dataclass(frozen=True)
class Entity:
    """A condition or finding: what a doctor may type and what shows it in the evidence."""

    name: str
    surfaces: tuple[str, ...]
    evidence: tuple[str, ...]


class ConditionLexicon:
    """Conditions a question may name: the case store's own diagnoses joined with the shipped vocabulary.

    ``diagnoses`` are the distinct diagnoses of the case store (the runtime reads them); each
    gets its synonyms and evidence terms from :data:`core.answer.vocabulary.SYNONYMS` when the
    vocabulary lists it, else its own name only. The vocabulary's other conditions and findings
    (pneumothorax, sarcoidosis, metastasis...) are always known, so an absent one can be named.
    """

    def __init__(self, diagnoses: tuple[str, ...] = ()) -> None:
        names = dict.fromkeys((*diagnoses, *SYNONYMS))  # the store's first, then the vocabulary's
        out: list[Entity] = []
        for diagnosis in names:
            surfaces, evidence = SYNONYMS.get(diagnosis, ((), ()))
            out.append(
                Entity(diagnosis, tuple(dict.fromkeys((diagnosis.lower(), *surfaces))), (diagnosis.lower(), *evidence))
            )
        out += [Entity(name, surfaces, evidence) for name, surfaces, evidence in EXTRA]
        self.entities: tuple[Entity, ...] = tuple(out)
        index: dict[str, Entity] = {}
        for entity in self.entities:
            for s in entity.surfaces:
                index.setdefault(_plain(s), entity)
        self.surfaces: dict[str, Entity] = index  # surface form (lower case, hyphens as spaces) -> entity
        self.by_length: tuple[str, ...] = tuple(sorted(index, key=len, reverse=True))
        self.single_words: tuple[str, ...] = tuple(sorted(s for s in index if " " not in s))


@cache
def default_lexicon() -> ConditionLexicon:
    """The lexicon of the shipped vocabulary alone (no case store read): for tools and tests."""
    return ConditionLexicon()


def _plain(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[-_]", " ", text.lower())).strip()


def correct_token(token: str, vocabulary: tuple[str, ...]) -> str:
    """``token`` or the nearest vocabulary word within one edit (two from 10 letters).

    A tie goes to the candidate of the same length (a transposition), else the token stays unchanged.
    """
    if len(token) < 4 or not token.isalpha():
        return token
    limit = 1 if len(token) < 10 else 2  # two edits only in long words: "empyema" must not become "emphysema"
    hits = process.extract(token, vocabulary, scorer=OSA.distance, score_cutoff=limit, limit=3)
    if not hits:
        return token
    best = min(h[1] for h in hits)
    top = [h[0] for h in hits if h[1] == best]
    if len(top) > 1:
        top = [t for t in top if len(t) == len(token)]
    return str(top[0]) if len(top) == 1 else token
