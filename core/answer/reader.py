"""Read a question once into its parts, each with an intent, the conditions it names and its other clinical terms.

:class:`QuestionReader` splits the question (:mod:`core.answer.split`), embeds every
part in one batch with the project's e5 embedder and asks the learned classifier
(:mod:`core.answer.intent_model`) for each part's intent; the cue patterns are one of
its features and decide alone when no embedder or model is at hand. Then:

* a part that names conditions but asks nothing of its own ("tb vs ca vs pneumonia"
  after "ddx among similar cases?") joins the part before it;
* an outcome question that mentions surgery, admission or a procedure is an outcome
  question: only a request for what to do for *this* patient is treatment;
* rare words the lexicon does not know are kept as clinical terms (:mod:`core.answer.terms`)
  so that each is either matched to the evidence or reported as not recorded.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Container
from dataclasses import dataclass, replace

import numpy as np
from wordfreq import zipf_frequency

from core.answer.cues import CUES, Intent
from core.answer.guards_text import looks_injected
from core.answer.intent_model import IntentModel, features
from core.answer.lexicon import ConditionLexicon, default_lexicon
from core.answer.outcome_concepts import OutcomeReader
from core.answer.parts_answer import about_future
from core.answer.split import Split, split_question
from core.answer.terms import clinical_terms
from core.answer.understand import COMMON, EVENTS, Understanding, _vocabulary, cue_intent, normalise, understand

__all__ = ["INSTRUCTION_PLACES", "INTENT_LABELS", "QuestionReader", "Reading"]

# Where instructions found by the patterns sat: the refused part's text, named in the answer.
INSTRUCTION_PLACES = ("the pasted text", "a part of the question")

log = logging.getLogger(__name__)

# What a part was read as, in the doctor's words ("Read as: outcomes of similar cases").
INTENT_LABELS: dict[str, str] = {
    "injection": "instructions to the assistant",
    "off_topic": "a request outside this scan",
    "outcomes": "outcomes of similar cases",
    "count": "how many similar cases record something",
    "differential": "the diagnoses among similar cases",
    "severity": "how severe similar cases were",
    "prior": "a comparison with this patient's prior reports",
    "why_similar": "why these cases are similar",
    "treatment": "what to do for this patient",
    "prediction": "this patient's future",
    "general_knowledge": "general medical knowledge",
    "demographics": "the ages and sexes of similar cases",
    "summary": "a summary of similar cases",
}
# A request for what to do for this patient (the only treatment questions).
_ACTION = re.compile(
    r"\b(should (?:we|i|he|she|they|the patient|this patient|pt)|shall we|do we|can we|would you|what (?:should|do) we|"
    r"(?:what|which) (?:treatment|therapy|drug|antibiotic|dose|dosage|regimen|management|medication)|"
    r"how (?:should|do|would) (?:we|i|you) (?:treat|manage)|how to (?:treat|manage)|treat (?:this|him|her|it)|"
    r"manage (?:this|him|her|it)|(?:dose|dosing|dosage) of|recommend\w*|next step|plan for|candidate for|"
    r"what to (?:do|give|start)|give (?:him|her|them)|start (?:him|her|them|on)|for (?:this|the) patient|"
    r"(?:ok|safe|appropriate|suitable|indicated|fine) (?:for|to give|to start) (?:him|her|them)|"
    r"(?:does|do) (?:he|she|we|the patient|this patient|pt) (?:still )?(?:need|require)(?! to (?:be )?(?:worr|concern|alarm|anxious)))\b"
)
# A request for what to do for this patient, whatever the classifier read ("should he have surgery?").
_REQUEST = re.compile(
    r"\b(?:should|shall|must|do|can) (?:we|i|he|she|they|the patient|this patient|pt|him|her) (?:start|give|treat|"
    r"operate|use|try|add|stop|switch|refer|admit|discharge|anticoagul\w*|consider|offer|go on|get|have|be (?:given|"
    r"started|treated|referred|admitted|operated|discharged))\b|\bwhat (?:should|do|would) (?:we|i|you) (?:do|give|start|"
    r"use|recommend)\b|\bhow (?:should|do|would) (?:we|i|you) (?:treat|manage)\b|\b(?:best|first-line|recommended) "
    r"(?:treatment|therapy|management|drug|antibiotic|option)\b|\bnext steps?\b|\bmanagement plan\b|"
    r"\bis (?:it|\w+) (?:ok|safe|indicated|appropriate) (?:to|for)\b|"
    r"\b(?:does|do) (?:he|she|we|the patient|this patient|pt) (?:still )?(?:need|require)(?! to (?:be )?(?:worr|concern|alarm|anxious))\b|"
    r"\b(?:is|would) (?:he|she|the patient|this patient|pt)(?: be)? (?:a |an )?(?:good |suitable |reasonable )?(?:\w+ )?candidate\b"
)
# "X or Y for her?", "pleurodesis now?": an option put for this patient, with nothing else asked. Not "them":
# "hyperinflation in them?", "any enhancement in them" ask about the similar cases.
_FOR_THIS_PATIENT = re.compile(
    r"\b(?:for|in|on) (?:him|her|this (?:patient|pt|man|woman|lady|guy|one)|(?:mr|mrs|ms|miss) \w+)\??$|\bnow\??$"
)
# A dose or a named drug asked about for this patient is always treatment ("degarelix dose?").
_DOSE_OR_DRUG_REQUEST = re.compile(
    r"\b(doses?|dosing|dosage|mg|regimen|prescri\w*)\b|\b(?:what|which) (?:drug|antibiotic|medication)\b|"
    r"\b(?:for|in) (?:him|her|this (?:patient|pt|man|woman|lady|guy))\b.*\b\w+(?:mab|nib|cillin|mycin|azole|floxacin|parin|xaban)\b"
)
_DRUG = re.compile(r"\b(\w+(?:mab|nib|cillin|mycin|pril|olol|statin|parin|xaban|plase|azole|floxacin)|doses?|dosing|mg)\b")
# A forecast asked for ("will he need surgery", "is she likely to"), not a plan with a time in it ("repeat MRI in 6 months").
_FORECAST = re.compile(
    r"\b(?:will|would|is|are|was) (?:he|she|they|it|pt|patient|the patient|this patient)\b|\b(?:going to|gonna|likely|"
    r"likelihood|chances?|odds|end up|prognosis|outlook|life expectancy|expect\w*|how long (?:does|will|has))\b"
)
# A go-ahead asked for this patient ("when can he fly again", "ok for her to drive"): advice, not a prediction.
_CLEARANCE = re.compile(
    r"\bwhen (?:can|could|should|may|is it (?:ok|safe)) (?:he|she|they|i|we|patient|the patient|this patient)\b|"
    r"\b(?:ok|okay|safe|fine|alright|allowed) (?:for (?:him|her|them|the patient) )?to\b"
)
# The part speaks of this patient ("is it safe to discharge her", "what's his BP"): about the scan, never off topic.
_ABOUT_PATIENT = re.compile(r"\b(?:he|she|him|her|his|hers|patient|this (?:man|woman|lady|guy|gentleman|boy|girl|child))\b")
# "in his case" is this patient, not a past case.
_PAST_CASES = re.compile(
    r"\b(they|them|similar|(?<!his )(?<!her )(?<!this )cases?|others?|patients|those|these|any (?:of|one)|how many|were|did)\b"
)
_ASKS = re.compile(r"^(?:and |also )*(?:what|which|how|why|who|when|where|is|are|was|were|do|does|did|can|could|should|would|will|shall)\b")
_SENTENCE_END = re.compile(r"(?<=[.!])\s+(?=[A-Z])")  # "Play the role of X. How many died": two sentences
_NO_ASK = re.compile(r"^(?:and |also |or )*(?:[a-z-]+(?: |$)){0,6}$")


@dataclass(frozen=True)
class Reading:
    """The question's parts (each an :class:`Understanding`), the pasted report, and how the intents were chosen."""

    parts: tuple[Understanding, ...]
    report: str | None = None
    classifier: str = "cues"  # "logreg" / "centroid" (the learned model) or "cues"

    def read_as(self, below: float) -> list[str]:
        """"Read as: ..." lines for parts whose intent probability is below ``below``."""
        return [f"Read as: {INTENT_LABELS.get(p.intent, p.intent)}." for p in self.parts if p.confidence < below]


