"""Similar-case search: the index kept in step with the case table, results cached per scan.

Similarity shown to doctors is a calibrated linear map of the cosine of the unit
imaging embeddings: ``search.similarity_cos_zero`` reads 0 and
``search.similarity_cos_one`` reads 1 (clipped), so neighbours of the same
diagnosis and of another one read far apart (docs/SIMILARITY.md). It is monotone,
so ranking by similarity is ranking by cosine.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from dataclasses import asdict
from pathlib import Path

import faiss
import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from threadpoolctl import threadpool_limits

from core.cases.evidence import drivers
from core.cases.index import CaseIndex, IndexParams, build_index, case_dir
from core.contracts import AWAITING_READING, EmptyReason, SimilarCase, SimilarCasesResult
from core.errors import IndexStateError, NotFoundError
from core.imaging.encoders import index_encoder_id
from core.settings import Settings
from core.store.db import Database
from core.store.models import HistoricalCase, ImageSeries, Scan

__all__ = ["CaseSearch", "cosine_to_similarity", "table_checksum"]

log = logging.getLogger(__name__)


def cosine_to_similarity(cos: float, zero: float = 0.2, one: float = 0.9) -> float:
    """Map a cosine to the 0..1 similarity shown to doctors: ``zero`` reads 0, ``one`` reads 1, clipped.

    The defaults are ``search.similarity_cos_zero`` and ``search.similarity_cos_one``'s; callers pass the settings'.
    """
    return float(min(1.0, max(0.0, (cos - zero) / (one - zero))))


def table_checksum(session: Session) -> str:
    """sha256 over every historical case (fields and embedding), in id order."""
    h = hashlib.sha256()
    cols = (
        HistoricalCase.id,
        HistoricalCase.case_id,
        HistoricalCase.anatomy,
        HistoricalCase.region,
        HistoricalCase.diagnosis,
        HistoricalCase.outcome,
        HistoricalCase.severity,
        HistoricalCase.age,
        HistoricalCase.sex,
        HistoricalCase.embedding,
    )
    for row in session.execute(select(*cols).order_by(HistoricalCase.id)).yield_per(5000):
        h.update("\x1f".join("" if v is None else str(v) for v in row[:-1]).encode())
        h.update(row[-1].tobytes())
    return h.hexdigest()


class CaseSearch:
    """Finds similar historical cases for a scan. One per process; thread-safe."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.root = settings.paths.resolve(settings.paths.index_dir) / "cases"
        self._index: CaseIndex | None = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, int, str], SimilarCasesResult] = OrderedDict()
        faiss.omp_set_num_threads(settings.search.faiss_threads)
        # One query is a matrix-vector product: BLAS threads only add hand-off cost
        # (measured ~10x slower exact scans with the default thread pool; docs/SIMILARITY.md).
        threadpool_limits(limits=settings.search.faiss_threads, user_api="blas")

    # -- index lifecycle ---------------------------------------------------
    def rebuild(self) -> CaseIndex:
        """Build a fresh index version from the case table and swap it in."""
        with self.db.read_only() as s:
            checksum = table_checksum(s)
            rows = s.execute(
                select(HistoricalCase.id, HistoricalCase.anatomy, HistoricalCase.region, HistoricalCase.embedding)
            ).all()
        if not rows:
            raise IndexStateError(
                "No historical cases to index", hint="Run `python -m core seed-demo` or import cases."
            )
        ids = np.array([r[0] for r in rows], dtype=np.int64)
        vectors = np.stack([r[3] for r in rows])
        path = build_index(
            self.root,
            ids,
            [r[1] for r in rows],
            [r[2] for r in rows],
            vectors,
            encoder_id=index_encoder_id(self.settings),
            table_checksum=checksum,
            params=self._build_params(),
        )
        log.info("Built case index %s (%d cases)", path.name, len(ids))
        from core import audit

        audit.record(self.db, audit.REBUILD, None, None, index="cases", version=path.name, cases=len(ids))
        return CaseIndex(path, verify=False)

    def _build_params(self) -> IndexParams:
        """The build-time parameters the settings ask for (query-time ones never need a rebuild)."""
        p = self.settings.search
        return IndexParams(p.hnsw_min_cases, p.hnsw_m, p.hnsw_ef_construction, p.hnsw_codes)

    def open(self, *, check_table: bool = True) -> CaseIndex:
        """Load the current index; rebuild it when missing, corrupt, stale, from another encoder or built otherwise."""
        cases = case_dir(self.root)
        if not cases.exists() and not cases.link_path.is_symlink():  # a fresh install: nothing to distrust, no warning
            log.info("No case index under %s yet; building it", self.root)
            return self.rebuild()
        try:
            index = CaseIndex(Path(os.path.realpath(cases.link_path)))
        except IndexStateError as exc:
            log.warning("Case index unusable (%s); rebuilding", exc)
            return self.rebuild()
        spec = {"encoder_id": index_encoder_id(self.settings), "params": asdict(self._build_params())}
        try:
            if check_table:
                with self.db.read_only() as s:
                    spec["table_checksum"] = table_checksum(s)
            cases.check_spec(index.manifest, spec)
            return index
        except IndexStateError as exc:
            log.warning("Case index is stale (%s); rebuilding", exc)
        return self.rebuild()

    @property
    def index(self) -> CaseIndex:
        """The verified index, opened (or rebuilt) on first use."""
        with self._lock:
            if self._index is None:
                self._index = self.open()
            return self._index

    def refresh(self) -> CaseIndex:
        """Re-check the index against the table (after an import) and drop stale cached results."""
        with self._lock:
            self._index = self.open()
            self._cache.clear()
            return self._index

    # -- search ------------------------------------------------------------
    def similar_cases(self, scan_id: str, top_k: int | None = None) -> SimilarCasesResult:
        """The contract's ``getSimilarCases``: neighbours filtered by anatomy and region.

        Raises :class:`NotFoundError` for an unknown scan; every other failure is a
        typed empty result with its reason.
        """
        k = top_k or self.settings.search.top_k
        with self.db.read_only() as s:
            scan = s.get(Scan, scan_id)
            if scan is None:
                raise NotFoundError(f"Unknown scan {scan_id!r}")
            anatomy, region, emb, conf = scan.anatomy, scan.region, scan.embedding, scan.ai_confidence
            unread = scan.ai_diagnosis == AWAITING_READING
        if emb is None:
            return SimilarCasesResult(
                cases=[], empty_reason=EmptyReason.NO_EMBEDDING, notice="This scan has no imaging embedding."
            )
        if conf < self.settings.safety.min_scan_confidence and not unread:  # the gate is on readings; none yet here
            return SimilarCasesResult(
                cases=[],
                empty_reason=EmptyReason.LOW_CONFIDENCE,
                notice=f"AI confidence {conf:.2f} is below {self.settings.safety.min_scan_confidence:.2f}.",
            )
        try:
            index = self.index
        except Exception as exc:  # any failure here must fail closed, not crash the page
            log.exception("Case index unavailable")
            return SimilarCasesResult(cases=[], empty_reason=EmptyReason.SEARCH_FAILED, notice=f"Search failed: {exc}")
        key = (scan_id, k, index.version)
        with self._lock:
            if key in self._cache:
                self._cache.move_to_end(key)
                return self._cache[key]
        result = self._search(index, np.asarray(emb), anatomy, region, k)
        if self.settings.search.cache_size:
            with self._lock:
                self._cache[key] = result
                while len(self._cache) > self.settings.search.cache_size:
                    self._cache.popitem(last=False)
        return result

    def _search(
        self, index: CaseIndex, emb: np.ndarray, anatomy: str, region: str | None, k: int
    ) -> SimilarCasesResult:
        p = self.settings.search
        scope: str = "anatomy"
        notice = None
        use_region = region
        if region is not None:
            n_region = index.group_size(anatomy, region)
            if n_region >= k or not p.region_fallback:
                scope = "region"
            else:
                use_region = None
                notice = f"Only {n_region} cases in region {region}; showing matches from all {anatomy} cases."
        try:
            ids, scores = index.search(emb, anatomy, use_region, k, ef_search=p.hnsw_ef_search, rerank=p.hnsw_rerank)
        except Exception as exc:
            log.exception("Similar-case search failed")
            return SimilarCasesResult(cases=[], empty_reason=EmptyReason.SEARCH_FAILED, notice=f"Search failed: {exc}")
        if len(ids) == 0:
            return SimilarCasesResult(
                cases=[],
                empty_reason=EmptyReason.NO_SIMILAR_CASES,
                index_version=index.version,
                notice=f"No historical {anatomy} cases in memory.",
            )
        h = HistoricalCase
        with self.db.read_only() as s:
            found = s.execute(
                select(h.id, h.case_id, h.diagnosis, h.outcome, h.severity, h.region, h.age, h.sex, h.embedding).where(
                    h.id.in_(ids.tolist())
                )
            ).all()
            dates = _imaged_on(s, [r.case_id for r in found])
        rows = {r.id: r for r in found}
        encoder_id = index.manifest.get("encoder_id", "")
        cases = [
            SimilarCase(
                caseId=rows[i].case_id,
                diagnosis=rows[i].diagnosis,
                outcome=rows[i].outcome,
                similarity=round(cosine_to_similarity(float(sc), p.similarity_cos_zero, p.similarity_cos_one), 4),
                severity=rows[i].severity,
                region=rows[i].region,
                age=rows[i].age,
                sex=rows[i].sex,
                date=dates.get(rows[i].case_id),
                drivers=drivers(encoder_id, emb, [np.asarray(rows[i].embedding)]),
            )
            for i, sc in zip(ids.tolist(), scores.tolist(), strict=True)
        ]
        floor = self.settings.safety.min_similarity
        if cases and cases[0].similarity < floor:  # nearest is not near: say so rather than imply look-alikes
            weak = (f"No case reaches the evidence floor (similarity {floor:.0%}): these are the nearest "
                    "images in memory, not look-alikes, and Ask AI will not use them.")
            notice = f"{notice} {weak}" if notice else weak
        return SimilarCasesResult(cases=cases, scope=scope, notice=notice, index_version=index.version)


def _imaged_on(session: Session, case_ids: list[str]) -> dict[str, str]:
    """The date each case's first image series was taken (demo cases carry a seeded study date)."""
    rows = session.execute(
        select(ImageSeries.case_id, func.min(ImageSeries.created_at))
        .where(ImageSeries.case_id.in_(case_ids))
        .group_by(ImageSeries.case_id)
    ).all()
    return {cid: when.date().isoformat() for cid, when in rows if cid is not None and when is not None}


def index_root(settings: Settings) -> Path:
    """Folder holding the case index versions."""
    return settings.paths.resolve(settings.paths.index_dir) / "cases"
