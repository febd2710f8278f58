"""Benchmark self-reflective RAG: the batched critic's speed-up, and seconds per question by stage.

    python -m bench.selfrag_bench critic [--docs 20] [--words 120] [--reps 3] [--sizes 256x4 512x8] [--json]
    python -m bench.selfrag_bench pipeline [--benchmark assets/mcq/mcq_sample_mirage.json] [--dataset medqa]
                                           [--limit 6] [--modes no-retrieval always adaptive] [--out DIR] [--json]

``critic`` builds randomly initialised Llamas with the reflection tokens added
(:func:`core.selfrag.tiny.build_tiny_reflection_model`, no download) and, on the
same model and documents, times (1) the batched critic with the shared prefix's
KV cache, (2) the batched critic without the cache and (3) the reference
approach, greedy generation of ``selfrag.baseline_max_tokens`` (20) tokens per
document. It checks that (1), (2) and (3) read the same relevance
log-probabilities. ``pipeline`` runs the harness on the default local model
(llama.cpp, judge critic) over the demo knowledge bases. Both print Markdown
tables (docs/benchmarks/selfrag.md keeps the last ones).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from core.selfrag.settings import SelfRagSettings
from core.selfrag.types import Document

QUESTION = (
    "A 40-year-old man has newly diagnosed, drug-susceptible pulmonary tuberculosis. Which regimen is recommended "
    "for the intensive phase?\nA. Isoniazid alone\nB. Isoniazid, rifampicin, pyrazinamide and ethambutol\n"
    "C. Bedaquiline and linezolid\nD. Rifampicin and azithromycin"
)


def _documents(n: int, words: int) -> list[Document]:
    """``n`` distinct passages of ``words`` words cut from the demo guideline texts."""
    root = Path(__file__).resolve().parent.parent / "assets" / "kb" / "guidelines"
    vocab = " ".join(p.read_text(encoding="utf-8") for p in sorted(root.glob("*.md"))).split()
    step = max(1, (len(vocab) - words) // n)
    return [Document(f"d{i}", " ".join(vocab[i * step : i * step + words]), f"passage {i}") for i in range(n)]


def _time(fn: Any, question: str, documents: list[Document], reps: int) -> tuple[float, Any]:
    runs, result = [], None
    for _ in range(reps):
        started = time.perf_counter()
        result = fn(question, documents)
        runs.append(time.perf_counter() - started)
    return statistics.median(runs), result


def bench_critic(sizes: list[str], docs: int, words: int, reps: int) -> list[dict[str, Any]]:
    """Median seconds of the three critic strategies per model size."""
    from core.selfrag.native import ReflectionModel
    from core.selfrag.tiny import build_tiny_reflection_model

    documents = _documents(docs, words)
    rows = []
    for size in sizes:
        hidden, layers = (int(x) for x in size.split("x"))
        with tempfile.TemporaryDirectory() as tmp:
            folder = build_tiny_reflection_model(Path(tmp), hidden=hidden, layers=layers, heads=8, seed=0)
            cached = SelfRagSettings(native_threads=1, critic_batch_size=docs)
            model = ReflectionModel(folder, cached, seed=0)
            params = sum(p.numel() for p in model.lm.parameters())
            prefix, suffixes = model.document_segments(QUESTION, documents)
            model.read_documents(QUESTION, documents[:2])  # warm-up
            batched_s, batched = _time(model.read_documents, QUESTION, documents, reps)
            model.settings = cached.model_copy(update={"reuse_prefix_cache": False})
            uncached_s, uncached = _time(model.read_documents, QUESTION, documents, reps)
            model.settings = cached
            baseline_s, baseline = _time(model.read_documents_by_generation, QUESTION, documents, reps)
            drift = max(
                abs(a.relevance[k] - b.relevance[k])
                for x, y in ((batched, uncached), (batched, baseline))
                for a, b in zip(x, y, strict=True)
                for k in a.relevance
            )
        rows.append(
            {
                "model": f"Llama {hidden}x{layers} ({params / 1e6:.0f}M params, random)",
                "docs": docs,
                "prefix_tokens": len(prefix),
                "mean_doc_tokens": round(statistics.mean(len(s) for s in suffixes), 1),
                "batched_cached_s": round(batched_s, 3),
                "batched_uncached_s": round(uncached_s, 3),
                "per_doc_generation_s": round(baseline_s, 3),
                "speedup_cached": round(baseline_s / batched_s, 1),
                "speedup_uncached": round(baseline_s / uncached_s, 1),
                "max_relevance_logprob_diff": float(f"{drift:.2g}"),
            }
        )
    return rows


def bench_pipeline(
    benchmark: Path, dataset: str, limit: int, modes: list[str], out: Path, timeout_s: float
) -> list[dict[str, Any]]:
    """Run the harness on the default model per mode; accuracy and seconds per stage."""
    from core.kb import ensure_demo_kb
    from core.selfrag.evaluate import run_eval
    from core.selfrag.factory import build_pipeline
    from core.selfrag.mcq import load_benchmark, sample
    from core.settings import load_settings

    # A shared, busy 2-core machine: give llama.cpp room rather than time out (answers run 40-80 s here).
    settings = load_settings(llm={"backend": "llamacpp", "timeout_s": timeout_s})
    ensure_demo_kb(settings)
    pipeline = build_pipeline(settings)
    items = sample(load_benchmark(benchmark)[dataset], limit, settings.selfrag.eval_seed)
    rows = []
    for mode in modes:
        started = time.perf_counter()
        (summary,) = run_eval(pipeline, items, out / f"selfrag_{dataset}_{mode}.jsonl", mode, progress=True)  # type: ignore[arg-type]
        row = summary.to_json() | {"wall_s": round(time.perf_counter() - started, 1)}
        rows.append(row)
    return rows


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"
    if isinstance(value, dict):
        return ", ".join(f"{k} {v:.1f}" for k, v in value.items() if v >= 0.05)
    return str(value)


def _table(rows: list[dict[str, Any]]) -> str:
    keys = list(rows[0])
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    lines += ["| " + " | ".join(_cell(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    c = sub.add_parser("critic")
    c.add_argument("--sizes", nargs="+", default=["256x4", "512x8"], help="HIDDENxLAYERS of the random models.")
    c.add_argument("--docs", type=int, default=20)
    c.add_argument("--words", type=int, default=120)
    c.add_argument("--reps", type=int, default=3)
    p = sub.add_parser("pipeline")
    p.add_argument("--benchmark", type=Path, default=Path("assets/mcq/mcq_sample_mirage.json"))
    p.add_argument("--dataset", default="medqa")
    p.add_argument("--limit", type=int, default=6)
    p.add_argument("--modes", nargs="+", default=["no-retrieval", "always", "adaptive"])
    p.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "selfrag_bench")
    p.add_argument("--timeout-s", type=float, default=300.0, help="llm.timeout_s for this run.")
    for q in (c, p):
        q.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    load = os.getloadavg()[0]
    if args.what == "critic":
        rows = bench_critic(args.sizes, args.docs, args.words, args.reps)
    else:
        rows = bench_pipeline(args.benchmark, args.dataset, args.limit, args.modes, args.out, args.timeout_s)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"<!-- {platform.processor() or platform.machine()}, load average {load:.2f} at start -->")
        print(_table(rows))


if __name__ == "__main__":
    main()
