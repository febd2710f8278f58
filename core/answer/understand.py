"""Question understanding: what a doctor asks (the intent) and what it names (entities, events).

A question is normalised (shorthand such as "pt", "f/u", "c/w", "ddx" expanded;
misspelt words corrected against the cue and entity vocabulary), then matched
against cue patterns in a fixed precedence: treatment and general knowledge are
recognised first because they are out of scope whatever else the question says.
Conditions and findings are found by surface form (longest first); a word shaped
like a disease name ("-itis", "-oma", "... syndrome") that the lexicon does not
know is kept as an unknown condition so it can be reported absent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING

from wordfreq import zipf_frequency

from core.answer.cues import CUES, SHORT_WORDS, SHORTHAND, Intent
from core.answer.lexicon import AMBIGUOUS_ABBREVIATIONS, ConditionLexicon, Entity, correct_token, default_lexicon
from core.answer.terms import correct_english

if TYPE_CHECKING:
    from core.answer.outcome_concepts import OutcomeReading

__all__ = ["COMMON", "EVENTS", "SEVERITIES", "Event", "Intent", "Understanding", "cue_intent", "normalise", "understand"]


@dataclass(frozen=True)
class Event:
    """Something an outcome may record (admission, death...): question cues and outcome stems."""

    name: str
    cues: tuple[str, ...]
    stems: tuple[str, ...]


# Outcome events a count question may ask about. Stems are matched in outcome text; "no <stem>"
# in an outcome records the event as absent for that case.
EVENTS: tuple[Event, ...] = (
    Event("admission", ("admission", "admitted", "admit", "hospitalised", "hospitalized", "hospital"), ("admission", "admitted", "hospital")),
    Event("intensive care", ("icu", "itu", "intensive care", "critical care"), ("intensive care",)),
    Event("death", ("died", "die", "death", "deaths", "dead", "mortality", "fatal", "passed away"), ("died", "death")),
    Event("relapse", ("relapse", "relapsed", "relapses", "flare"), ("relapse",)),
    Event("recurrence", ("recurrence", "recurred", "recur", "recurrent", "came back"), ("recurrence", "recurred")),
    Event("new lesions", ("new lesions", "new lesion"), ("new lesions",)),
    Event("progression", ("progression", "progressed", "progress", "grew", "growth", "worsened"), ("progression", "progressive", "growth")),
    Event("exacerbation", ("exacerbation", "exacerbations", "exacerbated"), ("exacerbation",)),
    Event("disability", ("disability", "disabled", "disabilities"), ("disability", "paraplegia")),
    Event("persistent pain", ("persistent pain", "chronic pain", "ongoing pain", "still in pain"),
          ("persistent radicular pain", "persistent pain", "chronic pain", "radicular pain")),
    Event("resolution", ("resolved", "resolve", "resolution", "cleared"), ("resolved", "cleared")),
    Event("recovery", ("recovered", "recover", "recovery", "got better"), ("recover",)),
    Event("stable course", ("stable", "stayed stable", "no change", "unchanged"), ("stable", "no change")),
    Event("perforation", ("perforated", "perforation", "perf"), ("perforat",)),
    Event("vision loss", ("vision loss", "lost vision", "lose vision", "loses vision", "losing vision", "lose sight",
                          "loses sight", "lost sight", "blind", "blindness", "go blind"), ("vision loss", "vision reduced")),
)
SEVERITIES = ("critical", "high", "moderate", "low")

# Measurements, grades and scores no bundle records (the evidence has diagnoses, outcomes, severities, reports).
_ATTRIBUTE = re.compile(
    r"\b(size|how big|how large|big|large|diameter|measure\w*|volume|\d+ ?(?:mm|cm)|bi-?rads|gleason|breslow|"
    r"tnm|stag(?:e|ing)|grade|grading|ki-?67|enhanc\w*|lesion load|cup-to-disc ratio)\b"
)
_ATTRIBUTE_LABELS = (
    ("bi-r", "BI-RADS category", "bi-rads"),
    ("birad", "BI-RADS category", "birads"),
    ("gleason", "Gleason score", "gleason"),
    ("breslow", "Breslow thickness", "breslow"),
    ("tnm", "TNM stage", "tnm"),
    ("stag", "Stage", "stage"),
    ("grad", "Grade", "grade"),
    ("ki", "Ki-67", "ki-67"),
    ("enhanc", "Enhancement", "enhanc"),
    ("lesion load", "Lesion load", "lesion load"),
    ("cup", "Cup-to-disc ratio", "cup-to-disc"),
)


def _attribute_label(word: str) -> tuple[str, str]:
    """(label for the reason sentence, stem to look up in the evidence) of a measurement word."""
    for prefix, label, stem in _ATTRIBUTE_LABELS:
        if word.startswith(prefix):
            return label, stem
    return "Size or measurement", "measur"


_DISEASE_SHAPE = re.compile(
    r"\b([a-z]+ )?([a-z]{4,}(?:itis|oma|osis|opathy|aemia|emia|ectasis|plasia))\b|"
    r"\b([a-z]+(?: [a-z]+)?) (syndrome|disease|disorder)\b"
)
# Words with a disease-like ending that are not conditions.
_NOT_CONDITIONS = frozenset({"prognosis", "diagnosis", "diagnoses", "pathophysiology", "neuropathy", "stenosis"})
COMMON = frozenset(
    str.split(
        "a an and are as at be been but by can could did do does for from had has have how i if in into is it its me "
    "my of on or our so than that the their them then there these they this those to was we were what when where "
    "which who why will with would you your any all about also he she his her him one two three some more most "
    "other others same now here just really honestly going get got look looked like looks ok okay well new old "
        "said say says go give given need needed needs take took type kind did done make makes made sure over time"
    )
)


@dataclass(frozen=True)
class Understanding:
    """The intent of a question and what it names."""

    intent: Intent
    text: str
    entities: tuple[Entity, ...] = ()
    unknown: tuple[str, ...] = ()
    event: Event | None = None
    severity: str | None = None
    attributes: tuple[tuple[str, str], ...] = ()  # (label, stem looked up in the evidence)
    corrected: dict[str, str] = field(default_factory=dict)
    confidence: float = 1.0  # the classifier's probability of ``intent`` (1.0 for the cue patterns)
    terms: tuple[str, ...] = ()  # other clinical terms the question names (open vocabulary)
    # A term typed alone ("cipro?") that may name a treatment as well as a finding: looked up, and pointed too.
    may_treat: bool = False
    # A count's phrase read as a recorded outcome concept ("went downhill" -> progression), used only when its words
    # match no cited case (core.answer.outcome_concepts).
    outcome: OutcomeReading | None = None
    said: tuple[tuple[str, str], ...] = ()  # (entity name, the words the question used for it)

    def named(self, entity: Entity) -> str:
        """The entity as the question named it: the doctor's own word when it is a whole word that the entity's
        name does not contain ("glioma", "honeycombing"), else the entity's name ("PTX" is Pneumothorax)."""
        typed = dict(self.said).get(entity.name, "")
        return typed if len(typed) >= 5 and typed not in entity.name.lower() else entity.name