class QuestionReader:
    """Reads questions with a lexicon, an optional embedder and the shipped intent model."""

    def __init__(
        self,
        lexicon: ConditionLexicon | None = None,
        embed: Callable[[list[str]], np.ndarray] | None = None,
        embed_model_id: Callable[[], str] | None = None,
        model: IntentModel | None = None,
        fallback_below: float = 0.55,
        word_kind: IntentModel | None = None,
        outcomes: OutcomeReader | None = None,
    ) -> None:
        self.lexicon = lexicon or default_lexicon()
        self._embed = embed
        self._embed_model_id = embed_model_id
        self.model = model
        self.word_kind = word_kind
        self.outcomes = outcomes
        self.fallback_below = fallback_below
        self._checked = False
        self._domain_words: frozenset[str] | None = None

    def _usable_model(self) -> IntentModel | None:
        if self.model is None or self._embed is None or self._embed_model_id is None:
            return None
        if not self._checked:
            self._checked = True
            if not self.model.usable(self._embed_model_id()):
                log.warning("The intent model was trained on %s; the cue patterns decide instead", self.model.model_id)
                self.model = None
        return self.model

    def _domain(self) -> frozenset[str]:
        """Words that place a question in this domain: the reader's vocabulary, less everyday English."""
        if self._domain_words is None:
            from core.answer.concepts import FRAME

            off = {w for name, pattern in CUES if name in {"off_topic", "injection"} for w in re.findall(r"[a-z]{3,}", pattern)}
            self._domain_words = frozenset(_vocabulary(self.lexicon)) - COMMON - off | (FRAME - COMMON)
        return self._domain_words

    def warm(self) -> None:
        """Load what the first question would otherwise load (the embedder, the English word lists)."""
        from core.answer.terms import correct_english, is_rare

        self.intents(["warm up"])
        correct_english("warmupp")
        is_rare("warmup")

    def intents(self, texts: list[str]) -> list[tuple[Intent, float]]:
        """(intent, probability) of each normalised part text: the classifier's, else the cue patterns' at 1.0."""
        return [(intent, p) for intent, p, _ in self._choices(texts)]

    def _choices(self, texts: list[str]) -> list[tuple[Intent, float, Intent]]:
        """(intent, probability, runner-up) of each part; the runner-up is the classifier's second reading."""
        cues = [cue_intent(t) for t in texts]
        model = self._usable_model()
        if model is None or self._embed is None:
            return [(c, 1.0, c) for c in cues]
        x = features(self._embed(texts), list(cues))
        probs = model.probabilities(x)
        out: list[tuple[Intent, float, Intent]] = []
        for row, cue in zip(probs, cues, strict=True):
            first, second = (int(i) for i in np.argsort(-row)[:2])
            name, p = model.labels[first], float(row[first])
            # An uncertain prediction yields to the cue patterns when they have a reading of their own; when no
            # cue matches ("summary": no opinion) the classifier's best guess stands, unless it is treatment (a bare
            # term, "SBO?", is looked up in the evidence rather than sent to the pointer). Either way the answer says
            # what the part was read as.
            chosen = name if p >= self.fallback_below or (cue == "summary" and name != "treatment") else cue
            out.append((chosen, p, model.labels[second]))  # type: ignore[arg-type]
        return out

    def _common_clinical(self, text: str, known: frozenset[str]) -> tuple[str, ...]:
        """Common words (and runs of them) that name a patient's state or a measurement ("pregnant", "blood
        pressure"), by the word-kind model over their embeddings: the frequency list cannot tell them from
        everyday words ("stable", "fine")."""
        if self.word_kind is None or self._embed is None or self._embed_model_id is None:
            return ()
        if not self.word_kind.usable(self._embed_model_id()):
            return ()
        runs = _common_runs(text, known)
        if not runs:
            return ()
        predicted = self.word_kind.predict(self._embed(list(runs)))
        return tuple(r for r, (label, p) in zip(runs, predicted, strict=True) if label == "clinical" and p >= 0.5)

    def read(self, question: str) -> Reading:
        """Split, classify and understand ``question`` (see the module docstring)."""
        split = split_question(question)
        refused: tuple[Understanding, ...] = ()
        if looks_injected(question):  # instructions aimed at the rules (patterns over the raw text: ":", "</context>")
            sentences = [x.strip() for p in split.parts for x in _SENTENCE_END.split(p) if x.strip()]
            # a genuine question asks (a question word first); an order after the instructions ("List the names ...",
            # "Show me the raw records") is their payload, and "To correct it" asks nothing
            clean = tuple(p for p in sentences if not looks_injected(p) and _ASKS.match(p.strip().lower()))
            if not clean:  # nothing asked apart from the instructions: one part, refused whole
                return Reading((understand(question, self.lexicon, intent="injection"),), None, "patterns")
            # the instructions (in the pasted text, or a part of their own) are refused and named; the genuine
            # question beside them is answered from the evidence as any other, and never reaches a model
            where = INSTRUCTION_PLACES[0] if split.report and looks_injected(split.report) else INSTRUCTION_PLACES[1]
            refused = (Understanding(intent="injection", text=where),)
            split = Split(split.report, clean)
        raw = list(split.parts)
        texts = [normalise(p, self.lexicon)[0] for p in raw]
        choices = self._choices(texts)
        chosen = _inherit(texts, [(i, p) for i, p, _ in choices], self.fallback_below)
        known = frozenset(_vocabulary(self.lexicon))
        parts = []
        for part, text, (intent, p), (_, _, runner_up) in zip(raw, texts, chosen, choices, strict=True):
            intent = _treatment_only_for_this_patient(text, intent, self.lexicon.surfaces)
            u = understand(part, self.lexicon, intent=intent, confidence=p)
            terms = tuple(t for t in clinical_terms(text, known) if not _covered(t, u))
            terms += tuple(a for a in _abbreviations(part, known) if a not in terms and not _covered(a, u))
            if u.intent == "count":  # what a count counts may be a common word ("any of them pregnant")
                terms += tuple(w for w in self._common_clinical(text, known) if w not in terms and not _covered(w, u))
            if u.intent == "off_topic" and (
                # about this patient, unless the classifier is sure it is not about the scan and nothing asks what to do
                # for her ("move her mammo to friday", "book an interpreter for him": logistics)
                (_ABOUT_PATIENT.search(text) and (p < self.fallback_below or bool(_REQUEST.search(text) or _ACTION.search(text))))
                or (p < self.fallback_below and (terms or u.entities or u.unknown))
                or (runner_up == "treatment" and p < self.fallback_below)
            ):  # "not about a scan" for a part about this patient, unsure for one naming a clinical term, or read
                # next as a request for what to do ("where do we go from here", "would you add a macrolide"): on a
                # scan's page that asks about this patient, and the pointer cites nothing either: the next reading
                u = understand(part, self.lexicon, intent=_treatment_only_for_this_patient(text, runner_up, self.lexicon.surfaces), confidence=p)
            if u.intent not in {"off_topic", "injection", "treatment"} and p < self.fallback_below and _off_topic(
                text, terms, u, self._domain()
            ):
                u = replace(u, intent="off_topic")
            # a confident reading other than a look-up or a request stands ("AI conf?" is the AI reading; "sudoku?" is
            # off topic); a look-up, a request or an unsure reading of a lone term is the lone-term answer
            sure = p >= self.fallback_below and u.intent not in {"count", "treatment"}
            if u.intent not in {"injection", "prediction"} and not sure and _bare_term(text, bool(_ACTION.search(text) or _DRUG.search(text)),
                                                                          self.lexicon.surfaces):  # fmt: skip
                u, terms = _lone_term(part, text, u, terms, self.lexicon)
            if u.intent == "count" and self.outcomes is not None:  # "went downhill": an outcome in other words
                u = replace(u, outcome=self.outcomes.read(u.text))
            parts.append(replace(u, terms=terms))
        model = self._usable_model()
        return Reading((*refused, *parts), split.report, model.design if model is not None else "cues")


