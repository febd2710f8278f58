"""Outcomes asked in paraphrase: "went downhill", "didn't make it", "ended up on a ventilator".

A count's phrase is matched to the evidence by its words first (:mod:`core.answer.concepts`).
When no cited case records those words, the phrase may still name a recorded outcome in other
words. :class:`OutcomeReader` reads it with a small learned model: a logistic regression over
the phrase's e5 query embedding (the project's own embedder), trained by ``python -m core
train-ask-intent`` on the count parts of both outside sets' train splits and the team's own
examples (``core/askeval/data/outcome_examples.json``), shipped as
``core/answer/data/outcome_kind.npz``. Its labels are outcome concepts; each concept is counted
over the cited cases by the stems that record it (:data:`OUTCOME_STEMS`, the outcome events'
own stems where one exists), never by the paraphrase. ``other`` (a finding, a condition, a
procedure, a patient detail) and any reading below ``ask.outcome_read_min`` leave the phrase
as it was: stated not recorded when it is clinical. The answer always says what it read the
phrase as, so a doctor sees a wrong reading at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from core.answer.intent_model import IntentModel
from core.answer.understand import EVENTS

__all__ = ["OTHER", "OUTCOME_MODEL_PATH", "OUTCOME_STEMS", "OutcomeReader", "concept_phrase"]

OUTCOME_MODEL_PATH = Path(__file__).parent / "data" / "outcome_kind.npz"
OTHER = "other"
# How a case's diagnosis or outcome records each concept (word starts, as AnswerFacts.count_terms matches them).
OUTCOME_STEMS: dict[str, tuple[str, ...]] = {e.name: e.stems for e in EVENTS} | {
    "residual changes": ("residual",),
    "biochemical recurrence": ("biochemical recurrence",),
    "distant recurrence": ("distant recurrence", "metasta", "liver recurrence"),
    "local recurrence": ("local recurrence",),
    "decline in function": ("decline",),
    "weakness": ("weakness",),
}
_TIME = re.compile(r"\b\d+\s*-?\s*(?:m|mo|mos|month|months|y|yr|yrs|year|years|w|wk|wks|week|weeks|d|day|days)\b")


def concept_phrase(normalised: str) -> str:
    """What a count part asks about with its frame and times removed ("how many went downhill by 2 years" ->
    "went downhill"): the text the outcome model reads, in training and in use alike."""
    from core.answer.concepts import FRAME

    text = _TIME.sub(" ", normalised)
    words = [w for w in re.findall(r"[a-z0-9'+-]+", text) if w not in FRAME and not re.search(r"\d", w)]
    return " ".join(words)


@dataclass(frozen=True)
class OutcomeReading:
    """The outcome concept a phrase was read as, with the model's probability."""

    phrase: str
    concept: str
    probability: float

    @property
    def stems(self) -> tuple[str, ...]:
        """The stems that record the concept in a case's outcome."""
        return OUTCOME_STEMS[self.concept]


class OutcomeReader:
    """Reads a count's phrase as one recorded outcome concept, or as none (see the module docstring)."""

    def __init__(
        self,
        model: IntentModel | None,
        embed: Callable[[list[str]], np.ndarray] | None,
        embed_model_id: Callable[[], str] | None,
        min_probability: float,
    ) -> None:
        self.model = model
        self._embed = embed
        self._embed_model_id = embed_model_id
        self.min_probability = min_probability
        self._checked = False

    def _usable(self) -> IntentModel | None:
        if self.model is None or self._embed is None or self._embed_model_id is None:
            return None
        if not self._checked:
            self._checked = True
            if not self.model.usable(self._embed_model_id()):
                self.model = None  # trained on another embedder: words alone decide
        return self.model

    def read(self, normalised: str) -> OutcomeReading | None:
        """The concept ``normalised`` (a count part as the reader normalises it) names, when the model is sure of one."""
        model = self._usable()
        phrase = concept_phrase(normalised)
        if model is None or self._embed is None or not phrase:
            return None
        concept, p = model.predict(self._embed([phrase]))[0]
        if concept == OTHER or concept not in OUTCOME_STEMS or p < self.min_probability:
            return None
        return OutcomeReading(phrase, concept, p)