@lru_cache(maxsize=4)
def _vocabulary(lexicon: ConditionLexicon) -> tuple[str, ...]:
    words: set[str] = set(COMMON) | set(SHORT_WORDS.values())
    for _, pattern in CUES:  # whole cue words only: a stem ("medicat" of "medicat\\w*") is no spelling
        words |= {m.group(0) for m in re.finditer(r"[a-z]{4,}", pattern) if pattern[m.end() : m.end() + 2] != "\\w"}
    for s in lexicon.surfaces:
        words |= set(s.split())
    for e in EVENTS:
        for c in e.cues:
            words |= set(c.split())
    words |= {"similar", "cases", "case", "matches", "matched", "patients", "patient", "scan", "scans", "findings",
              "outcomes", "prognosis", "diagnosis", "diagnoses", "severity", "critical", "compared", "comparable",
              "which", "what", "many", "worse", "better", "worried", "really", "looked", "turn", "turned",
              "clinical", "clinically", "summarise", "summarize", "summary", "course", "picked", "lookalike", "lookalikes", "look-alike", "look-alikes",
              "happened", "similarly", "closely", "matching", "considered", "consider", "others", "another",
              "current", "recent", "latest", "images", "image", "imaging", "study", "studies", "report",
              "reports", "reading", "result", "results", "think", "should", "could", "would", "patterns",
              "pattern", "finding", "explain", "tell", "show", "shows", "list", "order", "first",
              "chance", "change", "changes", "changed", "range", "means", "mean", "meaning", "match", "since", "after", "before", "still", "there", "where", "when", "while", "either", "whether",
              "medical", "history", "symptoms", "symptom", "pain", "relevant", "treated", "treatment",
              "management", "therapy", "medication", "prognostic", "diagnostic", "operation", "surgery",
              "severe", "seriously", "serious", "urgent", "urgency", "emergency", "concerned", "concern",
              "concerning", "happen", "outcome", "survival", "survive", "survived", "diagnosed", "agree",
              "agreement", "confident", "confidence", "differential", "previously", "progressed",
              "progression", "recovery", "recovered", "similarity", "compare",
              # the imaging a doctor names when speaking of this scan: never a finding to look up
              "mammogram", "mammograms", "mammography", "mammo", "ultrasound", "radiograph", "radiography",
              "tomography", "angiogram", "sonogram", "film", "films", "xray", "x-ray"}
    return tuple(sorted(words))


_REAL_WORD_ZIPF = 3.0  # an English word this common ("drain") is never "corrected" to a vocabulary word ("brain")
_SUFFIX = re.compile(r"(?:itis|omas?|osis|oses|opathy|aemia|emia|ectasis|plasia)$")


