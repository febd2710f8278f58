"""Retrieval confidence on a calibrated 0..1 scale (pure functions).

The knowledge bases' e5 cosine similarities live in a narrow band (about 0.80
to 0.92 for any English question), so a raw threshold of 0.65 would pass
everything. The cosine of the best surviving chunk is therefore mapped through
a logistic curve fitted on labelled questions (in-domain answerable = 1,
out-of-domain = 0)::

    confidence = 1 / (1 + exp(-(cosine - midpoint) / scale))

so ``confidence`` estimates the probability that retrieval found on-topic
evidence, and the default threshold 0.65 means "more likely on topic than
not, with a margin". :func:`fit_logistic` refits ``midpoint`` and ``scale``
(``python -m core eval-guidelines --calibrate``); the numbers and the score
distributions are in docs/GUIDELINE_QA.md.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["confidence", "fit_logistic"]


def confidence(cosine: float | None, midpoint: float, scale: float) -> float:
    """Calibrated confidence of one dense cosine (0.0 when the chunk has no dense score)."""
    if cosine is None:
        return 0.0
    z = (cosine - midpoint) / scale
    return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))


def fit_logistic(scores: Sequence[float], labels: Sequence[int], l2: float, iters: int = 200) -> tuple[float, float]:
    """Fit ``P(label=1 | s) = sigmoid(a * (s - mean) + b)`` by Newton's method with an L2 penalty on ``a``.

    Scores are standardised first so the penalty is scale-free (it keeps the
    slope finite when the two classes are perfectly separable). Returns
    ``(midpoint, scale)`` in cosine units for :func:`confidence`.
    """
    x = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=float)
    if len(x) < 2 or y.min() == y.max():
        raise ValueError("calibration needs scores from both classes")
    mu, sd = float(x.mean()), float(x.std()) or 1.0
    z = (x - mu) / sd
    design = np.stack([z, np.ones_like(z)], axis=1)
    w = np.zeros(2)
    penalty = np.diag([l2, 0.0])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(design @ w)))
        grad = design.T @ (p - y) + penalty @ w
        hess = design.T @ (design * (p * (1 - p))[:, None]) + penalty + 1e-9 * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    a, b = float(w[0]), float(w[1])
    if a <= 0:
        raise ValueError("calibration slope is not positive: the classes are not ordered by score")
    scale = sd / a
    return mu - b * scale, scale
