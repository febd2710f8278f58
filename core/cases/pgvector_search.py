"""Similar-case search on PostgreSQL + pgvector, behind the same API as the FAISS search.

The "index" is the ``case_embeddings`` side table (migration 0002: ``vector(512)``,
anatomy, region) with an HNSW index whose name records its build parameters
(``ix_case_embeddings_hnsw_m32_efc80``). :class:`PgVectorSearch` keeps it in step
with ``historical_cases`` exactly as :class:`~core.cases.search.CaseSearch` keeps
its FAISS files in step: ``open`` adds missing vectors and recreates a missing or
differently built HNSW index, ``rebuild`` reloads everything, and a version derived
from the table checksum keys the result cache. Everything happens in one
transaction, so a failed rebuild leaves the previous state serving.

Search keeps the FAISS guarantee, ``min(k, matching)`` rows, never fewer: filter
groups smaller than ``search.hnsw_min_cases`` are searched exactly (a sequential
distance over the group's rows); larger ones use HNSW with
``hnsw.iterative_scan = relaxed_order`` (pgvector >= 0.8), the candidates
re-sorted by exact distance, and an exact search whenever the scan still returns
too few rows (it stops at ``hnsw.max_scan_tuples``).
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from typing import Any

import numpy as np
from pgvector.psycopg.vector import register_vector_info
from pgvector.sqlalchemy import VECTOR
from psycopg.types import TypeInfo
from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session

from core.cases.index import CaseIndex, group_key
from core.cases.search import CaseSearch, table_checksum
from core.errors import IndexStateError
from core.imaging.encoders import index_encoder_id
from core.settings import Settings
from core.store.db import Database

__all__ = ["FORMAT", "PgCaseIndex", "PgVectorSearch", "hnsw_index_name"]

log = logging.getLogger(__name__)
FORMAT = "pgvector-1"
_SYNC_LOCK = 0x63617365  # pg_advisory_xact_lock key: one sync at a time across processes
_BATCH = 2000
_HNSW_MAX_EF = 1000  # pgvector's upper bound for hnsw.ef_search


def hnsw_index_name(m: int, ef_construction: int) -> str:
    """The HNSW index name, which records what built it (a change of parameters rebuilds it)."""
    return f"ix_case_embeddings_hnsw_m{m}_efc{ef_construction}"


def _unit(vector: np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    return v / max(float(np.linalg.norm(v)), 1e-12)


class PgCaseIndex(CaseIndex):
    """One synced state of ``case_embeddings``: the :class:`CaseIndex` query interface over SQL.

    It has no files: ``manifest`` describes the table state and ``groups`` maps every
    filter key (``*``, ``lung``, ``lung/right_lung_lower``) to its size and, for
    groups searched through HNSW, the index name.
    """

    def __init__(self, db: Database, manifest: dict[str, Any]) -> None:
        # CaseIndex.__init__ loads files; this index lives in the database instead.
        self.db = db
        self.manifest = manifest
        self.version = str(manifest["version"])
        self.groups = manifest["groups"]

    def group_size(self, anatomy: str | None, region: str | None) -> int:
        """Number of cases matching the filter."""
        g = self.groups.get(group_key(anatomy, region))
        return 0 if g is None else int(g["count"])

    def search(
        self, query: np.ndarray, anatomy: str | None, region: str | None, k: int, *, ef_search: int, rerank: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """Top ``min(k, group size)`` case ids and cosine scores, best first."""
        g = self.groups.get(group_key(anatomy, region))
        n = 0 if g is None else int(g["count"])
        if n == 0 or k <= 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
        k = min(k, n)
        where = "TRUE" if anatomy is None else ("anatomy = :a" if region is None else "anatomy = :a AND region = :r")
        params: dict[str, Any] = {"q": _unit(query), "a": anatomy, "r": region, "k": k}
        rows: list[Any] = []
        if g is not None and g["hnsw"]:
            n_cand = min(n, k * rerank)
            rows = self._query(where, params | {"n": n_cand}, ef_search=min(_HNSW_MAX_EF, max(ef_search, n_cand)))
            if len(rows) < k:  # the iterative scan hit hnsw.max_scan_tuples: exact search never misses
                log.info(
                    "HNSW returned %d of %d rows for %s; searching exactly", len(rows), k, group_key(anatomy, region)
                )
                rows = []
        if not rows:
            rows = self._query(where, params, ef_search=None)
        ids = np.array([r[0] for r in rows[:k]], dtype=np.int64)
        return ids, np.array([1.0 - float(r[1]) for r in rows[:k]], dtype=np.float32)

    def _query(self, where: str, params: dict[str, Any], *, ef_search: int | None) -> list[Any]:
        if ef_search is None:
            # MATERIALIZED keeps the planner off the HNSW index: every row of the group is scored
            sql = (
                f"WITH c AS MATERIALIZED (SELECT case_pk, embedding <=> :q AS d FROM case_embeddings WHERE {where}) "
                "SELECT case_pk, d FROM c ORDER BY d, case_pk LIMIT :k"
            )
        else:
            # relaxed_order may return candidates slightly out of order: re-sort them by exact distance
            sql = (
                "WITH c AS MATERIALIZED (SELECT case_pk, embedding <=> :q AS d FROM case_embeddings "
                f"WHERE {where} ORDER BY embedding <=> :q LIMIT :n) SELECT case_pk, d FROM c ORDER BY d, case_pk LIMIT :k"
            )
        stmt = text(sql).bindparams(bindparam("q", type_=VECTOR(None)))
        with self.db.read_only() as s:
            if ef_search is not None:
                s.execute(
                    text(
                        "SELECT set_config('hnsw.ef_search', :ef, true), "
                        "set_config('hnsw.iterative_scan', 'relaxed_order', true)"
                    ),
                    {"ef": str(ef_search)},
                )
            return list(s.execute(stmt, {k: v for k, v in params.items() if f":{k}" in sql}).all())


class PgVectorSearch(CaseSearch):
    """:class:`CaseSearch` whose index is the pgvector side table; the search API is unchanged."""

    def __init__(self, settings: Settings, db: Database) -> None:
        super().__init__(settings, db)
        if db.engine.dialect.name != "postgresql":
            raise IndexStateError(f"pgvector search needs PostgreSQL, not {db.engine.dialect.name}")

    def rebuild(self) -> CaseIndex:
        """Reload every vector and rebuild the HNSW index in one transaction."""
        return self._sync(full=True)

    def open(self, *, check_table: bool = True) -> CaseIndex:
        """Bring the side table and HNSW index in step with the case table (adds only what is missing)."""
        return self._sync(full=False)

    def _sync(self, *, full: bool) -> PgCaseIndex:
        p = self.settings.search
        encoder_id = index_encoder_id(self.settings)
        name = hnsw_index_name(p.hnsw_m, p.hnsw_ef_construction)
        started = time.monotonic()
        with self.db.session() as s:
            s.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _SYNC_LOCK})
            meta = {str(k): str(v) for k, v in s.execute(text("SELECT key, value FROM case_embeddings_meta"))}
            if meta.get("encoder_id", encoder_id) != encoder_id:
                log.warning("Case vectors were built for encoder %r; rebuilding", meta["encoder_id"])
                full = True
            if full:
                for old in self._hnsw_indexes(s):
                    s.execute(text(f'DROP INDEX "{old}"'))
                s.execute(text("DELETE FROM case_embeddings"))
            added = self._add_missing(s)
            if added:  # fresh statistics, or the planner keeps filtered queries off the HNSW index until autovacuum
                s.execute(text("ANALYZE case_embeddings"))
            count = int(s.scalar(text("SELECT count(*) FROM case_embeddings")) or 0)
            if count == 0:
                raise IndexStateError(
                    "No historical cases to index", hint="Run `python -m core seed-demo` or import cases."
                )
            self._ensure_hnsw(s, name)
            checksum = table_checksum(s)
            version = hashlib.sha256(
                json.dumps([FORMAT, encoder_id, checksum, name], sort_keys=True).encode()
            ).hexdigest()[:16]
            if meta.get("version") != version or meta.get("encoder_id") != encoder_id:
                meta = {
                    "encoder_id": encoder_id,
                    "version": version,
                    "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
                s.execute(text("DELETE FROM case_embeddings_meta"))
                s.execute(
                    text("INSERT INTO case_embeddings_meta (key, value) VALUES (:k, :v)"),
                    [{"k": k, "v": v} for k, v in meta.items()],
                )
            manifest = self._manifest(s, meta, checksum, name, count)
        log.info(
            "Case vectors %s in step: %d cases, %d added (%.1f s)", version, count, added, time.monotonic() - started
        )
        return PgCaseIndex(self.db, manifest)

    @staticmethod
    def _hnsw_indexes(s: Session) -> list[str]:
        return list(
            s.scalars(
                text(
                    "SELECT indexname FROM pg_indexes WHERE tablename = 'case_embeddings' "
                    "AND indexname LIKE 'ix_case_embeddings_hnsw_%'"
                )
            )
        )

    def _ensure_hnsw(self, s: Session, name: str) -> None:
        existing = self._hnsw_indexes(s)
        for old in existing:
            if old != name:
                log.warning("Dropping HNSW index %s built with other parameters", old)
                s.execute(text(f'DROP INDEX "{old}"'))
        if name not in existing:
            p = self.settings.search
            log.info("Building HNSW index %s", name)
            s.execute(text("SET LOCAL maintenance_work_mem = '512MB'"))  # the graph must fit, or the build crawls
            s.execute(
                text(
                    f'CREATE INDEX "{name}" ON case_embeddings USING hnsw (embedding vector_cosine_ops) '
                    f"WITH (m = {int(p.hnsw_m)}, ef_construction = {int(p.hnsw_ef_construction)})"
                )
            )

    @staticmethod
    def _add_missing(s: Session) -> int:
        """Copy unit vectors of cases that have none yet, in id order and batches (binary COPY)."""
        raw = s.connection().connection.driver_connection
        if raw is None:
            raise IndexStateError("The database connection was closed during the case-vector sync")
        info = TypeInfo.fetch(raw, "vector")
        missing = text(
            "SELECT h.id, h.anatomy, h.region, h.embedding FROM historical_cases h WHERE h.id > :after "
            "AND NOT EXISTS (SELECT 1 FROM case_embeddings e WHERE e.case_pk = h.id) ORDER BY h.id LIMIT :n"
        )
        after, added = -1, 0
        while True:
            batch = s.execute(missing, {"after": after, "n": _BATCH}).all()
            if not batch:
                return added
            with raw.cursor() as cur:
                register_vector_info(cur, info)  # on this cursor only: the pooled connection stays unchanged
                copy_sql = "COPY case_embeddings (case_pk, anatomy, region, embedding) FROM STDIN WITH (FORMAT BINARY)"
                with cur.copy(copy_sql) as cp:
                    cp.set_types(["int4", "varchar", "varchar", "vector"])
                    for pk, anatomy, region, emb in batch:
                        cp.write_row((pk, anatomy, region, _unit(np.frombuffer(emb, dtype="<f4"))))
            after, added = int(batch[-1][0]), added + len(batch)

    def _manifest(self, s: Session, meta: dict[str, str], checksum: str, name: str, count: int) -> dict[str, Any]:
        p = self.settings.search
        groups: dict[str, dict[str, Any]] = {}
        for anatomy, region, n in s.execute(
            text("SELECT anatomy, region, count(*) FROM case_embeddings GROUP BY anatomy, region")
        ):
            for key in {group_key(None, None), group_key(anatomy, None), group_key(anatomy, region)}:
                groups.setdefault(key, {"count": 0, "hnsw": None})["count"] += int(n)
        for g in groups.values():
            g["hnsw"] = name if g["count"] >= p.hnsw_min_cases else None
        extversion = s.scalar(text("SELECT extversion FROM pg_extension WHERE extname = 'vector'"))
        return {
            "format": FORMAT,
            "dim": 512,
            "count": count,
            "encoder_id": meta["encoder_id"],
            "table_checksum": checksum,
            "params": {
                "hnsw_min_cases": p.hnsw_min_cases,
                "hnsw_m": p.hnsw_m,
                "hnsw_ef_construction": p.hnsw_ef_construction,
            },
            "version": meta["version"],
            "groups": groups,
            "faiss_version": None,
            "pgvector_version": extversion,
            "hnsw_index": name,
            "built_at": meta["built_at"],
        }