def normalise(question: str, lexicon: ConditionLexicon | None = None) -> tuple[str, dict[str, str]]:
    """Lower-case text with shorthand expanded and misspellings corrected; also the corrections made."""
    text = question.lower()
    for pattern, repl in SHORTHAND:
        text = re.sub(pattern, repl, text)
    tokens = re.findall(r"[a-z0-9%]+(?:[-'][a-z0-9]+)*|[?]", text)
    lex = lexicon or default_lexicon()
    vocab = _vocabulary(lex)
    known = set(vocab)
    corrected: dict[str, str] = {}
    out: list[str] = []
    for tok in tokens:
        word = SHORT_WORDS.get(tok, tok)
        if word == tok and tok not in known and zipf_frequency(tok, "en") < _REAL_WORD_ZIPF:
            # each piece of a hyphenated word on its own ("in-tranist" -> "in-transit")
            fixed = "-".join(_corrected(piece, lex, vocab, known) for piece in tok.split("-"))
            if fixed != tok:
                corrected[tok] = fixed
                word = fixed
        out.append(word)
    return " ".join(out).replace(" ?", "?"), corrected


def _corrected(tok: str, lex: ConditionLexicon, vocab: tuple[str, ...], known: set[str]) -> str:
    """One word's spelling: the vocabulary's word within one edit, else English's (see :func:`normalise`)."""
    if tok in known or zipf_frequency(tok, "en") >= _REAL_WORD_ZIPF or not tok.replace("'", "").isalnum():
        return tok
    # A disease-shaped word is corrected only to a whole condition name, never to part of one.
    fixed = correct_token(tok, lex.single_words if _SUFFIX.search(tok) else vocab)
    if fixed == tok:
        fixed = correct_english(tok)  # a misspelt word outside the vocabulary ("amyliod")
        if _SUFFIX.search(tok) and not _SUFFIX.search(fixed):
            fixed = tok  # a disease-shaped word keeps its shape: "cavernomas" is no typo of "cavernous"
    return fixed


def _entities(question: str, text: str, lex: ConditionLexicon) -> tuple[list[Entity], list[str], list[tuple[str, str]]]:
    """Entities by surface form, longest first, unknown disease-shaped phrases, and (entity, words typed) pairs."""
    found: list[Entity] = []
    said: list[tuple[str, str]] = []
    plain = f" {re.sub(r'[-_?]', ' ', text)} "
    upper = set(re.findall(r"\b[A-Z]{2,5}\b", question))
    for surface in lex.by_length:
        if f" {surface} " not in plain:
            continue
        if surface in AMBIGUOUS_ABBREVIATIONS and surface.upper() not in upper:
            continue
        entity = lex.surfaces[surface]
        if entity not in found:
            found.append(entity)
            said.append((entity.name, surface))
        plain = plain.replace(f" {surface} ", " # ")
    unknown = []
    for m in _DISEASE_SHAPE.finditer(plain):
        phrase = " ".join(g for g in m.groups() if g).strip()
        head = m.group(2) or m.group(3) or ""
        if head in _NOT_CONDITIONS or "#" in phrase:
            continue
        words = [w for w in phrase.split() if w not in COMMON]
        if words and (m.group(2) or len(words) > 1):  # "the disease" names nothing; "Zorblax syndrome" does
            unknown.append(" ".join(words))
    return found, unknown, said


def _event(text: str) -> Event | None:
    best: tuple[int, Event] | None = None
    for e in EVENTS:
        for cue in e.cues:
            m = re.search(rf"\b{re.escape(cue)}\b", text)
            if m and (best is None or m.start() < best[0]):
                best = (m.start(), e)
    return best[1] if best else None


def cue_intent(text: str) -> Intent:
    """The intent of normalised ``text`` by the cue patterns (first match in precedence), else ``summary``."""
    for name, pattern in CUES:
        if re.search(pattern, text):
            return name
    return "summary"


def understand(
    question: str, lexicon: ConditionLexicon | None = None, intent: Intent | None = None, confidence: float = 1.0
) -> Understanding:
    """Intent, entities, unknown condition names and the count target of ``question``.

    ``intent`` is the reader's (the learned classifier's) when given, else the cue patterns'.
    """
    lex = lexicon or default_lexicon()
    text, corrected = normalise(question, lex)
    chosen: Intent = intent or cue_intent(text)
    found, unknown, said = _entities(question, text, lex)
    event = _event(text)
    if chosen in {"summary", "outcomes", "differential"} and event is not None and not found and intent is None:
        chosen = "count"  # "any ICU admissions?", "appendix perforated?": how many cases record the event
    attributes: tuple[tuple[str, str], ...] = ()
    if (m := _ATTRIBUTE.search(text)) and chosen not in {"treatment", "general_knowledge", "why_similar"}:
        attributes = (_attribute_label(m.group(0)),)  # a measurement or grade: absent unless the evidence has it
    severity = next((s for s in SEVERITIES if re.search(rf"\b{s}\b", text)), None)
    if severity in {"high", "low", "moderate"} and not re.search(r"\bsever\w*\b", text):
        severity = None
    return Understanding(
        intent=chosen,
        text=text,
        entities=tuple(found),
        unknown=tuple(unknown),
        event=event,
        attributes=attributes,
        severity=severity,
        corrected=corrected,
        confidence=confidence,
        said=tuple(said),
    )
