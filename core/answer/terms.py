"""Open vocabulary: clinical terms a question names that the lexicon does not, told apart from ordinary English.

A word is a candidate clinical term when it is rare in general English by the
``wordfreq`` package's frequency list (shipped inside the package; nothing is
downloaded), is not one of the question words the reader knows, and is not a
misspelling of a common English word (one edit from a word of Zipf frequency >= 4).
Adjacent candidates form one term ("creutzfeldt jakob"). The demo catalogue plays
no part: "amyloid", "cavitation" or "sarcoma" are found because English rarely uses
them, not because a list names them.

:func:`term_matches` then looks a term up in the evidence by concept: the shipped
vocabulary's related findings (:data:`core.answer.vocabulary.RELATED`, "mets" ->
"metastatic", "nodal recurrence"), then the term's stem. A term with no match is
reported as "X is not recorded in the evidence of these N cases".
"""

from __future__ import annotations

import re
from functools import cache

from rapidfuzz import process
from rapidfuzz.distance import OSA
from wordfreq import top_n_list, zipf_frequency

from core.answer.vocabulary import RELATED

__all__ = ["clinical_terms", "correct_english", "is_rare", "term_evidence"]

# Zipf frequency below which a word is rare in English (about 1 per million words = 3.0).
RARE_ZIPF = 3.0
_COMMON_ZIPF = 4.0
_PART_ZIPF = 3.0  # each half of a run-together word is at least this common ("micro" + "bleeds")


@cache
def _common_words() -> tuple[str, ...]:
    """The most frequent English words (to tell a misspelling from a rare clinical term)."""
    return tuple(w for w in top_n_list("en", 12000) if w.isalpha() and len(w) >= 3 and zipf_frequency(w, "en") >= _COMMON_ZIPF)


@cache
def _english_words() -> tuple[str, ...]:
    """The 100,000 most frequent English words (alphabetic, at least 5 letters), most frequent first."""
    return tuple(w for w in top_n_list("en", 100000) if w.isalpha() and len(w) >= 5)


def correct_english(token: str) -> str:
    """``token`` when English knows it, else the most frequent English word one edit away (two from 9 letters).

    Catches misspelt clinical words the question vocabulary does not list ("amyliod" -> "amyloid",
    "perforaton" -> "perforation"); short tokens and abbreviations are left alone.
    """
    if len(token) < 5 or not token.isalpha() or zipf_frequency(token, "en") > 0 or _compound(token):
        return token
    limit = 1 if len(token) < 9 else 2
    hits = process.extract(token, _english_words(), scorer=OSA.distance, score_cutoff=limit, limit=5)
    if not hits:
        return token
    if len(token) <= 5:  # in a short word one changed letter is a fifth of it ("modic" is no typo of "medic" or "modric"):
        hits = [h for h in hits if sorted(h[0]) == sorted(token)]  # only two letters swapped
        if not hits:
            return token
    best = min(h[1] for h in hits)
    return str(min((h for h in hits if h[1] == best), key=lambda h: h[2])[0])  # the most frequent at that distance


def _compound(token: str) -> bool:
    """True when ``token`` is two English words run together ("microbleeds": micro + bleeds), not a typo of one."""
    return any(
        zipf_frequency(token[:i], "en") >= _PART_ZIPF and zipf_frequency(token[i:], "en") >= _PART_ZIPF
        for i in range(4, len(token) - 3)
    )


def is_rare(word: str) -> bool:
    """True when ``word`` is rare in English and not one edit from a common English word."""
    if zipf_frequency(word, "en") >= RARE_ZIPF:
        return False
    # "simlar", "sevre": a typo of an ordinary word, not a clinical term
    return not (len(word) >= 4 and process.extractOne(word, _common_words(), scorer=OSA.distance, score_cutoff=1))


def clinical_terms(text: str, known: frozenset[str]) -> tuple[str, ...]:
    """Rare words of normalised ``text`` (runs of them joined) that ``known`` does not hold."""
    words = re.findall(r"[a-z][a-z'-]*[a-z]", text)
    terms: list[str] = []
    run: list[str] = []
    for w in [*words, ""]:
        candidate = bool(w) and len(w) >= 4 and w not in known and (w in RELATED or is_rare(w))
        if candidate:
            run.append(w)
            continue
        if run:
            terms.append(" ".join(run))
            run = []
    return tuple(dict.fromkeys(terms))


def _stem(word: str) -> str:
    """A crude stem: the word less a common ending (at least 5 letters kept)."""
    for suffix in ("ations", "ation", "ities", "ity", "ies", "es", "s", "ic", "al"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 5:
            return word[: -len(suffix)]
    return word


def term_evidence(term: str) -> tuple[str, ...]:
    """The evidence terms that record ``term``: related findings from the vocabulary, else its own stem."""
    words = term.split()
    related = RELATED.get(term) or (RELATED.get(words[-1]) if len(words) == 1 else None)
    if related:
        return related
    return (" ".join(_stem(w) for w in words),)
