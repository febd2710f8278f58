"""Similar-case search benchmark: latency, recall@5, build time and memory of four engines side by side.

    python bench/similar_cases.py                          # 10k and 100k cases
    python bench/similar_cases.py --full                   # adds 1M cases (HNSW builds take minutes)
    python bench/similar_cases.py --sizes 10000 --queries 200 --json out.json
    python bench/similar_cases.py --sizes 1000000 --engines casebook --ef-search 96 128 --rerank 4 8

Synthetic data with a fixed seed: 512-d unit vectors drawn around 400 diagnosis
centres (each anatomy has its own diagnoses, which share an anatomy direction),
per-case noise as in the demo encoder (0.55 relative). One anatomy (``lung``)
holds 10% of the cases and one of its regions (``lung/left_lung_upper``) 1%;
lung diagnoses are spread over all lung regions. Queries are noisy copies of
stored vectors inside the filter (a new scan of a known condition). Ground
truth is the exact top-5 by cosine over the filtered rows.

Engines, each built, queried and dropped in turn inside one process:

* ``numpy``: brute force, ``vectors[mask] @ q`` with a boolean mask for the filter;
* ``faiss-flat``: ``IndexFlatIP`` with ``SearchParameters(sel=IDSelectorBitmap)`` for filters;
* ``faiss-hnsw``: one global ``IndexHNSWSQ`` (8-bit, the same M / efConstruction / efSearch
  and exact re-scoring of ``k * rerank`` candidates as Casebook) filtered by an ID selector;
* ``casebook``: ``core.cases.index.build_index`` + ``CaseIndex.search`` with the settings defaults.

Queries run one at a time with ``faiss.omp_set_num_threads(1)``; builds use every core.
``--ef-search`` and ``--rerank`` sweep the HNSW engines' query-time parameters over one build
(one set of rows per combination; the defaults are the settings' values).
Similarity shown to doctors is a calibrated linear map of the cosine (docs/SIMILARITY.md), monotone, so recall is the same either way.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import faiss
import numpy as np
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from any folder
sys.path.insert(0, str(Path(__file__).resolve().parent))

from radiomics_shaped import find_bank
from simbench_data import DIM, FILTERS, SEED, Dataset, K, make_dataset

from core.cases.index import CaseIndex, IndexParams, build_index, hnsw_quantiser
from core.settings import SearchSettings

ENGINES = ("numpy", "faiss-flat", "faiss-hnsw", "casebook")


def log(msg: str) -> None:
    """Progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def trim_heap() -> None:
    """Hand freed heap pages back to the OS (glibc keeps them), so RSS deltas measure live memory only."""
    with contextlib.suppress(OSError):  # not glibc: RSS deltas may include freed memory
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def rss_bytes() -> tuple[int, int]:
    """Resident memory of this process: (anonymous, file-backed) bytes, from /proc/self/status.

    File-backed pages are memory-mapped files (Casebook's vectors.npy): shared, reclaimable page cache.
    """
    fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines() if ":" in line)
    return int(fields["RssAnon"].split()[0]) * 1024, int(fields["RssFile"].split()[0]) * 1024


# --- engines -----------------------------------------------------------------------------------------


class Engine(Protocol):
    """One search implementation: built once, then queried one vector at a time."""

    def build(self, ds: Dataset, workdir: Path) -> int:
        """Build (and persist where the engine persists); return bytes on disk."""
        ...

    def search(self, query: np.ndarray, filter_name: str) -> np.ndarray:
        """Ids of the top-k cases for one query under the named filter."""
        ...


@runtime_checkable
class Tunable(Protocol):
    """An engine whose query-time HNSW parameters can change without a rebuild."""

    def tune(self, ef_search: int, rerank: int) -> None:
        """Use this efSearch and re-scoring factor for the following searches."""
        ...


def _top(scores: np.ndarray, ids: np.ndarray, k: int) -> np.ndarray:
    top = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
    return ids[top[np.argsort(-scores[top])]]


