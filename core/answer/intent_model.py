"""The learned intent classifier: a linear model over the project's e5 sentence embeddings and the cue features.

The weights are a small file in the repository (``core/answer/data/intent_model.npz``),
built by ``python -m core train-ask-intent`` (:mod:`core.askeval.train`) from the
train splits of the question sets; nothing is downloaded. The file records the
embedding model that built it: served with another embedder, the model is not used
and the cue patterns decide (``IntentModel.usable``).

Features of a question part: its embedding (the embedder's query role, L2-normalised)
followed by one indicator per intent for the intent the cue patterns give it. Scoring
is a softmax over ``W x + b`` (``design='logreg'``) or cosine to each intent's centroid
(``design='centroid'``), whichever the training script kept on the frozen test split.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import get_args

import numpy as np

from core.answer.cues import Intent

__all__ = ["INTENTS", "MODEL_PATH", "WORD_KIND_PATH", "IntentModel", "features"]

INTENTS: tuple[str, ...] = tuple(get_args(Intent))
MODEL_PATH = Path(__file__).parent / "data" / "intent_model.npz"
# The word-kind model (same format, labels "clinical" / "everyday", features: a word's embedding alone).
WORD_KIND_PATH = Path(__file__).parent / "data" / "word_kind.npz"


def features(vectors: np.ndarray, cue_intents: list[str]) -> np.ndarray:
    """Embeddings joined with a one-hot of each part's cue intent (rows parallel)."""
    cues = np.zeros((len(cue_intents), len(INTENTS)), dtype=np.float32)
    for i, name in enumerate(cue_intents):
        cues[i, INTENTS.index(name)] = 1.0
    return np.hstack([vectors.astype(np.float32), cues])


@dataclass(frozen=True)
class IntentModel:
    """A trained intent classifier (see the module docstring)."""

    labels: tuple[str, ...]
    weights: np.ndarray  # (labels, features)
    bias: np.ndarray  # (labels,)
    model_id: str  # the embedder that built the features
    design: str  # "logreg" or "centroid"

    def probabilities(self, x: np.ndarray) -> np.ndarray:
        """Class probabilities per row of features ``x``."""
        logits = x @ self.weights.T + self.bias
        if self.design == "centroid":
            logits = logits * 20.0  # cosine similarities to a temperature that spreads them
        logits = logits - logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        return np.asarray(p / p.sum(axis=1, keepdims=True))

    def predict(self, x: np.ndarray) -> list[tuple[str, float]]:
        """(intent, probability) of each row."""
        p = self.probabilities(x)
        return [(self.labels[int(i)], float(p[r, i])) for r, i in enumerate(p.argmax(axis=1))]

    def usable(self, model_id: str) -> bool:
        """True when the features come from the embedder that trained this model."""
        return model_id == self.model_id

    def save(self, path: Path = MODEL_PATH) -> None:
        """Write the model as a small ``.npz`` (float16 weights)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            path,
            labels=np.array(self.labels),
            weights=self.weights.astype(np.float16),
            bias=self.bias.astype(np.float32),
            model_id=np.array(self.model_id),
            design=np.array(self.design),
        )

    @classmethod
    def load(cls, path: Path = MODEL_PATH) -> IntentModel | None:
        """The shipped model, or ``None`` when no file is there (the cue patterns then decide)."""
        if not path.exists():
            return None
        with np.load(path, allow_pickle=False) as z:
            return cls(
                labels=tuple(str(s) for s in z["labels"]),
                weights=z["weights"].astype(np.float32),
                bias=z["bias"].astype(np.float32),
                model_id=str(z["model_id"]),
                design=str(z["design"]),
            )