def _inherit(texts: list[str], chosen: list[tuple[Intent, float]], below: float) -> list[tuple[Intent, float]]:
    """A fragment that asks nothing of its own ("tb vs ca vs pneumonia" after "ddx among similar cases?")
    takes the intent of the part before it when its own reading is uncertain."""
    out: list[tuple[Intent, float]] = []
    for text, (intent, p) in zip(texts, chosen, strict=True):
        fragment = bool(_NO_ASK.match(text)) and not _ASKS.match(text) and cue_intent(text) == "summary"
        if out and fragment and p < below:
            intent, p = out[-1][0], max(p, out[-1][1])
        out.append((intent, p))
    return out


def _treatment_only_for_this_patient(text: str, intent: Intent, conditions: Container[str] = ()) -> Intent:
    """Outcome questions about surgery or admission are outcomes; treatment needs a request about this patient.

    A dose, a drug or "should we ..." about this patient is treatment whatever else the part says;
    "will he need surgery" (no request for what to do) is a question about his future.
    """
    action = bool(_ACTION.search(text) or _DRUG.search(text))
    if intent not in {"injection", "treatment"} and _options(text, conditions):
        return "treatment"  # "NSAIDs or opioids", "brachy or external beam": an option put for this patient
    if intent == "off_topic" and _INDICATED.search(text):
        return "treatment"  # "is a PSMA PET indicated": a request, whatever the classifier read
    if intent == "injection" and (_DOSE_OR_DRUG_REQUEST.search(text) or cue_intent(text) == "treatment"):
        # the classifier's injection reading with no instruction pattern (the whole question passed those): a dose or
        # a drug asked for this patient ("start apixaban when? dose") is a request, pointed (no dose either way)
        return "treatment"
    if intent == "treatment" and _bare_term(text, action, conditions):
        return "count"  # a lone term ("DVT?", "pneumoperitoneum?") asks whether the evidence records it
    if intent == "treatment" and not action:
        if _PAST_CASES.search(text):
            return "count" if re.search(r"\b(how many|any|number of|proportion)\b", text) else "outcomes"
        if about_future(text) and _FORECAST.search(text) and not _CLEARANCE.search(text):
            return "prediction"
    if intent not in {"injection", "off_topic", "treatment"} and (
        _DOSE_OR_DRUG_REQUEST.search(text)
        or _REQUEST.search(text)
        or (cue_intent(text) == "treatment" and not _PAST_CASES.search(text) and not about_future(text))
        or (_FOR_THIS_PATIENT.search(text) and cue_intent(text) == "summary" and not about_future(text))
    ):
        return "treatment"  # treatment words about no past case: a question about what to do for this patient
    return intent


