"""What the look-alikes say, and how strongly: Ask AI's confidence from evidence, and why cases are similar.

Confidence (``high`` / ``medium`` / ``low``) rests on four measured things, never on
whether the look-alikes repeat the AI's label:

- **closeness**: the mean displayed similarity of the look-alikes that passed
  ``safety.min_similarity`` (the bundle holds only those);
- **count**: how many passed that floor;
- **spread**: the share held by the most common diagnosis among them (concentration);
  1.0 means every look-alike has one diagnosis, whatever it is;
- the scan's **AI confidence**.

Agreement with the AI reading only *caps* the level: when the look-alikes'
most common diagnosis is another one, the level is at most ``medium``, and when
the AI's diagnosis is not among them at all, ``low``. So five close look-alikes
that all carry the AI's label still read ``low`` when there are too few of them or
they are not close, and agreement alone never makes ``high``.

"Why similar": the default radiomics encoder can say which of its feature groups
(intensity, texture, shape, ...) make two embeddings close
(:meth:`core.imaging.radiomics.RadiomicsEncoder.drivers`); another encoder (a
user's model) cannot, and the sentence says so.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np

from core.config.ask import AskSettings
from core.contracts import ContextBundle

__all__ = ["Evidence", "assess", "basis_sentence", "drivers"]

Level = Literal["high", "medium", "low"]


@dataclass(frozen=True)
class Evidence:
    """The measured evidence behind a confidence level, and the level with its reasons."""

    count: int
    closeness: float
    concentration: float
    diagnoses: tuple[tuple[str, int], ...]  # every diagnosis among the look-alikes, most frequent first
    ai_diagnosis: str
    ai_confidence: float
    level: Level
    reasons: tuple[str, ...]

    @property
    def dominant(self) -> str | None:
        """The most common diagnosis among the look-alikes (``None`` without any)."""
        return self.diagnoses[0][0] if self.diagnoses else None


def _meets(ev: tuple[int, float, float, float], mins: tuple[int, float, float, float]) -> list[str]:
    names = ("look-alikes over the similarity floor", "mean similarity", "share of the most common diagnosis",
             "AI confidence")
    return [f"{n} {v:.2f} < {m:.2f}" if isinstance(v, float) else f"{n} {v} < {m}"
            for n, v, m in zip(names, ev, mins, strict=True) if v < m]


def assess(bundle: ContextBundle, settings: AskSettings) -> Evidence:
    """The confidence level of answers over ``bundle`` and what it rests on."""
    cases = bundle.similarCases
    ai = bundle.currentScan.diagnosis
    counts = Counter(c.diagnosis for c in cases)
    diagnoses = tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))
    n = len(cases)
    closeness = sum(c.similarity for c in cases) / n if n else 0.0
    concentration = diagnoses[0][1] / n if n else 0.0
    measured = (n, closeness, concentration, float(bundle.currentScan.confidence))
    high = _meets(measured, (settings.high_min_cases, settings.high_min_similarity,
                             settings.high_min_concentration, settings.high_min_ai_confidence))
    medium = _meets(measured, (settings.medium_min_cases, settings.medium_min_similarity,
                               settings.medium_min_concentration, settings.medium_min_ai_confidence))
    level: Level = "high" if not high else "medium" if not medium else "low"
    reasons = list(high if level != "high" else []) + list(medium if level == "low" else [])
    ai_count = sum(v for d, v in counts.items() if d.lower() == ai.lower())
    if n and ai_count == 0:
        level, reasons = "low", [*reasons, f"the AI reading ({ai}) is not among the look-alikes"]
    elif n and diagnoses[0][0].lower() != ai.lower() and diagnoses[0][1] > ai_count and level == "high":
        level, reasons = "medium", [*reasons, f"most look-alikes carry another diagnosis ({diagnoses[0][0]})"]
    return Evidence(n, closeness, concentration, diagnoses, ai, float(bundle.currentScan.confidence), level,
                    tuple(dict.fromkeys(reasons)))


@lru_cache(maxsize=1)
def _radiomics() -> object:
    from core.imaging.radiomics import RadiomicsEncoder

    return RadiomicsEncoder()


def drivers(encoder_id: str, query: np.ndarray, neighbours: list[np.ndarray], top: int = 2) -> list[str]:
    """The feature groups that make ``neighbours`` close to ``query``, most first; empty for an opaque encoder."""
    enc = _radiomics()
    if encoder_id != enc.encoder_id or not neighbours:  # type: ignore[attr-defined]
        return []
    share: Counter[str] = Counter()
    for vec in neighbours:
        for label, part in enc.drivers(query, vec, top=6):  # type: ignore[attr-defined]
            share[label] += part
    return [label for label, _ in share.most_common(top)]


def basis_sentence(groups: list[str]) -> str:
    """One honest sentence on what the similarity measures (``groups`` from :func:`drivers`)."""
    if groups:
        return (f"Similarity compares intensity, texture and shape features computed from the pixels; for these "
                f"cases it rests mostly on {' and '.join(groups)}. It reads no report, label or outcome.")
    return ("Similarity is the closeness of the imaging embeddings of the configured image encoder, which does "
            "not say which image features drive it.")
