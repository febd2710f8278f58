"""Corpus scale benchmark: synthetic clustered 768-d corpus, ingestion, serving memory, latency, recall.

    nice -n 10 .venv/bin/python -m bench.corpus_scale --n 1000000      # ~15 min, ~7 GB disk in --work
    nice -n 10 .venv/bin/python -m bench.corpus_scale --n 100000       # ~2 min
    nice -n 10 .venv/bin/python -m bench.corpus_scale --n 100000 --keep-data --ingest-only --timeline tl.tsv

Each run adds (or replaces) its row in docs/benchmarks/corpus_scale.json and
rewrites the results table of docs/benchmarks/corpus_scale.md (between the
``results`` markers; the prose around it is kept).

Synthetic vectors: a gaussian mixture around ``--clusters`` centres with a
decaying spectrum (a few strong directions, like text embeddings), then
L2-normalised; queries are fresh draws from the same mixture. Ingestion and
serving each run in a fresh subprocess, so resident memory is that of a
process that only serves (Python, numpy, FAISS and the corpus; no query
encoder, queries are precomputed vectors).
Ingestion memory is the child's ``VmHWM`` (not ``ru_maxrss``, which a child
inherits from the parent that generated the data), split by phase into
anonymous and file-backed pages by :class:`MemorySampler`.
"""

from __future__ import annotations

import argparse
import json
import logging
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent

RESULTS = REPO / "docs" / "benchmarks" / "corpus_scale.json"
DOC = REPO / "docs" / "benchmarks" / "corpus_scale.md"
BLOCK = 50_000