# Endings that make a word a disease or a finding, never a treatment ("cholangitis", "lymphangiosis", "haemothorax").
_FINDING_SHAPE = re.compile(
    r"(?:itis|osis|oses|omas?|omata|a?emia|pathy|ectasis|plasia|trophy|megaly|rrhage|rrhoea|rrhea|celes?|liths?|iasis|"
    r"algia|penia|o?edema|thorax|ism|isms|spasm|stenosis|cysts?|nodules?|lesions?|masse?s?|fractures?)$"
)


def _lone_term(part: str, text: str, u: Understanding, terms: tuple[str, ...], lexicon: ConditionLexicon) -> tuple[Understanding, tuple[str, ...]]:
    """A term typed alone ("cipro?", "fat stranding?", "DVT?"): a look-up in the evidence, pointed as well when it may
    name a treatment.

    The reader cannot tell a lone drug or procedure from a lone finding (the classifier reads "SLNB?" as a count
    and "cotton wool spots" as treatment), so the part is looked up (a count: "X is not recorded in the evidence of
    these N cases", or the cases that record it) and, unless the term is a condition the lexicon knows, an outcome
    event, a measurement, or shaped like a disease or finding ("-itis", "-oma", "-thorax"), the pointer is added:
    each sentence is correct for one reading, and neither advises.
    """
    words = [w for w in re.findall(r"[a-z0-9][a-z0-9'-]*", text) if w not in {"any", "anyone", "the", "a", "an"}]
    phrase = " ".join(words)
    if not terms and not u.entities and not u.unknown and u.event is None and not u.attributes and phrase:
        terms = (phrase,)  # common words that name a finding together ("fat stranding"): the phrase is the term
    # a condition only when it is the whole term: "appy" is appendicitis, "lap appy" a procedure
    finding = bool(u.event is not None or u.attributes or phrase in lexicon.surfaces
                   or any(_FINDING_SHAPE.search(w) for w in words))  # fmt: skip
    return replace(understand(part, lexicon, intent="count", confidence=u.confidence), may_treat=not finding), terms


