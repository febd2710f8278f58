"""Fit the shown-confidence map (``guideline.answer_calib``) on the train split of the real-document benchmark.

    PYTHONPATH=. nice -n 5 .venv/bin/python bench/guideline_realdocs.py --realdocs ../shared/realdocs \
        --split train --json /tmp/train.json
    PYTHONPATH=. nice -n 5 .venv/bin/python bench/fit_answer_confidence.py /tmp/train.json

Reads the answered items of one or more **train** split reports (their raw evidence features and whether
each was correct; several question sets pool their train splits) and fits ``P(correct) = sigmoid(intercept + coef . features)`` with scikit-learn's
LogisticRegression (Platt scaling of a linear evidence score). Features are chosen by greedy forward
selection on repeated stratified 5-fold cross-validated log-loss, over the train split alone; a feature
whose fitted sign disagrees with :data:`core.guideline.answer_confidence.DIRECTION` is never kept, so the
map stays monotone in every feature it uses. Prints the coefficients in raw feature units (paste them into
``_ANSWER_CALIB`` in core/config/guideline.py) with the cross-validated log-loss and ECE beside the
constant base rate's. The test split is never read here.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from core.guideline.answer_fit import fit_map


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("train_report", type=Path, nargs="+", help="one or more train split reports (question sets)")
    args = ap.parse_args()
    rows = []
    for path in args.train_report:
        report = json.loads(path.read_text())
        if report.get("split") != "train":
            sys.exit(f"{path}: split {report.get('split')!r}; the map is fitted on the train split only")
        rows += [
            r for r in report["items"] if r["expect"] in ("answer", "disagreement") and r["answered"] and "features" in r
        ]
    labels = [int(bool(r.get("correct"))) for r in rows]
    print(f"{len(rows)} answered train items, {sum(labels)} correct", file=sys.stderr)
    coef, cv = fit_map([r["features"] for r in rows], labels, log=lambda m: print(m, file=sys.stderr))
    print(json.dumps({"coef": coef, "cross_validated": cv, "n": len(rows), "correct": sum(labels)}, indent=1))


if __name__ == "__main__":
    main()
