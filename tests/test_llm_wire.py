"""Parsing of the three log-probability shapes and of malformed bodies (pure functions)."""

from __future__ import annotations

import math

import pytest

from core.errors import BackendError
from core.llm.base import truncate_at_stop
from core.llm.remote import parse_retry_after
from core.llm.wire import completion_from_response, delta_from_chunk, load_json, tokens_from_logprobs


def test_llamacpp_post_sampling_probs_become_logprobs() -> None:
    native = [{"token": "Yes", "prob": 0.9, "top_probs": [{"token": "No", "prob": 0.1}, {"token": "Yes", "prob": 0.9}]}]
    (tok,) = tokens_from_logprobs(native)
    assert tok.logprob == pytest.approx(math.log(0.9))
    assert list(tok.top) == ["Yes", "No"]  # sorted best first
    assert tok.prob("No") == pytest.approx(0.1)


def test_legacy_completion_shape() -> None:
    legacy = {
        "tokens": [" a", " b"],
        "token_logprobs": [-0.1, -0.2],
        "top_logprobs": [{" a": -0.1}, {" c": -0.5, " b": -0.2}],
    }
    toks = tokens_from_logprobs(legacy)
    assert [t.token for t in toks] == [" a", " b"] and list(toks[1].top) == [" b", " c"]


def test_missing_choices_is_a_backend_error() -> None:
    with pytest.raises(BackendError, match="shape"):
        completion_from_response({"id": "x"}, backend="t", model="m")


@pytest.mark.parametrize("body", ['{"choices": [', "[1, 2]", "not json"])
def test_bad_bodies_are_backend_errors(body: str) -> None:
    with pytest.raises(BackendError):
        load_json(body, backend="t")


def test_usage_only_chunk_has_no_text() -> None:
    assert delta_from_chunk({"choices": [], "usage": {"prompt_tokens": 3}}, backend="t") == ("", None)


def test_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7.0
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0
    assert parse_retry_after({}) > 0


def test_truncate_at_the_earliest_stop() -> None:
    assert truncate_at_stop("abc END def STOP", ["STOP", "END"]) == ("abc ", True)
    assert truncate_at_stop("abc", None) == ("abc", False)