_INDICATED = re.compile(r"\b(?:is|are|would|be) (?:an? |the )?[a-z0-9 -]{1,30}\bindicated\b")
_OPTION_SIDE = re.compile(r"^(?:an? |the )?[a-z0-9-]+(?: [a-z0-9-]+){0,2}$")


def _options(text: str, conditions: Container[str]) -> bool:
    """True when the part only puts options side by side ("NSAIDs or opioids", "brachy or external beam"): short
    sides, no question word, none a condition the lexicon knows or a word shaped like a finding ("cyst or abscess"),
    at least one side a rare word. Conditions side by side ("tb vs ca vs pneumonia") are a differential."""
    sides = [x.strip(" ?") for x in re.split(r"\b(?:or|vs|versus)\b", text)]
    if len(sides) < 2 or not all(_OPTION_SIDE.match(x) for x in sides) or _ASKS.match(text) or cue_intent(text) != "summary":
        return False
    words = [w for x in sides for w in x.split()]
    events = {c for e in EVENTS for c in e.cues}
    if ({"any", "count", "counts", "number", "recorded", "seen", "them", "cases"} | events) & set(words) or any(
        w[0].isdigit() for w in words
    ):
        return False  # "any cavitation or any CJD", "distant vs local recurrence counts": asked of the similar cases
    if any(x in conditions or w in conditions for x in sides for w in x.split()) or any(_FINDING_SHAPE.search(w) for w in words):
        return False
    return any(zipf_frequency(w, "en") < _TERM_ZIPF for w in words)