def synth(n: int, dim: int, clusters: int, seed: int, rows_seed: int) -> Any:
    """Yield blocks of ``n`` normalised mixture vectors (centres fixed by ``seed``, draws by ``rows_seed``)."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((dim, dim)))[0].astype(np.float32)
    spectrum = (1.0 / np.arange(1, dim + 1) ** 0.6).astype(np.float32)
    centres = (rng.standard_normal((clusters, dim)).astype(np.float32) * spectrum) @ basis.T
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    draw = np.random.default_rng(rows_seed)
    for start in range(0, n, BLOCK):
        m = min(BLOCK, n - start)
        noise = (draw.standard_normal((m, dim)).astype(np.float32) * spectrum) @ basis.T
        noise /= np.linalg.norm(noise, axis=1, keepdims=True)
        x = centres[draw.integers(0, clusters, m)] + 0.6 * noise
        yield x / np.linalg.norm(x, axis=1, keepdims=True)


def make_data(work: Path, n: int, dim: int, clusters: int, n_queries: int) -> dict[str, float]:
    """Write corpus.jsonl, corpus.npy, queries.npy and truth.npy (exact top-10) under ``work``."""
    import faiss

    work.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    out = np.lib.format.open_memmap(work / "corpus.npy", mode="w+", dtype=np.float32, shape=(n, dim))
    with (work / "corpus.jsonl").open("w") as fh:
        pos = 0
        for block in synth(n, dim, clusters, 0, 1):
            out[pos : pos + len(block)] = block
            fh.writelines(
                json.dumps({"id": f"syn{i}", "title": f"Synthetic passage {i}",
                            "content": f"Passage {i} of the synthetic scale corpus, cluster-structured vectors."})
                + "\n" for i in range(pos, pos + len(block))
            )  # fmt: skip
            pos += len(block)
    out.flush()
    queries = next(synth(n_queries, dim, clusters, 0, 2))
    np.save(work / "queries.npy", queries)
    gen_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    faiss.omp_set_num_threads(2)
    best_d = np.full((n_queries, 10), -np.inf, dtype=np.float32)
    best_i = np.zeros((n_queries, 10), dtype=np.int64)
    for start in range(0, n, 200_000):
        d, i = faiss.knn(queries, np.ascontiguousarray(out[start : start + 200_000]), 10, faiss.METRIC_INNER_PRODUCT)
        d_all, i_all = np.hstack([best_d, d]), np.hstack([best_i, i + start])
        top = np.argsort(-d_all, axis=1)[:, :10]
        best_d, best_i = np.take_along_axis(d_all, top, 1), np.take_along_axis(i_all, top, 1)
    np.save(work / "truth.npy", best_i)
    return {"generate_s": round(gen_s, 1), "exact_truth_s": round(time.perf_counter() - t0, 1)}


def _settings(work: Path) -> Any:
    from core.settings import load_settings

    return load_settings("test", paths={"index_dir": work / "idx", "data_dir": work / "data"}, kb={"progress": False})


class MemorySampler(logging.Handler):
    """Samples this process's resident memory in a thread and attributes it to the ingestion phase.

    The phase is the ``phase`` attribute of the last record logged by ``core.kb.corpus_*`` (``stream``,
    ``sample``, ``train``, ``add``, ``write``, ``checksum``). Anonymous (heap) and file-backed (mapped
    files) pages are kept apart: ``ru_maxrss`` counts both.
    """

    def __init__(self, interval_s: float = 0.01) -> None:
        super().__init__(logging.DEBUG)
        self.phase, self.interval_s, self.t0 = "start", interval_s, time.perf_counter()
        self.phases: dict[str, dict[str, float]] = {}
        self.timeline: list[tuple[float, str, float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def emit(self, record: logging.LogRecord) -> None:
        """Switch phase on a record that names one."""
        phase = getattr(record, "phase", None)
        if phase is not None:
            self._sample()
            self.phase = phase

    def _sample(self) -> None:
        m = _rss()
        now = round(time.perf_counter() - self.t0, 2)
        p = self.phases.setdefault(self.phase, {"from_s": now, "rss_mb": 0, "anon_mb": 0, "file_mb": 0})
        p["to_s"] = now
        for key, field in (("rss_mb", "VmRSS"), ("anon_mb", "RssAnon"), ("file_mb", "RssFile")):
            p[key] = max(p[key], m[field])
        self.timeline.append((now, self.phase, m["RssAnon"], m["RssFile"]))

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            self._sample()

    def __enter__(self) -> MemorySampler:
        for name in ("core.kb.corpus.build", "core.kb.corpus.ann"):
            logger = logging.getLogger(name)
            logger.setLevel(logging.DEBUG)
            logger.addHandler(self)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()
        for name in ("core.kb.corpus.build", "core.kb.corpus.ann"):
            logging.getLogger(name).removeHandler(self)

    def report(self) -> dict[str, Any]:
        """Peaks overall and per phase (MiB), and the phase holding the highest anonymous memory."""
        top = max(self.phases, key=lambda k: self.phases[k]["anon_mb"])
        return {
            "ingest_peak_rss_mb": round(_status()["VmHWM"]), "ingest_peak_anon_mb": round(self.phases[top]["anon_mb"]),
            "ingest_peak_phase": top, "ingest_peak_file_mb": round(max(p["file_mb"] for p in self.phases.values())),
            "ingest_phases": self.phases,
        }  # fmt: skip


def child_ingest(work: Path, timeline: Path | None = None) -> dict[str, Any]:
    """(Subprocess) ingest the corpus with its precomputed vectors, sampling memory by phase."""
    from core.kb.corpus.build import ingest_corpus

    t0 = time.perf_counter()
    with MemorySampler() as sampler:
        report = ingest_corpus(
            _settings(work), work / "corpus.jsonl", "scale", embeddings=work / "corpus.npy",
            encoder_id="synthetic-768", restart=True,
        )  # fmt: skip
    if timeline is not None:
        timeline.write_text("".join(f"{t}\t{p}\t{a}\t{f}\n" for t, p, a, f in sampler.timeline))
    # Not ru_maxrss: a child started by subprocess (vfork + exec) inherits its parent's high-water mark there,
    # so it reported the bench's own data generation (1.2 GB at 100k, 3.8 GB at 1M). VmHWM is this process's.
    return {
        "ingest_s": round(time.perf_counter() - t0, 1),
        **sampler.report(),
        **report.to_json(),
    }


def _status() -> dict[str, float]:
    """Memory lines of /proc/self/status in MiB (VmRSS = RssAnon + RssFile + RssShmem; VmHWM is the peak)."""
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.startswith(("Vm", "Rss")) and value.strip().endswith("kB"):
            fields[key] = round(int(value.split()[0]) / 1024, 1)
    return fields


def _rss() -> dict[str, float]:
    return {k: v for k, v in _status().items() if k in {"VmRSS", "RssAnon", "RssFile"}}


def child_serve(work: Path, exact_queries: int) -> dict[str, Any]:
    """(Subprocess) open the corpus, time queries, measure RSS, then exact search side by side."""
    import faiss

    from core.kb.corpus.layout import corpus_link
    from core.kb.corpus.serve import CorpusIndex

    settings = _settings(work)
    faiss.omp_set_num_threads(settings.kb.faiss_threads)
    queries, truth = np.load(work / "queries.npy"), np.load(work / "truth.npy")
    base = _rss()
    t0 = time.perf_counter()
    index = CorpusIndex(corpus_link(work / "idx", "scale").resolve(), settings.kb)
    open_s = time.perf_counter() - t0
    for q in queries[:10]:  # warm-up
        index.search_vector(q, 10)
    lat, recall = [], []
    for q, gt in zip(queries, truth, strict=True):
        t0 = time.perf_counter()
        found = index.search_vector(q, 10)
        index.chunks([p for p, _ in found])  # the text a caller would read
        lat.append(time.perf_counter() - t0)
        recall.append(len({p for p, _ in found} & set(gt.tolist())) / 10)
    serving = _rss()
    # Exact search over the same vectors (a flat scan of the .npy), a few queries, after RSS was taken.
    corpus = np.load(work / "corpus.npy", mmap_mode="r")
    exact_lat = []
    for q in queries[:exact_queries]:
        t0 = time.perf_counter()
        scores = np.concatenate([corpus[s : s + 200_000] @ q for s in range(0, len(corpus), 200_000)])
        np.argpartition(-scores, 10)[:10]
        exact_lat.append(time.perf_counter() - t0)
    ms = np.array(lat) * 1000
    return {
        "open_s": round(open_s, 2), "queries": len(queries), "p50_ms": round(float(np.percentile(ms, 50)), 2),
        "p95_ms": round(float(np.percentile(ms, 95)), 2), "recall_at_10": round(float(np.mean(recall)), 4),
        "rss_before_open_mb": base["VmRSS"], "rss_serving_mb": serving["VmRSS"],
        "rss_anon_mb": serving["RssAnon"], "rss_file_mb": serving["RssFile"],
        "exact_p50_ms": round(float(np.percentile(np.array(exact_lat) * 1000, 50)), 1), "exact_queries": exact_queries,
    }  # fmt: skip


def disk_sizes(work: Path) -> dict[str, float]:
    """MB on disk of the live version, by kind of file."""
    folder = (work / "idx" / "corpus_scale").resolve()
    sizes = {"docstore": 0, "vectors": 0, "ann": 0}
    for p in folder.rglob("*"):
        if p.is_file():
            kind = "docstore" if p.suffix == ".sqlite" else "ann" if p.suffix == ".faiss" else "vectors"
            sizes[kind] += p.stat().st_size if p.name != "manifest.json" else 0
    return {f"disk_{k}_mb": round(v / 2**20, 1) for k, v in sizes.items()}


def _run_child(args: list[str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-m", "bench.corpus_scale", *args], capture_output=True, text=True, check=False, cwd=REPO
    )
    if proc.returncode:
        raise SystemExit(f"child {args[0]} failed:\n{proc.stderr[-3000:]}")
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def render(runs: dict[str, dict[str, Any]]) -> str:
    """The results table of every stored run (markdown)."""
    rows = []
    for key in sorted(runs, key=int):
        r = runs[key]
        raw_mb = r["n"] * r["dim"] * 4 / 1e6
        mem_goal, rss = 0.25 * raw_mb, r["rss_serving_mb"] * 1.048576  # MiB -> MB
        verdict = (
            f"{'meets' if rss <= mem_goal else 'MISSES'} {mem_goal:,.0f}" if r["n"] >= 1_000_000 else "goal is for 1M"
        )
        peak_detail = (
            f", {r['ingest_peak_anon_mb']:,} anon in {r['ingest_peak_phase']}" if "ingest_peak_phase" in r else ""
        )
        rows.append(
            f"| {r['n']:,} | {r['index_type']}, {r['n_shards']} shard(s) | {r['ingest_s']:.0f} s "
            f"({r['ingest_peak_rss_mb']:,} MiB peak{peak_detail}) | {r['disk_vectors_mb']:,.0f} / {r['disk_ann_mb']:,.0f} / "
            f"{r['disk_docstore_mb']:,.0f} | {rss:,.0f} MB = {rss / raw_mb:.1%} of {raw_mb:,.0f} ({verdict}) | "
            f"{r['rss_anon_mb']:,.0f} / "
            f"{r['rss_file_mb']:,.0f} | {r['p50_ms']:.1f} / {r['p95_ms']:.1f} | {r['exact_p50_ms']:,.0f} | "
            f"{r['recall_at_10']:.3f} | {r['measured_at']} |"
        )
    return (
        "| chunks | index | ingestion (peak RSS) | disk MB: vectors / FAISS / docstore | serving RSS vs goal "
        "(25% of raw float32) | anon / file-backed MiB | ANN p50 / p95 ms | exact p50 ms | recall@10 | measured |\n"
        "|---|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n"
    )


def write_doc(runs: dict[str, dict[str, Any]]) -> None:
    """Replace the table between the ``results`` markers of the doc (create a bare doc if missing)."""
    start, end = "<!-- results:start -->\n", "<!-- results:end -->"
    doc = DOC.read_text() if DOC.exists() else f"# Corpus scale benchmark\n\n{start}{end}\n"
    head, _, rest = doc.partition(start)
    _, _, tail = rest.partition(end)
    DOC.write_text(f"{head}{start}{render(runs)}{end}{tail}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="Corpus chunks.")
    parser.add_argument("--dim", type=int, default=768)
    parser.add_argument("--clusters", type=int, default=3000, help="Mixture centres.")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--exact-queries", type=int, default=5, help="Queries also timed with exact search.")
    parser.add_argument("--work", type=Path, default=Path("/tmp/corpus_scale"))
    parser.add_argument("--keep-data", action="store_true", help="Reuse generated data in --work if present.")
    parser.add_argument("--timeline", type=Path, help="Write the ingestion's memory samples (t, phase, anon, file).")
    parser.add_argument("--ingest-only", action="store_true", help="Ingest and report memory; no serving, no doc.")
    parser.add_argument("--child", choices=("ingest", "serve"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    work = args.work / str(args.n)
    if args.child == "ingest":
        print(json.dumps(child_ingest(work, args.timeline)))
        return
    if args.child == "serve":
        print(json.dumps(child_serve(work, args.exact_queries)))
        return
    result: dict[str, Any] = {"n": args.n, "dim": args.dim, "clusters": args.clusters}
    if not (args.keep_data and (work / "truth.npy").exists()):
        result |= make_data(work, args.n, args.dim, args.clusters, args.queries)
        print(f"data: {result}", file=sys.stderr)
    common = ["--n", str(args.n), "--work", str(args.work), "--exact-queries", str(args.exact_queries)]
    timeline = ["--timeline", str(args.timeline.resolve())] if args.timeline else []
    result |= _run_child(["--child", "ingest", *common, *timeline])
    print(f"ingest: {result}", file=sys.stderr)
    if args.ingest_only:
        print(json.dumps(result, indent=2))
        return
    result |= disk_sizes(work)
    result |= _run_child(["--child", "serve", *common])
    result["measured_at"] = time.strftime("%Y-%m-%d %H:%M")
    print(json.dumps(result, indent=2))
    runs = json.loads(RESULTS.read_text()) if RESULTS.exists() else {}
    runs[str(args.n)] = result
    RESULTS.write_text(json.dumps(runs, indent=2, sort_keys=True) + "\n")
    write_doc(runs)


if __name__ == "__main__":
    main()
