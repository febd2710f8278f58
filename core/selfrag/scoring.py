"""Pure scoring over ``{token: logprob}`` maps: no model, no I/O.

Every function takes natural-log probabilities (what backends return) and
takes ``exp`` *before* normalising over a label group. The reference Self-RAG /
Self-BioRAG code divides raw log-probabilities,
``lp[Retrieval] / (lp[Retrieval] + lp[No Retrieval])``, which inverts the
decision: with ``lp = -0.1`` and ``-2.3`` (p = 0.90 and 0.10) it gives 0.04.

A group whose labels are all missing (or all ``-inf``) has no probability:
the functions return ``None`` and the caller records it as unscored rather
than inventing a value.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from core.selfrag.tokens import (
    FULLY_SUPPORTED,
    NO_RETRIEVAL,
    NO_SUPPORT,
    NO_SUPPORT_SHORT,
    PARTIALLY_SUPPORTED,
    RELEVANT,
    RETRIEVAL,
    SUPPORT_TOKENS,
    UTILITY_TOKENS,
)

__all__ = [
    "LogprobMap",
    "critic_score",
    "expected_utility",
    "groundedness",
    "group_probabilities",
    "log_add_exp",
    "relevance",
    "retrieval_probability",
    "should_retrieve",
    "utility_score",
]

LogprobMap = Mapping[str, float]


def _alias_support(logprobs: LogprobMap) -> LogprobMap:
    """Fold the short spelling ``[No support]`` into ``[No support / Contradictory]``."""
    if NO_SUPPORT_SHORT not in logprobs:
        return logprobs
    merged = dict(logprobs)
    short = merged.pop(NO_SUPPORT_SHORT)
    long = merged.get(NO_SUPPORT)
    merged[NO_SUPPORT] = short if long is None else log_add_exp(long, short)
    return merged


def log_add_exp(a: float, b: float) -> float:
    """log(exp(a) + exp(b)) without overflow; -inf when both are -inf."""
    hi = max(a, b)
    if hi == -math.inf:
        return -math.inf
    return hi + math.log(math.exp(a - hi) + math.exp(b - hi))


def group_probabilities(logprobs: LogprobMap, labels: Sequence[str]) -> dict[str, float] | None:
    """``exp`` of each label's log-probability, normalised over ``labels``.

    Missing labels count as probability 0. Returns ``None`` when no label has
    a finite log-probability (nothing to normalise). NaN is treated as missing.
    """
    finite = {
        label: lp
        for label in labels
        if (lp := logprobs.get(label)) is not None and not math.isnan(lp) and lp > -math.inf
    }
    if not finite:
        return None
    top = max(finite.values())  # subtract the max: exp never underflows to all-zero
    weights = {label: math.exp(finite[label] - top) if label in finite else 0.0 for label in labels}
    total = sum(weights.values())
    return {label: w / total for label, w in weights.items()}


def retrieval_probability(logprobs: LogprobMap) -> float | None:
    """P(retrieve) = p[Retrieval] / (p[Retrieval] + p[No Retrieval]), or ``None`` when neither was seen."""
    probs = group_probabilities(logprobs, (RETRIEVAL, NO_RETRIEVAL))
    return None if probs is None else probs[RETRIEVAL]


def should_retrieve(p_retrieve: float | None, threshold: float) -> bool | None:
    """The adaptive decision: ``p_retrieve > threshold``; ``None`` when there is no probability."""
    return None if p_retrieve is None else p_retrieve > threshold


def relevance(logprobs: LogprobMap) -> float | None:
    """P[Relevant] normalised over [Relevant] / [Irrelevant] (0..1)."""
    probs = group_probabilities(logprobs, (RELEVANT, "[Irrelevant]"))
    return None if probs is None else probs[RELEVANT]


def groundedness(logprobs: LogprobMap, partial_weight: float) -> float | None:
    """p[Fully supported] + ``partial_weight`` * p[Partially supported], normalised over the three (0..1)."""
    probs = group_probabilities(_alias_support(logprobs), SUPPORT_TOKENS)
    if probs is None:
        return None
    return probs[FULLY_SUPPORTED] + partial_weight * probs[PARTIALLY_SUPPORTED]


def utility_score(logprobs: LogprobMap, weights: Sequence[float]) -> float | None:
    """sum over i of weights[i] * P[Utility:i+1]; with the default weights a value in -1..1."""
    if len(weights) != len(UTILITY_TOKENS):
        raise ValueError(f"need {len(UTILITY_TOKENS)} utility weights, got {len(weights)}")
    probs = group_probabilities(logprobs, UTILITY_TOKENS)
    if probs is None:
        return None
    return sum(w * probs[t] for w, t in zip(weights, UTILITY_TOKENS, strict=True))


def expected_utility(logprobs: LogprobMap) -> float | None:
    """sum over i of i * P[Utility:i] (1..5): the self-reflection stopping score."""
    probs = group_probabilities(logprobs, UTILITY_TOKENS)
    if probs is None:
        return None
    return sum(i * probs[t] for i, t in enumerate(UTILITY_TOKENS, start=1))


def critic_score(
    rel: float | None, grd: float | None, util: float | None, w_rel: float, w_sup: float, w_use: float
) -> float:
    """w_rel * relevance + w_sup * groundedness + w_use * utility; an unscored part contributes 0."""
    return w_rel * (rel or 0.0) + w_sup * (grd or 0.0) + w_use * (util or 0.0)
