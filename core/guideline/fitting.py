"""Fitting the confidence model on the train split, k-fold checked, reported on the test split.

For every evaluation item and every KB its route searches (out-of-domain and
injection items: both KBs, searched as if mixed), the retrieval features of the
surviving candidates are read from the pipeline's trace
(:func:`core.guideline.retrieval.kb_features`). Labels, per (item, KB):

* 1: an answerable item whose expected source lies in that KB;
* 0: an out-of-domain or injection item (the KB has nothing on it);
* other pairs are left out (an answerable item in the other KB is ambiguous).

:func:`fit_report` fits :func:`core.guideline.calibration.fit_model` per KB on
the train rows (k-fold log-loss and accuracy on train), picks each KB's
threshold on the train rows (answer rate minus ``calib_false_pass_weight`` times
the out-of-domain pass rate, on a 0.05 grid; ties go to the lower threshold,
which answers more: an out-of-domain question has already met the router) and reports the test rows with that model and
threshold. :func:`plot_sensitivity` draws answer and false-pass rates against
the threshold (docs/benchmarks/guideline_qa.md).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from core.guideline.calibration import FEATURES, fit_model, model_confidence
from core.guideline.evaluate import EvalItem
from core.guideline.pipeline import GuidelineQA
from core.guideline.retrieval import constrained_retrieval
from core.guideline.router import drug_synonyms, route_question
from core.guideline.slots import question_slot
from core.guideline.types import Trace
from core.kb.specs import LABEL_KB, ROUTED_KBS, kbs_for_route

__all__ = ["Row", "collect_rows", "fit_report", "plot_sensitivity", "sensitivity"]

KBS = ROUTED_KBS  # the knowledge bases Guideline QA routes to, calibrated per KB
GRID = [round(x, 2) for x in np.arange(0.05, 1.0, 0.05)]


class Row(BaseModel):
    """One (item, KB) pair: its features, label and split."""

    item: str
    kb: str
    split: str
    label: int
    features: dict[str, float]


def collect_rows(qa: GuidelineQA, items: list[EvalItem]) -> list[Row]:
    """Retrieval features of every labelled (item, KB) pair, with every threshold open."""
    cfg = qa.cfg.model_copy(update={"thresholds": {}, "default_threshold": 0.0})
    rows: list[Row] = []
    for item in items:
        negative = item.category in ("out_of_domain", "injection")
        if not negative and not (item.answerable and item.expect == "" and item.expected_source):
            continue
        decision = route_question(item.question, qa.lexicon, cfg)
        if negative or decision.route == "out_of_domain":
            decision = decision.model_copy(update={"route": "mixed", "refused": False, "drugs": [],
                                                   "diagnosis": False})  # fmt: skip
        want = LABEL_KB if item.expected_source and "drug" in item.expected_source else kbs_for_route("guideline")[0]
        synonyms = drug_synonyms(qa.lexicon, decision.drugs, cfg.drug_aliases)
        trace = Trace()
        slot = question_slot(item.question, cfg, synonyms)  # searched with the slot's words, as when answered
        constrained_retrieval(item.question, decision, synonyms, qa.retriever, cfg, qa.settings.kb.rrf_k, trace,
                              slot=slot)  # fmt: skip
        for step in trace.steps:
            if step.name != "confidence" or step.detail["kb"] not in KBS:
                continue
            kb = step.detail["kb"]
            if not negative and kb != want:
                continue
            rows.append(Row(item=item.id, kb=kb, split=item.split, label=0 if negative else 1,
                            features=step.detail["features"]))  # fmt: skip
    return rows


def _log_loss(probs: list[float], labels: list[int]) -> float:
    eps = 1e-6
    terms = [math.log(max(p, eps)) if y else math.log(max(1 - p, eps)) for p, y in zip(probs, labels, strict=True)]
    return -float(np.mean(terms))


def _kfold(rows: list[Row], l2: float, folds: int) -> dict[str, float]:
    """Mean held-out log-loss and accuracy (at 0.5) over ``folds`` interleaved folds of ``rows``."""
    losses, hits, n = [], 0, 0
    for k in range(folds):
        held = [r for i, r in enumerate(rows) if i % folds == k]
        fit = [r for i, r in enumerate(rows) if i % folds != k]
        if not held or len({r.label for r in fit}) < 2:
            continue
        coef = fit_model([r.features for r in fit], [r.label for r in fit], l2)
        probs = [model_confidence(r.features, coef) for r in held]
        losses.append(_log_loss(probs, [r.label for r in held]))
        hits += sum((p >= 0.5) == bool(r.label) for p, r in zip(probs, held, strict=True))
        n += len(held)
    return {"folds": folds, "log_loss": round(float(np.mean(losses)), 4) if losses else float("nan"),
            "accuracy": round(hits / n, 4) if n else float("nan")}  # fmt: skip


def sensitivity(rows: list[Row], coef: dict[str, float]) -> list[dict[str, float]]:
    """Per threshold on :data:`GRID`: the share of positives that pass (answered) and of negatives that pass."""
    probs = [(model_confidence(r.features, coef), r.label) for r in rows]
    pos = [p for p, y in probs if y] or [0.0]
    neg = [p for p, y in probs if not y] or [0.0]
    return [{"threshold": t, "answer_rate": round(float(np.mean([p >= t for p in pos])), 4),
             "false_pass_rate": round(float(np.mean([p >= t for p in neg])), 4)} for t in GRID]  # fmt: skip


def _pick_threshold(curve: list[dict[str, float]], false_pass_weight: float) -> float:
    """The threshold maximising answer rate minus ``false_pass_weight`` times false-pass rate (lowest on ties)."""
    gain = [(round(c["answer_rate"] - false_pass_weight * c["false_pass_rate"], 6), -c["threshold"]) for c in curve]
    return curve[gain.index(max(gain))]["threshold"]


def fit_report(rows: list[Row], l2: float, false_pass_weight: float, folds: int = 5) -> dict[str, Any]:
    """Per KB: the model fitted on train rows, its k-fold check, the threshold, and train/test figures."""
    out: dict[str, Any] = {}
    for kb in KBS:
        train = [r for r in rows if r.kb == kb and r.split == "train"]
        test = [r for r in rows if r.kb == kb and r.split == "test"]
        coef = fit_model([r.features for r in train], [r.label for r in train], l2)
        curves = {"train": sensitivity(train, coef), "test": sensitivity(test, coef)}
        threshold = _pick_threshold(curves["train"], false_pass_weight)
        at = {name: next(c for c in curve if c["threshold"] == threshold) for name, curve in curves.items()}
        out[kb] = {
            "coef": {k: round(v, 4) for k, v in coef.items()},
            "features": list(FEATURES),
            "threshold": threshold,
            "kfold_train": _kfold(train, l2, folds),
            "n": {"train_pos": sum(r.label for r in train), "train_neg": sum(1 - r.label for r in train),
                  "test_pos": sum(r.label for r in test), "test_neg": sum(1 - r.label for r in test)},
            "at_threshold": at,
            "curves": curves,
        }  # fmt: skip
    return out


def plot_sensitivity(report: dict[str, Any], path: Path) -> Path:
    """Answer rate and false-pass rate against the threshold, per KB and split, as a PNG (matplotlib)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(report), figsize=(5.5 * len(report), 4), sharey=True)
    for ax, (kb, fit) in zip(np.atleast_1d(axes), report.items(), strict=True):
        for split, style in (("train", "-"), ("test", "--")):
            curve = fit["curves"][split]
            xs = [c["threshold"] for c in curve]
            ax.plot(xs, [c["answer_rate"] for c in curve], style, color="tab:blue", label=f"answerable passing ({split})")
            ax.plot(xs, [c["false_pass_rate"] for c in curve], style, color="tab:red",
                    label=f"out-of-domain passing ({split})")  # fmt: skip
        ax.axvline(fit["threshold"], color="grey", linestyle=":", label=f"threshold {fit['threshold']:.2f}")
        ax.set_title(f"kb_{kb}")
        ax.set_xlabel("confidence threshold")
        ax.grid(alpha=0.3)
    np.atleast_1d(axes)[0].set_ylabel("share of items whose best chunk passes")
    np.atleast_1d(axes)[0].legend(fontsize=7, loc="lower left")
    fig.suptitle("Guideline QA: threshold sensitivity (model fitted on the train split)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
