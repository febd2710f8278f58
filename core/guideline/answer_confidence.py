"""The confidence an answer shows: the probability that it is correct, a monotone map fitted on real documents.

The retrieval confidence (:mod:`core.guideline.calibration`) estimates whether retrieval found on-topic
evidence in a curated KB; it gates abstention. It is not the chance that the answer is right: on the real
and real-shaped documents of bench/guideline_realdocs.py answers shown at 0.8-1.0 were 72% correct and
those at 0.6-0.8 none. An answer drawn over a doctor's document spaces therefore shows

    P(correct) = sigmoid(intercept + sum(coef[f] * features[f]))

over the raw evidence features below (Platt scaling of a linear score, fitted with scikit-learn on the
train split of that benchmark by bench/fit_answer_confidence.py; the coefficients are
``guideline.answer_calib``). Every feature has a declared direction (:data:`DIRECTION`: more evidence
never lowers the shown confidence); the fit keeps only features whose fitted sign agrees, so the shipped
map is monotone in each of them. The map is pure: it reads numbers, never a model.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from core.guideline.constraints import Candidate
from core.guideline.types import Bullet

__all__ = ["ANSWER_FEATURES", "DIRECTION", "answer_features", "shown_confidence"]

ANSWER_FEATURES = ("retrieval", "cosine", "focus", "overlap", "space", "sources", "other_population", "bullets")
# +1: the feature is evidence for a correct answer; -1: against it (a fitted coefficient must agree).
DIRECTION = {"retrieval": 1, "cosine": 1, "focus": 1, "overlap": 1, "space": 1, "sources": -1, "other_population": -1,
             "bullets": 1}  # fmt: skip


def _logit(p: float, cap: float = 12.0) -> float:
    p = min(max(p, 1e-6), 1 - 1e-6)
    return max(min(math.log(p / (1 - p)), cap), -cap)


def answer_features(
    evidence: Sequence[Candidate], bullets: Sequence[Bullet], focus: float, overlap: float
) -> dict[str, float]:
    """The raw evidence features of one delivered answer.

    ``retrieval``: log-odds of the best evidence chunk's retrieval confidence; ``cosine``: dense cosine of
    the chunk behind the first bullet; ``focus``: share of the question's focus words the bullets mention
    (passed in, :func:`core.guideline.slots.focus_coverage`); ``overlap``: share of the question's key tokens
    the bullets and their sections mention (passed in); ``space``: share of bullets quoted from a
    doctor's space (``user...``); ``sources``: documents the bullets come from; ``other_population``: share
    of bullets for another patient group; ``bullets``: how many (capped at 4).
    """
    best = max((c.confidence for c in evidence), default=0.0)
    first = bullets[0].evidence.chunk_id if bullets else ""
    cosine = next((c.hit.dense_score or 0.0 for c in evidence if c.hit.chunk_id == first), 0.0)
    n = max(len(bullets), 1)
    docs = {b.evidence.ref.doc_id if b.evidence.ref else b.evidence.kb for b in bullets}
    return {"retrieval": _logit(best), "cosine": float(cosine), "focus": float(focus), "overlap": float(overlap),
            "space": sum(b.evidence.kb.startswith("user") for b in bullets) / n, "sources": float(len(docs)),
            "other_population": sum(b.other_population for b in bullets) / n,
            "bullets": float(min(len(bullets), 4))}  # fmt: skip


def shown_confidence(features: dict[str, float], coef: dict[str, float]) -> float:
    """``sigmoid(intercept + sum(coef[f] * features[f]))`` in raw feature units, in [0, 1]."""
    z = coef.get("intercept", 0.0) + sum(coef.get(f, 0.0) * features.get(f, 0.0) for f in ANSWER_FEATURES)
    return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))
