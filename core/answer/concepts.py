"""What a count question counts: the concept left when the question's frame is taken away, matched by concept.

"how many similar pts had a decline in lung fn" counts *decline in lung function*;
"died vs recovered vs recurred" counts three concepts; "any foot drop / weakness" counts
one concept with two names; "how many recurrence-free" counts cases that record *no
recurrence*. Each word of a concept matches a case when any of its forms appears in the
case's diagnosis or outcome: its own stem, the outcome event it names (:data:`EVENTS`,
"died" for "deaths"), the vocabulary's related findings ("nodal recurrence" for "mets")
or a condition's evidence terms ("pneumothorax" for "PTX"). A case matches a concept
when every word does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wordfreq import zipf_frequency

from core.answer.lexicon import ConditionLexicon
from core.answer.terms import is_rare, term_evidence
from core.answer.understand import EVENTS
from core.answer.vocabulary import RELATED

__all__ = ["FRAME", "Concept", "concepts_of", "matches"]

# Words that frame a count question rather than name what is counted.
FRAME = frozenset(
    str.split(
        "how many much number proportion percentage fraction share count counts any anyone anybody did do does had have "
        "has having were was is are be been being needed need needs needing require required requires requiring end "
        "ended ending up remained remain stayed stay went go got get develop developed developing show showed shown "
        "record recorded records the a an of in on at by to for within after over under from with who which what "
        "similar cases case pts patients patient pt people ones folks matches match matched neighbours neighbors "
        "comparable retrieved them they these those their among there it its this that eyes men women lesions "
        "sim cohort group so than or also and please tell me you us list overall total just really still ever scan scans study studies image images imaging this current like look looks looked "
        "months month years year weeks week days day mo mos yr yrs wk wks m y d w his her him he she i we my our your "
        "would could able kindly tell please you me whether whats what's if mind know give let see "
        # words that frame an outcome rather than name it ("were left with", "only", "experienced", "suffered")
        "left only experienced experiencing suffered suffering sustained "
        # words that ask whether the evidence mentions something ("honeycombing or fibrosis mentioned in those cases")
        "mentioned mention mentions noted documented described reported"
    )
)
_SPECIFIC_ZIPF = 4.4  # below this a word is specific enough to be looked up (pregnant, drain; ok, like above)
_TIME = re.compile(r"\b\d+\s*-?\s*(?:m|mo|mos|month|months|y|yr|yrs|year|years|w|wk|wks|week|weeks|d|day|days)\b")
_NEGATED = re.compile(r"\b(?:no|without|free of|never)\s+([a-z -]+)|\b([a-z]+)[ -]free\b(?! of)")


@dataclass(frozen=True)
class Concept:
    """A counted concept: its name, each word's accepted forms, and whether the count is of its absence."""

    name: str
    words: tuple[tuple[str, ...], ...]
    negated: bool = False
    options: tuple[Concept, ...] = ()  # "foot drop / weakness": a case matches when any option does
    clinical: bool = True  # names an event, a finding, a condition or a rare (clinical) word; else not counted
    event: bool = False  # an outcome event or procedure (admission, death, surgery), not a condition or finding


