"""The pgvector row of the similar-case benchmark: Casebook's PostgreSQL search at 10k and 100k cases.

    export CASEBOOK_TEST_PG_URL=$(scripts/pg_setup.sh)
    python bench/similar_cases_pgvector.py                       # 10k and 100k cases
    python bench/similar_cases_pgvector.py --sizes 10000 --queries 100 --json out.json

Same synthetic data, queries and exact ground truth as ``bench/similar_cases.py``
(its ``make_dataset``): 10% (``lung``) and 1% (``lung/left_lung_upper``) filters.
Each size gets a fresh database: cases are COPYed into ``historical_cases``, then
``PgVectorSearch.open()`` syncs ``case_embeddings`` and builds the HNSW index (timed),
then ``ANALYZE`` gives the planner statistics (untimed), so plans do not race autovacuum.
Strategies, each through ``PgCaseIndex.search`` except the plain HNSW baseline:

* ``exact``: every group searched exactly (sequential distance over the group's rows);
* ``hnsw+iterative``: every group through HNSW with ``hnsw.iterative_scan = relaxed_order``
  (with the exact fallback when the scan returns too few rows);
* ``casebook``: the settings' policy (groups under ``hnsw_min_cases`` exact, others HNSW);
* ``hnsw-plain``: HNSW with a ``WHERE`` and no iterative scan (pgvector < 0.8 behaviour),
  raw SQL, to show why the others exist.

Columns: p50/p95 ms of one search call from Python (round trip included), recall@5
against the exact top-5, ``short`` = queries that got fewer than 5 rows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import create_engine, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from any folder
sys.path.insert(0, str(Path(__file__).resolve().parent))

from similar_cases import FILTERS, K, log, make_dataset

from core.cases.pgvector_search import PgCaseIndex
from core.runtime import open_runtime
from core.settings import load_settings

STRATEGIES = ("exact", "hnsw+iterative", "casebook", "hnsw-plain")


def _create_db(url: str) -> str:
    admin = create_engine(url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    name = f"bench_{uuid.uuid4().hex[:8]}"
    with admin.connect() as c:
        c.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return url.rsplit("/", 1)[0] + f"/{name}"


def _drop_db(url: str) -> None:
    admin = create_engine(url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(text(f'DROP DATABASE IF EXISTS "{url.rsplit("/", 1)[1]}" WITH (FORCE)'))
    admin.dispose()


def _load(url: str, ds: Any) -> None:
    """COPY the dataset into ``historical_cases`` (ids 1..n)."""
    engine = create_engine(url)
    with engine.begin() as conn:
        raw = conn.connection.driver_connection
        assert raw is not None
        with raw.cursor() as cur:
            sql = (
                "COPY historical_cases (id, case_id, anatomy, region, diagnosis, embedding) FROM STDIN (FORMAT BINARY)"
            )
            with cur.copy(sql) as cp:
                cp.set_types(["int4", "varchar", "varchar", "varchar", "varchar", "bytea"])
                for i in range(ds.n):
                    cp.write_row(
                        (
                            i + 1,
                            f"BC-{i + 1:07d}",
                            ds.anatomy[i],
                            ds.region[i],
                            "synthetic",
                            ds.vectors[i].astype("<f4").tobytes(),
                        )
                    )
    engine.dispose()


def _with_policy(index: PgCaseIndex, hnsw: bool | None) -> PgCaseIndex:
    if hnsw is None:
        return index
    manifest = dict(index.manifest)
    manifest["groups"] = {
        k: dict(g, hnsw=index.manifest["hnsw_index"] if hnsw else None) for k, g in index.manifest["groups"].items()
    }
    return PgCaseIndex(index.db, manifest)


def _plain_hnsw(
    index: PgCaseIndex, q: np.ndarray, anatomy: str | None, region: str | None, ef_search: int
) -> np.ndarray:
    where = "TRUE" if anatomy is None else ("anatomy = :a" if region is None else "anatomy = :a AND region = :r")
    with index.db.read_only() as s:
        s.execute(
            text("SELECT set_config('hnsw.ef_search', :ef, true), set_config('hnsw.iterative_scan', 'off', true)"),
            {"ef": str(ef_search)},  # the same efSearch as Casebook's own engine, so only the filter policy differs
        )
        rows = s.execute(
            text(
                f"SELECT case_pk FROM case_embeddings WHERE {where} ORDER BY embedding <=> CAST(:q AS vector) LIMIT :k"
            ),
            {"q": "[" + ",".join(f"{x:.7g}" for x in q) + "]", "a": anatomy, "r": region, "k": K},
        ).all()
    return np.array([r[0] for r in rows], dtype=np.int64)


def run_size(url: str, n: int, n_queries: int) -> list[dict[str, Any]]:
    """Build one database of ``n`` cases and time every strategy and filter."""
    log(f"dataset {n}")
    ds = make_dataset(n, n_queries)
    db_url = _create_db(url)
    try:
        settings = load_settings("test", store={"url": db_url})
        rt = open_runtime(settings)
        log("COPY cases")
        _load(db_url, ds)
        started = time.perf_counter()
        index = rt.case_search.open()
        build_s = time.perf_counter() - started
        assert isinstance(index, PgCaseIndex)
        log(f"synced + HNSW built in {build_s:.0f} s")
        # Without statistics the planner guesses a filter matches 0.5% of the rows and picks the
        # btree (an exact scan) for `lung`; once autovacuum analyzes the table (a race with the
        # timed loop) it picks HNSW. Analyze now so every run measures the same plans.
        with rt.db.engine.begin() as conn:
            conn.execute(text("ANALYZE case_embeddings"))
        p = settings.search
        variants = {"exact": _with_policy(index, False), "hnsw+iterative": _with_policy(index, True), "casebook": index}
        rows = []
        for fname, (anatomy, region) in FILTERS.items():
            queries, truth = ds.queries[fname], ds.truth[fname] + 1  # database ids are row + 1
            for strat in STRATEGIES:
                lat, recall, short = [], [], 0
                for i, q in enumerate(queries):
                    t = time.perf_counter()
                    if strat == "hnsw-plain":
                        ids = _plain_hnsw(index, q, anatomy, region, p.hnsw_ef_search)
                    else:
                        ids, _ = variants[strat].search(
                            q, anatomy, region, K, ef_search=p.hnsw_ef_search, rerank=p.hnsw_rerank
                        )
                    lat.append(time.perf_counter() - t)  # every query timed, the first (cold) one included
                    short += len(ids) < K
                    recall.append(len(set(ids.tolist()) & set(truth[i].tolist())) / K)
                ms = np.array(lat) * 1000
                rows.append(
                    {
                        "n": n,
                        "filter": fname,
                        "strategy": strat,
                        "p50_ms": round(float(np.percentile(ms, 50)), 2),
                        "p95_ms": round(float(np.percentile(ms, 95)), 2),
                        "recall@5": round(float(np.mean(recall)), 3),
                        "short": int(short),
                        "queries": len(queries),
                        "build_s": round(build_s, 1),
                    }
                )
                log(json.dumps(rows[-1]))
        rt.db.dispose()
        return rows
    finally:
        _drop_db(db_url)


def main() -> None:
    """Parse arguments, run every size, print a Markdown table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    url = os.environ.get("CASEBOOK_TEST_PG_URL")
    if not url:
        sys.exit("CASEBOOK_TEST_PG_URL is unset: export CASEBOOK_TEST_PG_URL=$(scripts/pg_setup.sh)")
    rows = [r for n in args.sizes for r in run_size(url, n, args.queries)]
    print("| cases | filter | strategy | p50 ms | p95 ms | recall@5 | short | build s |")
    print("|---:|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['n']:,} | {r['filter']} | {r['strategy']} | {r['p50_ms']} | {r['p95_ms']} | {r['recall@5']} "
            f"| {r['short']}/{r['queries']} | {r['build_s']} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "load": os.getloadavg()}, indent=2))


if __name__ == "__main__":
    main()
