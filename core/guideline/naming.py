"""Which loaded document a question names: "per the NTP manual", "(intl)", "Global Demo TB Partnership" (pure).

A document's identity is the words of its title, its issuer and the name of the file it came from
(what the doctor sees on upload). A question word names a document when it is one of those words,
a contraction of one ("natl" for National), the full word an identity word contracts when the texts
hardly use that word ("international" for an ``intl_tb_guideline.pdf``), or an abbreviation the
documents define whose long form is in the identity ("NTP" for National TB Programme). A contraction
keeps four letters or more in order, the first and the last. Only a *distinctive* match counts: an identity word of that document alone
that other documents' text hardly uses (``guideline.naming_elsewhere_chunks``), so "health workers"
in a manual's title does not name the manual in a question about health workers, and
"tuberculosis" names nothing. A question names a document when exactly one document has such a
match; two documents named (or none) leave the evidence as it is.
"""

from __future__ import annotations

import re
from collections.abc import Collection

from core.guideline.terms import Vocabulary

__all__ = ["identity_words", "named_document", "naming_words"]

_SPLIT = re.compile(r"[a-z][a-z0-9]*")


def identity_words(title: str, organisation: str | None, source: str, stopwords: Collection[str]) -> frozenset[str]:
    """The words a document is known by: its title, its issuer and its file name (without folder or suffix)."""
    name = source.rsplit("/", 1)[-1]
    if " " not in name and "." in name:  # a file name: its stem; a citation string stays as it is
        name = name.rsplit(".", 1)[0]
    text = f"{title} {organisation or ''} {name}".lower().replace("_", " ")
    return frozenset(w.removesuffix("s") if len(w) > 4 else w for w in _SPLIT.findall(text) if w not in stopwords)


def _contracts(short: str, long_: str) -> bool:
    """Whether ``short`` contracts ``long_`` as "intl" does international: four letters or more, in order, the
    first and the last kept."""
    if len(short) < 4 or len(long_) < len(short) + 2 or short[0] != long_[0] or short[-1] != long_[-1]:
        return False
    rest = iter(long_)
    return all(c in rest for c in short)


def _plain(word: str) -> str:
    return word.removesuffix("s") if len(word) > 4 else word


def named_document(question: str, vocab: Vocabulary, stopwords: Collection[str], elsewhere: int = 3) -> str | None:
    """The one loaded document the question names, or ``None`` (none named, or several)."""
    named = naming_words(question, vocab, stopwords, elsewhere)
    return next(iter(named)) if len(named) == 1 else None


def naming_words(question: str, vocab: Vocabulary, stopwords: Collection[str], elsewhere: int = 3) -> dict[str, set[str]]:
    """Each document the question names -> the question words that name it (they ask for no topic)."""
    words = {w for w in _SPLIT.findall(question.lower()) if w not in stopwords and len(w) > 1}
    holders: dict[str, int] = {}
    for identity in vocab.identities.values():
        for w in identity:
            holders[w] = holders.get(w, 0) + 1
    named: dict[str, set[str]] = {}
    for word in words:
        full = vocab.defined.get(word)  # "NTP": its long form, word for word, in one document's identity
        parts = {_plain(p) for p in _SPLIT.findall(full or "") if p not in stopwords}
        spelled = [d for d, identity in vocab.identities.items() if parts and parts <= identity]
        if len(spelled) == 1:
            named.setdefault(spelled[0], set()).add(word)
            continue
        for doc, identity in vocab.identities.items():
            own = vocab.by_doc.get(doc)
            plain = _plain(word)
            for w in identity:
                # the question's word as written, its contraction of an identity word ("natl": National), or the
                # full word an identity word contracts ("international": intl_...pdf) when the texts hardly use it
                rare = vocab.counts[plain] <= elsewhere
                if w != plain and not _contracts(plain, w) and not (rare and _contracts(w, plain)):
                    continue
                forms = (w, f"{w}s", f"{w}es")  # identity words are singular; the texts use both
                used_elsewhere = sum(vocab.counts[f] - (own[f] if own else 0) for f in forms)
                if holders.get(w) == 1 and used_elsewhere <= elsewhere:
                    named.setdefault(doc, set()).add(word)
    return named