def _stem(word: str) -> str:
    for suffix in ("ations", "ation", "ings", "ing", "ies", "ed", "es", "s", "ly"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def _ordinary(word: str, lexicon: ConditionLexicon) -> bool:
    """A very common English word that names no outcome event, related finding or condition ("which", "said")."""
    if word in RELATED or word in lexicon.surfaces or any(word in e.cues for e in EVENTS):
        return False
    return zipf_frequency(word, "en") >= 5.0


def _specific(word: str) -> bool:
    """A word specific enough to name a finding ("pregnant", "smokers", "drain", "curb-65"), not everyday English."""
    return bool(re.search(r"\d", word)) or zipf_frequency(word, "en") < _SPECIFIC_ZIPF or is_rare(word)


def _forms(word: str, lexicon: ConditionLexicon) -> tuple[str, ...]:
    forms = {_stem(word), word}
    for e in EVENTS:
        if word in e.cues or any(word == c.split()[-1] for c in e.cues if " " not in c):
            forms |= set(e.stems)
    if word in RELATED:
        forms |= set(RELATED[word])
    if (entity := lexicon.surfaces.get(word)) is not None:
        forms |= set(entity.evidence)
    if len(word) > 6 and word not in RELATED:
        forms |= set(term_evidence(word))
    return tuple(sorted(forms))


def _one(phrase: str, lexicon: ConditionLexicon, negated: bool = False) -> Concept | None:
    for e in EVENTS:  # "new lesions", "intensive care", "lose vision": a multi-word event cue names the event
        if any(" " in c and re.search(rf"\b{re.escape(c)}\b", phrase) for c in e.cues):
            return Concept(e.name, (e.stems,), negated, (), True, True)
    words = [w for w in re.findall(r"[a-z][a-z0-9+]*(?:-[a-z0-9]+)*", phrase) if w not in FRAME and len(w) > 1]
    if not words or all(_ordinary(w, lexicon) for w in words):
        return None
    name = " ".join(words)
    for e in EVENTS:
        if name in e.cues:
            return Concept(e.name, (e.stems,), negated, (), True, True)
    if (entity := lexicon.surfaces.get(name)) is not None:  # "ptx", "tension pneumothorax": one condition
        # named as asked when the doctor's word is not an abbreviation of it ("glioma", "honeycombing")
        shown = name if len(name) >= 5 and name not in entity.name.lower() else entity.name.lower()
        return Concept(shown, (tuple(entity.evidence),), negated)
    clinical = any(
        w in RELATED or w in lexicon.surfaces or any(w in e.cues for e in EVENTS) or _specific(w) for w in words
    )
    event = any(w in RELATED or any(w in e.cues for e in EVENTS) for w in words) and not any(
        w in lexicon.surfaces for w in words
    )
    return Concept(name, tuple(_forms(w, lexicon) for w in words), negated, (), clinical, event)


def concepts_of(text: str, lexicon: ConditionLexicon, context: str = "") -> list[Concept]:
    """The concepts a normalised count question counts (empty when it names none).

    ``context`` is the scan's AI reading: its name in the question ("mets in similar melanoma cases")
    says which cases, not what to count.
    """
    body = _TIME.sub(" ", re.sub(r"-(free)\b", r" \1", text))
    entity = lexicon.surfaces.get(context.lower())
    for surface in sorted(entity.surfaces if entity else (), key=len, reverse=True):
        if f" {surface} " in f" {body} " and body.strip() != surface:
            body = re.sub(rf"\b{re.escape(surface)}\b", " ", body)
    out: list[Concept] = []
    for piece in re.split(r"\bversus\b|\bvs\b|,|;|\band\b", body):
        piece = piece.strip()
        neg = _NEGATED.search(piece)
        if neg:
            target = (neg.group(1) or neg.group(2) or "").strip()
            if target in {"disease", "event", "events", "relapse"}:  # "disease-free": no recurrence, relapse or progression
                out.append(Concept("no recurrence or progression", (("recurrence", "recurred", "relapse", "progression"),), True))
                continue
            c = _one(target, lexicon, negated=True)
            if c is not None:
                out.append(Concept(f"no {c.name}", c.words, True))
            continue
        options = [c for alt in re.split(r"/|\bor\b", piece) if (c := _one(alt, lexicon)) is not None]
        if len(options) == 1:
            out.append(options[0])
        elif options:
            out.append(Concept(" or ".join(o.name for o in options), (), False, tuple(options),
                               any(o.clinical for o in options), all(o.event for o in options)))  # fmt: skip
    return out


def _form_re(form: str) -> str:
    """A stem matches the start of a word ("recurr" -> "recurrence"); a form of three letters or fewer is an
    abbreviation or a whole word and matches only whole ("ac" never matches "acquired", "mi" never "mild")."""
    return rf"\b{re.escape(form)}" + (r"\b" if len(form) <= 3 else "")


def _case_has(words: tuple[tuple[str, ...], ...], text: str) -> bool:
    return all(any(re.search(_form_re(f), text) for f in forms) for forms in words)


def matches(concept: Concept, text: str) -> bool | None:
    """True when ``text`` (a case's diagnosis and outcome, lower case) records the concept, False when it
    records it absent ("No recurrence at 5 years"), None when it does not mention it."""
    if concept.options:
        results = [matches(o, text) for o in concept.options]
        return True if True in results else (False if False in results else None)
    if not _case_has(concept.words, text):
        return None
    first = concept.words[0]
    absent = any(re.search(rf"\bno (?:new )?{re.escape(f)}", text) for f in first)
    if concept.negated:
        return bool(absent)
    return not absent