def _bitmap_params(
    masks: dict[str, np.ndarray | None], make: Callable[..., Any], **kwargs: Any
) -> tuple[dict[str, Any], list[Any]]:
    """Search parameters per filter with an IDSelectorBitmap; returns them and the objects to keep alive."""
    params: dict[str, Any] = {}
    keep: list[Any] = []
    for name, mask in masks.items():
        if mask is None:
            params[name] = make(**kwargs)
            continue
        bits = np.packbits(mask, bitorder="little")
        sel = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(bits))
        keep += [bits, sel]
        params[name] = make(sel=sel, **kwargs)
    return params, keep


class NumpyEngine:
    """Brute force over an in-memory copy; the filter is a boolean mask."""

    def build(self, ds: Dataset, workdir: Path) -> int:
        self.vectors = ds.vectors.copy()
        self.ids = np.arange(ds.n)
        self.masks = ds.masks
        return int(self.vectors.nbytes)

    def search(self, query: np.ndarray, filter_name: str) -> np.ndarray:
        mask = self.masks[filter_name]
        if mask is None:
            return _top(self.vectors @ query, self.ids, K)
        return _top(self.vectors[mask] @ query, self.ids[mask], K)


class FlatEngine:
    """``IndexFlatIP``; filters through ``SearchParameters(sel=IDSelectorBitmap)``."""

    def build(self, ds: Dataset, workdir: Path) -> int:
        self.index = faiss.IndexFlatIP(DIM)
        self.index.add(ds.vectors)
        self.params, self._keep = _bitmap_params(ds.masks, faiss.SearchParameters)
        return _written_size(self.index, workdir)

    def search(self, query: np.ndarray, filter_name: str) -> np.ndarray:
        _, ids = self.index.search(query[None], K, params=self.params[filter_name])
        return np.asarray(ids[0])


class GlobalHnswEngine:
    """One global ``IndexHNSWSQ`` (Casebook's parameters) filtered by an ID selector, re-scored exactly."""

    def __init__(self, s: SearchSettings) -> None:
        self.s = s

    def build(self, ds: Dataset, workdir: Path) -> int:
        codes = hnsw_quantiser(self.s.hnsw_codes)
        self.index = faiss.IndexHNSWSQ(DIM, codes, self.s.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        self.index.hnsw.efConstruction = self.s.hnsw_ef_construction
        self.index.train(ds.vectors)
        self.index.add(ds.vectors)
        self.masks = ds.masks
        self.tune(self.s.hnsw_ef_search, self.s.hnsw_rerank)
        self.vectors = ds.vectors  # re-scoring reads the benchmark's array (shared, not counted as this engine's)
        return _written_size(self.index, workdir)

    def tune(self, ef_search: int, rerank: int) -> None:
        self.n_cand = K * rerank
        hnsw_params: Any = faiss.SearchParametersHNSW  # type: ignore[attr-defined]  # missing from the stubs
        self.params, self._keep = _bitmap_params(self.masks, hnsw_params, efSearch=max(ef_search, self.n_cand))

    def search(self, query: np.ndarray, filter_name: str) -> np.ndarray:
        _, cand = self.index.search(query[None], self.n_cand, params=self.params[filter_name])
        rows = np.sort(cand[0][cand[0] >= 0])
        if len(rows) == 0:
            return rows
        return _top(self.vectors[rows] @ query, rows, K)


class CasebookEngine:
    """``core.cases.index``: contiguous groups, exact scan below hnsw_min_cases, per-group HNSW above."""

    def __init__(self, s: SearchSettings) -> None:
        self.s = s

    def build(self, ds: Dataset, workdir: Path) -> int:
        path = build_index(
            workdir / "cases",
            np.arange(ds.n, dtype=np.int64),
            ds.anatomy.tolist(),
            ds.region.tolist(),
            ds.vectors,
            encoder_id="bench",
            table_checksum="bench",
            params=IndexParams(self.s.hnsw_min_cases, self.s.hnsw_m, self.s.hnsw_ef_construction, self.s.hnsw_codes),
        )
        self.index = CaseIndex(path, verify=False)
        self.tune(self.s.hnsw_ef_search, self.s.hnsw_rerank)
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())

    def tune(self, ef_search: int, rerank: int) -> None:
        self.ef_search, self.rerank = ef_search, rerank

    def search(self, query: np.ndarray, filter_name: str) -> np.ndarray:
        anatomy, region = FILTERS[filter_name]  # (None, None) is the "*" group: all cases
        ids, _ = self.index.search(query, anatomy, region, K, ef_search=self.ef_search, rerank=self.rerank)
        return ids


