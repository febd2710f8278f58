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

A KB with a fitted ``guideline.calib_model`` uses a logistic model over more
retrieval features instead (:func:`retrieval_features`: best cosine, its margin
over the next, whether the question's section was found, query length), fitted
on the train split of the evaluation set only (:func:`fit_model`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["FEATURES", "confidence", "fit_logistic", "fit_model", "model_confidence", "retrieval_features"]


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


FEATURES = ("cosine", "margin", "section_match", "query_tokens")


def retrieval_features(cosines: Sequence[float], section_match: bool, query_tokens: int) -> dict[str, float]:
    """The confidence model's inputs for one KB's surviving candidates.

    ``cosine``: the best dense cosine; ``margin``: its lead over the second best
    (0 with one candidate); ``section_match``: 1 when a surviving chunk comes from
    the section the question names; ``query_tokens``: the question's key tokens,
    capped at 12 (a short keyword query embeds differently from a sentence).
    """
    ranked = sorted(cosines, reverse=True)
    best = ranked[0] if ranked else 0.0
    margin = best - ranked[1] if len(ranked) > 1 else 0.0
    return {"cosine": best, "margin": margin, "section_match": float(section_match),
            "query_tokens": float(min(query_tokens, 12))}  # fmt: skip


def model_confidence(features: dict[str, float], coef: dict[str, float]) -> float:
    """``sigmoid(intercept + sum(coef[f] * features[f]))`` in raw feature units."""
    z = coef.get("intercept", 0.0) + sum(coef.get(f, 0.0) * features.get(f, 0.0) for f in FEATURES)
    return 1.0 / (1.0 + math.exp(-max(min(z, 60.0), -60.0)))


def fit_model(rows: Sequence[dict[str, float]], labels: Sequence[int], l2: float, iters: int = 200) -> dict[str, float]:
    """Fit the logistic confidence model by Newton's method, L2 penalty on the (standardised) slopes.

    Returns coefficients in raw feature units for :func:`model_confidence`. A
    feature that does not vary in ``rows`` gets coefficient 0.
    """
    y = np.asarray(labels, dtype=float)
    if len(y) < 2 or y.min() == y.max():
        raise ValueError("calibration needs examples from both classes")
    x = np.asarray([[r[f] for f in FEATURES] for r in rows], dtype=float)
    mu, sd = x.mean(axis=0), x.std(axis=0)
    live = sd > 1e-12
    z = np.where(live, (x - mu) / np.where(live, sd, 1.0), 0.0)
    design = np.hstack([z, np.ones((len(y), 1))])
    w = np.zeros(design.shape[1])
    penalty = np.diag([l2] * len(FEATURES) + [0.0])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(design @ w)))
        grad = design.T @ (p - y) + penalty @ w
        hess = design.T @ (design * (p * (1 - p))[:, None]) + penalty + 1e-9 * np.eye(len(w))
        step = np.linalg.solve(hess, grad)
        w -= step
        if float(np.abs(step).max()) < 1e-10:
            break
    slopes = np.where(live, w[:-1] / np.where(live, sd, 1.0), 0.0)
    coef = {f: float(slopes[i]) for i, f in enumerate(FEATURES)}
    coef["intercept"] = float(w[-1] - float((slopes * mu).sum()))
    return coef
