"""The confidence an answer shows over a doctor's documents (issue 24, item 6): a monotone P(correct) map.

The shipped map is checked as a map (monotone along every declared direction, inside [0, 1]), the fitting
is checked on held-out folds of the real-document train answers (tests/data/guideline_answer_calib_rows.json:
features and outcomes, numbers only) and on generated data, and the pipeline is checked to show the map's
value over spaces and the retrieval confidence without them.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from core.config.guideline import GuidelineQASettings
from core.guideline.answer_confidence import ANSWER_FEATURES, DIRECTION, shown_confidence
from core.guideline.answer_fit import ece, fit_map
from core.guideline.types import QAAnswer
from core.settings import Settings
from tests.conftest import make_settings
from tests.test_guideline_pipeline import GUIDES, qa_with
from tests.test_guideline_sources import PZA

CFG = GuidelineQASettings()
ROWS = json.loads((Path(__file__).parent / "data" / "guideline_answer_calib_rows.json").read_text())["rows"]
# Ranges the raw features take (log-odds capped at 12; shares in [0, 1]; at most 4 bullets and documents).
RANGES = {"retrieval": (-12.0, 12.0), "cosine": (0.0, 1.0), "focus": (0.0, 1.0), "overlap": (0.0, 1.0),
          "space": (0.0, 1.0), "sources": (1.0, 4.0), "other_population": (0.0, 1.0), "bullets": (1.0, 4.0)}  # fmt: skip


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


def test_the_shipped_map_is_monotone_in_every_feature_and_stays_in_0_1() -> None:
    coef = CFG.answer_calib
    assert "intercept" in coef and set(coef) <= {"intercept", *ANSWER_FEATURES}
    rng = np.random.default_rng(7)
    for _ in range(200):
        point = {f: float(rng.uniform(*RANGES[f])) for f in ANSWER_FEATURES}
        for f in ANSWER_FEATURES:
            lo, hi = RANGES[f]
            steps = np.linspace(lo, hi, 9)[:: DIRECTION[f]]  # from less evidence to more
            shown = [shown_confidence(point | {f: float(v)}, coef) for v in steps]
            assert all(0.0 <= p <= 1.0 for p in shown)
            assert all(b >= a for a, b in itertools.pairwise(shown)), (f, shown)


def test_held_out_answers_are_not_shown_more_confidence_than_their_accuracy() -> None:
    """The whole fitting procedure (feature selection included) on four fifths of the train answers, scored on
    the fifth left out; and the shipped map agrees with the answers it was fitted on."""
    labels = [r["correct"] for r in ROWS]
    y = np.asarray(labels)
    shown = np.zeros(len(y))
    for k in range(5):
        held = np.arange(len(y)) % 5 == k
        coef, _ = fit_map([r["features"] for r, h in zip(ROWS, held, strict=True) if not h], list(y[~held]), repeats=2)
        shown[held] = [shown_confidence(r["features"], coef) for r, h in zip(ROWS, held, strict=True) if h]
    assert ece(shown, y) <= 0.1
    high = shown >= 0.7  # the answers shown a high confidence are right about that often
    assert high.sum() >= 10 and shown[high].mean() - y[high].mean() <= 0.08, (shown[high].mean(), y[high].mean())
    shipped = [shown_confidence(r["features"], CFG.answer_calib) for r in ROWS]
    assert float(np.mean(shipped)) == pytest.approx(y.mean(), abs=0.03)  # refit after the answers change


def test_fitting_keeps_only_features_that_agree_with_their_direction_and_help() -> None:
    rng = np.random.default_rng(3)
    n = 160
    rows = [{f: float(rng.uniform(*RANGES[f])) for f in ANSWER_FEATURES} for _ in range(n)]
    for r in rows:  # focus truly predicts correctness; more bullets predicts *wrong* answers (declared +1)
        r["focus"] = float(rng.uniform())
    labels = [int(rng.uniform() < 0.15 + 0.7 * r["focus"] - 0.1 * (r["bullets"] - 1)) for r in rows]
    coef, cv = fit_map(rows, labels, repeats=2)
    assert coef.get("focus", 0.0) > 0 and "bullets" not in coef  # a wrong-signed feature is never kept
    assert all(DIRECTION[f] * v >= 0 for f, v in coef.items() if f != "intercept")
    assert cv["ok"] and cv["ece"] <= 0.1
    with pytest.raises(ValueError, match="correct and wrong"):
        fit_map(rows[:20], [1] * 20)


def test_an_answer_over_spaces_shows_the_map_and_one_without_shows_retrieval(settings: Settings) -> None:
    qa = qa_with(settings, {"guidelines": GUIDES, "user": PZA}, llm=None)
    over = qa.answer("What is the dose of pyrazinamide for adults with TB?", spaces=("user",))
    assert isinstance(over, QAAnswer), over
    step = over.trace.step("answer_confidence")
    assert step is not None and step.detail["mapped"] is True
    assert step.detail["features"]["space"] == 1.0  # every bullet quotes the doctor's document
    assert over.confidence == pytest.approx(shown_confidence(step.detail["features"], CFG.answer_calib), abs=1e-4)
    assert over.confidence < step.detail["retrieval"]  # the map shows less than the on-topic probability here
    plain = qa.answer("How is drug-susceptible TB treated?")
    assert isinstance(plain, QAAnswer), plain
    step = plain.trace.step("answer_confidence")
    assert step is not None and step.detail["mapped"] is False
    assert plain.confidence == pytest.approx(max(e.confidence for e in plain.evidence), abs=1e-4)
    assert plain.confidence == pytest.approx(step.detail["retrieval"], abs=1e-4)