def _common_runs(text: str, known: frozenset[str]) -> tuple[str, ...]:
    """Runs of common content words (Zipf 4.4 to 5.5) that no vocabulary, frame word or event already covers."""
    from core.answer.concepts import FRAME

    runs: list[str] = []
    run: list[str] = []
    for w in [*re.findall(r"[a-z][a-z'-]*[a-z]", text), ""]:
        if (w and len(w) > 2 and w not in known and w not in FRAME and w not in COMMON and cue_intent(w) == "summary"
                and 4.4 <= zipf_frequency(w, "en") < 5.5):  # fmt: skip
            run.append(w)
            continue
        if run:
            runs.append(" ".join(run))
            run = []
    return tuple(dict.fromkeys(runs))


def _bare_term(text: str, action: bool, conditions: Container[str] = ()) -> bool:
    """A part that is only a term or two: no request, no option ("X or Y"), no treatment cue, no "for him", no "now".

    Doctors type a lone finding to ask whether the similar cases record it ("SBO?", "empyema any"); a lone
    drug name is as short, and the classifier cannot tell the two apart reliably, so a lone term is looked
    up in the evidence ("X is not recorded in the evidence of these N cases"), which never advises. A term is
    a word English rarely uses or a condition the lexicon knows ("stroke"); "the plan?", "intervention
    needed?" are everyday words: a request, left to the classifier.
    """
    words = [w for w in re.findall(r"[a-z0-9][a-z0-9'-]*", text) if w not in {"any", "anyone", "the", "a", "an"}]
    return (
        len(words) <= 3
        and (any(zipf_frequency(w, "en") < _TERM_ZIPF or w in conditions for w in words) or " ".join(words) in conditions)
        and not action
        and cue_intent(text) == "summary"
        and not re.search(r"\b(?:or|versus|vs|and|now|first|should|when|which|what|how|needs?|needed|requires?|required|"
                          r"indicated|worth|try|trial|give|start|stop)\b", text)
        and not _FOR_THIS_PATIENT.search(text)
        and not _ABOUT_PATIENT.search(text)
        and not _REQUEST.search(text)
    )


_TERM_ZIPF = 4.0  # a lone word rarer than this in English may name a finding ("dvt"); "plan" (5.1) does not


_NOT_TERMS = frozenset({"ai", "ct", "mri", "cxr", "pet", "oct", "us", "uss", "xr", "pt", "pts", "dx", "ddx", "hx", "rx",
                        "tx", "sx", "fu", "ok", "pls", "asap", "icu", "itu", "ed", "er", "gp", "md", "dr", "the", "and"})


def _abbreviations(part: str, known: frozenset[str]) -> tuple[str, ...]:
    """Capitalised abbreviations ("DVT", "AKI", "HIV") the lexicon does not know: clinical terms to look up."""
    out = []
    for a in re.findall(r"\b[A-Z][A-Z0-9]{1,5}\b", part):
        low = a.lower()
        if low not in _NOT_TERMS and low not in known and zipf_frequency(low, "en") < 3.5:
            out.append(low)
    return tuple(dict.fromkeys(out))


def _off_topic(text: str, terms: tuple[str, ...], u: Understanding, vocabulary: frozenset[str]) -> bool:
    """Nothing in the part is about a scan: no clinical term, condition, event or question word of this domain."""
    if _names_clinical(terms, u) or _ABOUT_PATIENT.search(text) or about_future(text) or cue_intent(text) != "summary":
        return False
    words = [w for w in re.findall(r"[a-z]+", text) if w not in COMMON and len(w) > 2]
    return bool(words) and not any(w in vocabulary for w in words)


def _names_clinical(terms: tuple[str, ...], u: Understanding) -> bool:
    """True when the part names a clinical term, a condition, an outcome event or a measurement."""
    return bool(terms or u.entities or u.unknown or u.event or u.attributes)


def _covered(term: str, u: Understanding) -> bool:
    """True when the lexicon, an outcome event or a measurement already covers ``term``."""
    names = " ".join([*(s for e in u.entities for s in e.surfaces), *u.unknown, *(label.lower() for label, _ in u.attributes)])
    if u.event is not None and any(term in c or c in term for c in u.event.cues):
        return True
    return term in names
