"""Reflection-token scoring on hand-made log-probability maps (no model)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.config.selfrag import SelfRagSettings
from core.selfrag import scoring
from core.selfrag.tokens import (
    FULLY_SUPPORTED,
    IRRELEVANT,
    NO_RETRIEVAL,
    NO_SUPPORT,
    NO_SUPPORT_SHORT,
    PARTIALLY_SUPPORTED,
    RELEVANT,
    RETRIEVAL,
    UTILITY_TOKENS,
    clean_answer,
)

S = SelfRagSettings()
ln = math.log


def test_retrieval_decision_takes_exp_before_normalising() -> None:
    """The case the reference code gets wrong: dividing raw log-probabilities inverts the decision."""
    lp = {RETRIEVAL: -0.1, NO_RETRIEVAL: -2.3}
    p = scoring.retrieval_probability(lp)
    assert p == pytest.approx(0.9, abs=0.005)
    assert scoring.should_retrieve(p, S.retrieval_threshold) is True
    reference = lp[RETRIEVAL] / (lp[RETRIEVAL] + lp[NO_RETRIEVAL])  # Self-RAG run_short_form.py
    assert reference == pytest.approx(0.0417, abs=0.001)
    assert (reference > S.retrieval_threshold) is False  # would not retrieve: inverted


def test_retrieval_probability_extremes_and_missing() -> None:
    assert scoring.retrieval_probability({RETRIEVAL: -0.01}) == 1.0  # the other label absent: probability 0
    assert scoring.retrieval_probability({NO_RETRIEVAL: -0.01}) == 0.0
    assert scoring.retrieval_probability({}) is None
    assert scoring.retrieval_probability({RETRIEVAL: -math.inf, NO_RETRIEVAL: -math.inf}) is None
    assert scoring.retrieval_probability({RETRIEVAL: math.nan, NO_RETRIEVAL: -1.0}) == 0.0
    assert scoring.retrieval_probability({"Yes": -0.1, "[Relevant]": -0.2}) is None  # other groups ignored
    assert scoring.should_retrieve(None, 0.5) is None
    assert scoring.should_retrieve(0.5, 0.5) is False  # strictly greater
    assert scoring.should_retrieve(0.21, 0.2) is True  # the paper's threshold


def test_tiny_log_probabilities_do_not_underflow() -> None:
    p = scoring.retrieval_probability({RETRIEVAL: -1000.0, NO_RETRIEVAL: -1001.0})
    assert p == pytest.approx(1 / (1 + math.exp(-1)))


@pytest.mark.parametrize(
    ("probs", "expected"),
    [
        ({RELEVANT: 0.6, IRRELEVANT: 0.2}, 0.75),
        ({RELEVANT: 0.1, IRRELEVANT: 0.1}, 0.5),
        ({IRRELEVANT: 0.3}, 0.0),
        ({RELEVANT: 0.3}, 1.0),
    ],
)
def test_relevance(probs: dict[str, float], expected: float) -> None:
    assert scoring.relevance({k: ln(v) for k, v in probs.items()}) == pytest.approx(expected)


def test_relevance_missing_is_unscored() -> None:
    assert scoring.relevance({"[Utility:5]": -0.1}) is None


def test_groundedness_full_plus_half_partial() -> None:
    lp = {FULLY_SUPPORTED: ln(0.5), PARTIALLY_SUPPORTED: ln(0.3), NO_SUPPORT: ln(0.2)}
    assert scoring.groundedness(lp, S.partial_support_weight) == pytest.approx(0.5 + 0.5 * 0.3)
    assert scoring.groundedness({NO_SUPPORT: -0.1}, S.partial_support_weight) == 0.0
    assert scoring.groundedness({}, S.partial_support_weight) is None


def test_groundedness_accepts_the_short_no_support_spelling() -> None:
    short = {FULLY_SUPPORTED: ln(0.2), NO_SUPPORT_SHORT: ln(0.6)}
    assert scoring.groundedness(short, 0.5) == pytest.approx(0.25)
    both = {FULLY_SUPPORTED: ln(0.2), NO_SUPPORT_SHORT: ln(0.3), NO_SUPPORT: ln(0.3)}
    assert scoring.groundedness(both, 0.5) == pytest.approx(0.25)  # the two spellings add up


def test_utility_score_maps_to_minus_one_to_one() -> None:
    w = S.utility_weights
    assert scoring.utility_score({UTILITY_TOKENS[4]: -0.01}, w) == 1.0
    assert scoring.utility_score({UTILITY_TOKENS[0]: -0.01}, w) == -1.0
    uniform = {t: ln(0.2) for t in UTILITY_TOKENS}
    assert scoring.utility_score(uniform, w) == pytest.approx(0.0)
    assert scoring.utility_score({}, w) is None
    with pytest.raises(ValueError, match="5 utility weights"):
        scoring.utility_score(uniform, (1.0, 2.0))


def test_expected_utility_matches_the_design_example() -> None:
    probs = [0.05, 0.10, 0.15, 0.60, 0.10]  # docs: expected utility 3.60
    lp = {t: ln(p) for t, p in zip(UTILITY_TOKENS, probs, strict=True)}
    assert scoring.expected_utility(lp) == pytest.approx(3.6)
    assert scoring.expected_utility({UTILITY_TOKENS[3]: -5.0}) == pytest.approx(4.0)
    assert scoring.expected_utility({t: -math.inf for t in UTILITY_TOKENS}) is None


def test_critic_score_weights_and_unscored_parts() -> None:
    assert scoring.critic_score(0.9, 0.8, 0.4, S.w_rel, S.w_sup, S.w_use) == pytest.approx(0.9 + 0.8 + 0.2)
    assert scoring.critic_score(None, None, None, 1.0, 1.0, 0.5) == 0.0
    assert scoring.critic_score(1.0, None, -1.0, 1.0, 1.0, 0.5) == pytest.approx(0.5)


def test_default_weights_are_the_designed_ones() -> None:
    assert (S.w_rel, S.w_sup, S.w_use, S.partial_support_weight) == (1.0, 1.0, 0.5, 0.5)
    assert S.utility_weights == (-1.0, -0.5, 0.0, 0.5, 1.0)
    assert (S.retrieval_threshold, S.top_k, S.rerank_keep, S.utility_stop, S.max_iterations) == (0.3, 5, 3, 4.0, 3)


logprob = st.floats(min_value=-50, max_value=0, allow_nan=False)


@given(st.dictionaries(st.sampled_from(UTILITY_TOKENS), logprob, min_size=1))
def test_group_probabilities_sum_to_one(lp: dict[str, float]) -> None:
    probs = scoring.group_probabilities(lp, UTILITY_TOKENS)
    assert probs is not None
    assert sum(probs.values()) == pytest.approx(1.0)
    eu = scoring.expected_utility(lp)
    assert eu is not None and 1.0 - 1e-9 <= eu <= 5.0 + 1e-9


@given(logprob, logprob)
def test_retrieval_probability_is_monotonic_in_retrieval_logprob(a: float, b: float) -> None:
    p = scoring.retrieval_probability({RETRIEVAL: a, NO_RETRIEVAL: b})
    higher = scoring.retrieval_probability({RETRIEVAL: min(a + 1.0, 0.0), NO_RETRIEVAL: b})
    assert p is not None and higher is not None and higher >= p - 1e-12


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("[No Retrieval][Relevant][Fully supported]The answer is D. Nitrofurantoin.[Utility:4]</s>",
         "The answer is D. Nitrofurantoin."),
        ("[Retrieval]<paragraph>x</paragraph>[No support / Contradictory]B[Utility:1]", "x B"),
        ("A. Ampicillin [No support] <|endoftext|>", "A. Ampicillin"),
        ("[Partially supported]\n\n  line two  [Utility:5]<|im_end|>", "line two"),
        ("[Utility:1][Utility:2][Utility:3]", ""),
    ],
)  # fmt: skip
def test_clean_answer_removes_every_reflection_and_end_token(raw: str, clean: str) -> None:
    assert clean_answer(raw) == clean
