"""``python -m core selfrag`` (one question, whole trace) and ``python -m core eval-mcq`` (benchmark harness).

Registered by adding ``"core.selfrag.cli"`` to ``_AREAS`` in :mod:`core.cli`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from core.cli import emit, settings_from_args
from core.errors import ConfigError, InvalidInputError

__all__ = ["register", "run_eval_mcq", "run_selfrag"]

_MODES = ("no-retrieval", "always", "adaptive")


def _settings(args: argparse.Namespace) -> Any:
    settings = settings_from_args(args)
    if not settings.selfrag.enabled:
        raise ConfigError("Self-reflective RAG is switched off (selfrag.enabled = false)")
    return settings


def _options(raw: str | None) -> dict[str, str]:
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise InvalidInputError(f"--options-json is not JSON: {exc}") from exc
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise InvalidInputError('--options-json must be an object of letter -> text, e.g. {"A": "Amoxicillin"}')
    return {str(k).upper(): v for k, v in data.items()}


def run_selfrag(args: argparse.Namespace) -> int:
    """One question through the pipeline; prints the trace."""
    from core.runtime import Runtime

    settings = _settings(args)
    trace = Runtime(settings).selfrag.run(args.question, _options(args.options_json), mode=args.mode)
    if args.json:
        emit(trace.to_json(), True)
    else:
        decision = trace.decision
        emit(f"retrieval: {decision.reason if decision else '-'}", False)
        for doc in trace.documents:
            mark = "*" if doc.kept else " "
            emit(f"{mark} {doc.score:+.3f} {doc.document.title or doc.document.doc_id}", False)
        emit(f"answer ({len(trace.iterations)} iteration(s)): {trace.clean_answer}", False)
        if trace.options:
            emit(f"letter: {trace.letter or 'none'}", False)
        if trace.abstention:
            emit(f"abstention: {trace.abstention.reason} {trace.abstention.detail}", False)
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def run_eval_mcq(args: argparse.Namespace) -> int:
    """Run a benchmark in one or more modes on the same questions; prints outcomes and accuracies per dataset."""
    from core.runtime import Runtime
    from core.selfrag.evaluate import run_eval
    from core.selfrag.mcq import load_benchmark, sample

    settings = _settings(args)
    s = settings.selfrag
    data = load_benchmark(Path(args.benchmark))
    names = [args.dataset] if args.dataset else sorted(data)
    missing = [n for n in names if n not in data]
    if missing:
        raise InvalidInputError(
            f"Dataset(s) {', '.join(missing)} not in {args.benchmark}; it has {', '.join(sorted(data))}"
        )
    limit = s.eval_limit if args.limit is None else args.limit
    seed = s.eval_seed if args.seed is None else args.seed
    items = [item for name in names for item in sample(data[name], limit, seed)]
    modes = args.modes or [args.mode or s.mode]
    out = Path(args.out) if args.out else Path(f"selfrag_{Path(args.benchmark).stem}_{'_'.join(modes)}.jsonl")
    summaries = run_eval(
        Runtime(settings).selfrag, items, out, modes, progress=s.progress and not args.no_progress,
        workers=s.eval_workers,
    )  # fmt: skip
    payload: dict[str, Any] = {"out": str(out), "results": [x.to_json() for x in summaries]}
    if args.plot:
        from core.selfrag.plot import plot_modes

        payload["plot"] = str(plot_modes(summaries, Path(args.plot), title=f"{Path(args.benchmark).name}"))
    if args.json:
        emit(payload, True)
    else:
        for x in summaries:
            emit(
                f"{x.dataset} [{x.mode}] n={x.n}: correct {x.correct}, wrong {x.wrong}, no letter {x.no_letter}, "
                f"timeout {x.timeout}, backend error {x.backend_error}; accuracy {_pct(x.accuracy)} "
                f"(95% CI {_pct(x.ci_low)}-{_pct(x.ci_high)}), over answered {_pct(x.accuracy_answered)} "
                f"(95% CI {_pct(x.ci_answered_low)}-{_pct(x.ci_answered_high)}); retrieved {x.retrieved}, "
                f"median {x.median_seconds:.1f} s/question",
                False,
            )
        if any(x.timeout or x.backend_error for x in summaries):
            print("timeouts / backend errors: run the same command again to retry only those", file=sys.stderr)
        print(f"traces: {out}" + (f"; plot: {payload['plot']}" if args.plot else ""), file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``selfrag`` and ``eval-mcq``."""
    p = sub.add_parser("selfrag", help="Answer one question with self-reflective RAG and show the whole trace.")
    p.add_argument("question")
    p.add_argument("--options-json", default=None, help='Options as JSON, e.g. \'{"A": "Amoxicillin", "B": "..."}\'.')
    p.add_argument("--mode", choices=_MODES, default=None, help="Retrieval mode (default: selfrag.mode).")
    p.add_argument("--json", action="store_true", help="Print the trace as JSON.")
    p.set_defaults(func=run_selfrag)

    p = sub.add_parser("eval-mcq", help="Run a multiple-choice benchmark (MIRAGE JSON or Self-BioRAG JSONL).")
    p.add_argument("--benchmark", required=True, help="Benchmark file (.json MIRAGE, .jsonl Self-BioRAG).")
    p.add_argument("--dataset", default=None, help="Dataset name inside the file (default: all).")
    p.add_argument("--limit", type=int, default=None, help="Questions per dataset (default: selfrag.eval_limit).")
    p.add_argument("--seed", type=int, default=None, help="Sampling seed (default: selfrag.eval_seed).")
    p.add_argument("--mode", choices=_MODES, default=None, help="Retrieval mode (default: selfrag.mode).")
    p.add_argument(
        "--modes", nargs="+", choices=_MODES, default=None,
        help="Several modes on the same questions in one run (e.g. no-retrieval adaptive always); overrides --mode.",
    )  # fmt: skip
    p.add_argument(
        "--out", default=None,
        help="JSONL trace file; an existing one is resumed (timeouts and backend errors run again).",
    )  # fmt: skip
    p.add_argument("--plot", default=None, help="Write a PNG comparing the modes (accuracy, seconds, P(retrieve)).")
    p.add_argument("--no-progress", action="store_true", help="No progress bar.")
    p.add_argument("--json", action="store_true", help="Print the summary as JSON.")
    p.set_defaults(func=run_eval_mcq)
