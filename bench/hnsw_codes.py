"""HNSW graph codes side by side: 8-bit (sq8) against half precision (fp16) on both vector kinds, one process.

    python bench/hnsw_codes.py                 # 100,000 cases, 200 queries, ef 256, rerank 4 and 16
    python bench/hnsw_codes.py --cases 20000   # quicker

For each vector kind of ``similar_cases.py`` (clustered synthetic, and radiomics-shaped grown from
the built demo index, see ``radiomics_shaped.py``) it builds one ``IndexHNSWSQ`` per code kind with
Casebook's M and efConstruction, fetches ``5 * rerank`` candidates per query (one thread) and
re-scores them exactly, as ``core.cases.index`` does. It prints recall@5 against the exact top five,
the mean cosine by which the returned five fall short of the true five, the build time and the
time per query, with the CPU flags and the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import faiss
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from radiomics_shaped import find_bank
from simbench_data import make_dataset

from core.cases.index import hnsw_quantiser
from core.embed.e5_int8 import cpu_flags
from core.settings import SearchSettings


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--rerank", type=int, nargs="+", default=[4, 16])
    args = ap.parse_args(argv)
    s = SearchSettings()
    flags = [f for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16") if f in cpu_flags()]
    print(f"cpu flags: {' '.join(flags)}; load average at start {os.getloadavg()}")
    bank = np.load(find_bank(Path(__file__).resolve().parent.parent))
    print("| data | codes | rerank | recall@5 | mean cosine shortfall | build s | ms/query |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for kind in ("radiomics", "clustered"):
        ds = make_dataset(args.cases, args.queries, bank=bank if kind == "radiomics" else None)
        vecs, queries, truth = ds.vectors, ds.queries["none"], ds.truth["none"]
        for codes in ("sq8", "fp16"):
            faiss.omp_set_num_threads(os.cpu_count() or 1)
            t = time.perf_counter()
            index = faiss.IndexHNSWSQ(vecs.shape[1], hnsw_quantiser(codes), s.hnsw_m, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = s.hnsw_ef_construction
            index.train(vecs)
            index.add(vecs)
            build_s = time.perf_counter() - t
            faiss.omp_set_num_threads(1)
            index.hnsw.efSearch = s.hnsw_ef_search
            for rerank in args.rerank:
                recall, short = [], []
                t = time.perf_counter()
                for q, gold in zip(queries, truth, strict=True):
                    _, cand = index.search(q[None], max(s.hnsw_ef_search, 5 * rerank))
                    cand = cand[0][: 5 * rerank]
                    cand = cand[cand >= 0]
                    top = cand[np.argsort(-(vecs[cand] @ q))[:5]]
                    recall.append(len(set(top.tolist()) & set(gold.tolist())) / 5)
                    short.append(float((vecs[gold] @ q).mean() - (vecs[top] @ q).mean()))
                per_q = (time.perf_counter() - t) / len(queries) * 1000
                print(f"| {ds.kind} | {codes} | {rerank} | {np.mean(recall):.3f} | {np.mean(short):.1e} | "
                      f"{build_s:.1f} | {per_q:.2f} |", flush=True)  # fmt: skip
    print(f"{args.cases:,} cases, efSearch {s.hnsw_ef_search}, M {s.hnsw_m}; load average at end {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