def _written_size(index: Any, workdir: Path) -> int:
    path = workdir / "index.faiss"
    faiss.write_index(index, str(path))
    size = path.stat().st_size
    path.unlink()
    return size


# --- measurement -------------------------------------------------------------------------------------


def make_engine(name: str, s: SearchSettings) -> Engine:
    """An unbuilt engine by name."""
    engines: dict[str, Callable[[], Engine]] = {
        "numpy": NumpyEngine,
        "faiss-flat": FlatEngine,
        "faiss-hnsw": lambda: GlobalHnswEngine(s),
        "casebook": lambda: CasebookEngine(s),
    }
    return engines[name]()


def _query_filter(ds: Dataset, engine: Engine, name: str, fname: str, warmup: int) -> dict[str, Any]:
    """Warm up, then time every query of one filter one at a time; latency, recall@5 and short results."""
    queries = ds.queries[fname]
    for q in queries[:warmup]:
        engine.search(q, fname)
    times, recalls, short = [], [], 0
    for q, truth in zip(queries, ds.truth[fname], strict=True):
        t = time.perf_counter()
        ids = engine.search(q, fname)
        times.append(time.perf_counter() - t)
        short += int(len(ids) < K or bool((ids < 0).any()))
        recalls.append(len(set(ids.tolist()) & set(truth.tolist())) / K)
    ms = np.asarray(times) * 1000
    row = {
        "data": ds.kind,
        "n": ds.n,
        "filter": fname,
        "filter_rows": _rows(ds, fname),
        "engine": name,
        "p50_ms": round(float(np.percentile(ms, 50)), 3),
        "p95_ms": round(float(np.percentile(ms, 95)), 3),
        "recall_at_5": round(float(np.mean(recalls)), 4),
        "short_results": short,
        "queries": len(queries),
    }
    log(f"  {name} {fname}: p50 {row['p50_ms']} ms, p95 {row['p95_ms']} ms, recall {row['recall_at_5']}, short {short}")
    return row


def measure(
    ds: Dataset, name: str, s: SearchSettings, warmup: int, blas_threads: int, sweep: list[tuple[int, int]]
) -> list[dict[str, Any]]:
    """Build one engine, run every filter's queries one at a time, and return one row per filter.

    HNSW engines run once per (ef_search, rerank) in ``sweep`` over the same build.
    """
    gc.collect()
    trim_heap()
    rss0 = rss_bytes()
    workdir = Path(tempfile.mkdtemp(prefix="simbench-"))
    try:
        faiss.omp_set_num_threads(os.cpu_count() or 1)
        t0 = time.perf_counter()
        engine = make_engine(name, s)
        disk = engine.build(ds, workdir)
        build_s = time.perf_counter() - t0
        faiss.omp_set_num_threads(1)
        log(f"  {name}: built in {build_s:.1f} s")
        rows: list[dict[str, Any]] = []
        with threadpool_limits(blas_threads, user_api="blas"):
            tunable = engine if isinstance(engine, Tunable) else None
            for ef, rerank in sweep if tunable is not None else [(0, 0)]:
                label, extra = name, {}
                if tunable is not None:
                    tunable.tune(ef, rerank)
                    extra = {"ef_search": ef, "rerank": rerank}
                    label = f"{name} ef{ef}/r{rerank}" if len(sweep) > 1 else name
                rows += [_query_filter(ds, engine, label, fname, warmup) | extra for fname in ds.queries]
        gc.collect()
        gc.collect()
        trim_heap()
        anon, file = (round((after - before) / ds.n) for after, before in zip(rss_bytes(), rss0, strict=True))
        for r in rows:
            r |= {
                "build_s": round(build_s, 1),
                "disk_mb": round(disk / 2**20, 1),
                "rss_anon_b_per_case": anon,
                "rss_file_b_per_case": file,
            }
        del engine
        return rows
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
        gc.collect()


