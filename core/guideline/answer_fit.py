"""Fitting the shown-confidence map (:mod:`core.guideline.answer_confidence`) on labelled answers.

Rows are answered items of the real-document benchmark's **train** split: their raw evidence features and
whether each was correct (bench/guideline_realdocs.py ``--json``; bench/fit_answer_confidence.py is the
command). :func:`fit_map` fits ``P(correct) = sigmoid(intercept + coef . features)`` with scikit-learn's
LogisticRegression (Platt scaling of a linear evidence score) after a greedy forward selection of features on
repeated stratified 5-fold cross-validated log-loss. A feature whose fitted sign disagrees with
:data:`~core.guideline.answer_confidence.DIRECTION` is never kept, so the map is monotone in every feature it
uses. scikit-learn is imported only here, when fitting; answering reads the coefficients.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from core.guideline.answer_confidence import ANSWER_FEATURES, DIRECTION

__all__ = ["cross_validated", "ece", "fit_map", "matrix", "select"]

C_GRID = (0.1, 0.3, 1.0, 3.0)
MAX_FEATURES = 4
# A feature joins only when it lowers the cross-validated log-loss by this much: about a hundred answers
# cannot tell a smaller gain from noise, and each extra feature costs calibration out of sample.
MIN_GAIN = 0.01


def _fit(x: np.ndarray, y: np.ndarray, c: float) -> tuple[np.ndarray, float]:
    """Raw-unit slopes and intercept of an L2 logistic regression on standardised columns."""
    from sklearn.linear_model import LogisticRegression

    mu, sd = x.mean(axis=0), x.std(axis=0)
    sd = np.where(sd > 1e-12, sd, 1.0)
    model = LogisticRegression(C=c, max_iter=5000).fit((x - mu) / sd, y)
    slopes = model.coef_[0] / sd
    return slopes, float(model.intercept_[0] - (slopes * mu).sum())


def _prob(x: np.ndarray, slopes: np.ndarray, intercept: float) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(x @ slopes + intercept, -60, 60)))


def ece(p: np.ndarray, y: np.ndarray, bins: int = 10) -> float:
    """Expected calibration error over equal-width bins."""
    idx = np.minimum((p * bins).astype(int), bins - 1)
    return float(
        sum(abs(y[idx == k].mean() - p[idx == k].mean()) * (idx == k).mean() for k in range(bins) if (idx == k).any())
    )


def cross_validated(x: np.ndarray, y: np.ndarray, cols: list[int], c: float, repeats: int = 5) -> dict[str, Any]:
    """Out-of-fold log-loss and ECE (``repeats`` shuffles of stratified 5 folds); ``ok`` False when a sign flips."""
    from sklearn.model_selection import StratifiedKFold

    losses, eces, ok = [], [], True
    for seed in range(repeats):
        p = np.zeros(len(y))
        for tr, te in StratifiedKFold(n_splits=5, shuffle=True, random_state=seed).split(x, y):
            if cols:
                slopes, b = _fit(x[tr][:, cols], y[tr], c)
                ok &= all(DIRECTION[ANSWER_FEATURES[j]] * s >= 0 for j, s in zip(cols, slopes, strict=True))
                p[te] = _prob(x[te][:, cols], slopes, b)
            else:
                p[te] = y[tr].mean()
        q = np.clip(p, 1e-6, 1 - 1e-6)
        losses.append(float(-(y * np.log(q) + (1 - y) * np.log(1 - q)).mean()))
        eces.append(ece(p, y))
    return {"log_loss": round(float(np.mean(losses)), 4), "ece": round(float(np.mean(eces)), 4), "ok": ok}


def select(x: np.ndarray, y: np.ndarray, log: Any = None, repeats: int = 5) -> tuple[list[int], float, dict[str, Any]]:
    """Greedy forward selection of features (and C) by cross-validated log-loss, signs as declared."""
    cols: list[int] = []
    c_best, best = 1.0, cross_validated(x, y, [], 1.0, repeats)
    if log:
        log(f"base rate {y.mean():.3f}: {best}")
    while len(cols) < MAX_FEATURES:
        trials = [(cross_validated(x, y, [*cols, j], c, repeats), j, c)
                  for j in range(x.shape[1]) if j not in cols for c in C_GRID]  # fmt: skip
        trials = [t for t in trials if t[0]["ok"]]
        if not trials:
            break
        score, j, c = min(trials, key=lambda t: t[0]["log_loss"])
        if score["log_loss"] > best["log_loss"] - MIN_GAIN:  # no real gain: stop
            break
        cols, c_best, best = [*cols, j], c, score
        if log:
            log(f"+ {ANSWER_FEATURES[j]} (C={c}): {score}")
    return cols, c_best, best


def matrix(rows: Sequence[dict[str, float]]) -> np.ndarray:
    """Rows of raw features as a matrix in :data:`ANSWER_FEATURES` order."""
    return np.asarray([[r[f] for f in ANSWER_FEATURES] for r in rows], dtype=float)


def fit_map(
    rows: Sequence[dict[str, float]], labels: Sequence[int], log: Any = None, repeats: int = 5
) -> tuple[dict[str, float], dict[str, Any]]:
    """The fitted map's coefficients (raw feature units, ``intercept`` included) and its cross-validated scores.

    With no feature that beats the constant base rate the map is that constant.
    """
    x, y = matrix(rows), np.asarray(labels, dtype=int)
    if len(y) < 10 or y.min() == y.max():
        raise ValueError("fitting the answer confidence needs at least 10 answers, correct and wrong")
    cols, c, cv = select(x, y, log, repeats)
    if not cols:
        return {"intercept": round(float(np.log(y.mean() / (1 - y.mean()))), 4)}, cv
    slopes, intercept = _fit(x[:, cols], y, c)
    if any(DIRECTION[ANSWER_FEATURES[j]] * s < 0 for j, s in zip(cols, slopes, strict=True)):
        raise ValueError("a fitted coefficient disagrees with its declared direction: the map would not be monotone")
    coef = {"intercept": round(intercept, 4)}
    coef |= {ANSWER_FEATURES[j]: round(float(s), 4) for j, s in zip(cols, slopes, strict=True)}
    return coef, cv | {"C": c}