def _rows(ds: Dataset, filter_name: str) -> int:
    mask = ds.masks[filter_name]
    return ds.n if mask is None else int(mask.sum())


def markdown(rows: list[dict[str, Any]]) -> str:
    """The results as a Markdown table."""
    head = "| data | cases | filter (rows) | engine | p50 ms | p95 ms | recall@5 | short/-1 | build s | disk MB | RSS B/case anon + file |"
    out = [head, "|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(
            f"| {r.get('data', 'clustered')} | {r['n']:,} | {r['filter']} ({r['filter_rows']:,}) | {r['engine']} | {r['p50_ms']:.2f} | "
            f"{r['p95_ms']:.2f} | {r['recall_at_5']:.3f} | {r['short_results']} | {r['build_s']} | "
            f"{r['disk_mb']} | {r['rss_anon_b_per_case']:,} + {r['rss_file_b_per_case']:,} |"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="case counts to benchmark")
    ap.add_argument("--full", action="store_true", help="also run 1,000,000 cases (slow HNSW builds)")
    ap.add_argument("--queries", type=int, default=200, help="timed queries per filter (>= 200 for the docs)")
    ap.add_argument("--warmup", type=int, default=10, help="untimed queries per filter before timing")
    ap.add_argument("--blas-threads", type=int, default=1, help="numpy/OpenBLAS threads while querying (builds: all)")
    ap.add_argument("--engines", nargs="+", default=list(ENGINES), choices=ENGINES)
    ap.add_argument("--ef-search", type=int, nargs="+", help="HNSW efSearch values to sweep (default: settings)")
    ap.add_argument("--rerank", type=int, nargs="+", help="HNSW re-scoring factors to sweep (default: settings)")
    ap.add_argument("--json", type=Path, help="also write the rows and run metadata here")
    ap.add_argument(
        "--data",
        nargs="+",
        default=["clustered"],
        choices=["clustered", "radiomics"],
        help="vector kinds, each at every size in one run: clustered synthetic, or radiomics-shaped "
        "(grown from a built demo index's vectors, see --bank)",
    )
    ap.add_argument("--bank", type=Path, help="vectors.npy of a built case index (default: the newest under indexes/)")
    args = ap.parse_args(argv)
    sizes = sorted(set(args.sizes + ([1_000_000] if args.full else [])))
    settings = SearchSettings()
    sweep = list(itertools.product(args.ef_search or [settings.hnsw_ef_search], args.rerank or [settings.hnsw_rerank]))
    meta = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "faiss": faiss.__version__,
        "numpy": np.__version__,
        "cpus": os.cpu_count(),
        "load_avg_start": os.getloadavg(),
        "settings": settings.model_dump(include={"hnsw_m", "hnsw_ef_construction", "hnsw_ef_search", "hnsw_rerank",
                                                 "hnsw_min_cases", "hnsw_codes"}),
        "seed": SEED,
        "blas_threads": args.blas_threads,
        "sweep_ef_search_rerank": sweep,
    }  # fmt: skip
    rows: list[dict[str, Any]] = []
    bank = None
    if "radiomics" in args.data:
        bank_path = args.bank or find_bank(Path(__file__).resolve().parent.parent)
        bank = np.load(bank_path)
        meta["bank"] = {"path": str(bank_path), "cases": len(bank)}
    for n, kind in itertools.product(sizes, args.data):
        t = time.perf_counter()
        ds = make_dataset(n, args.queries, bank=bank if kind == "radiomics" else None)
        log(f"{n:,} cases ({ds.kind}): data and ground truth in {time.perf_counter() - t:.1f} s")
        for name in args.engines:
            rows += measure(ds, name, settings, args.warmup, args.blas_threads, sweep)
        del ds
        gc.collect()
    meta["load_avg_end"] = os.getloadavg()
    print(markdown(rows))
    loads = [f"{x:.2f}" for x in (*meta["load_avg_start"], *meta["load_avg_end"])]
    print(
        f"\nfaiss {meta['faiss']}, numpy {meta['numpy']}, {meta['cpus']} cpus, query threads: faiss 1, "
        f"BLAS {args.blas_threads}; load average {' '.join(loads[:3])} -> {' '.join(loads[3:])}"
    )
    if args.json:
        args.json.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
