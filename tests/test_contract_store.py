"""One contract, two stores: SQLite + FAISS and PostgreSQL + pgvector must behave the same.

Every test here runs once per backend (``backend`` is ``sqlite`` or ``postgres``).
PostgreSQL runs need ``CASEBOOK_TEST_PG_URL`` (``make test`` sets it from
``scripts/pg_setup.sh``) and are skipped with that reason otherwise.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select, text, update
from sqlalchemy.exc import DBAPIError

from core.answer.records import check_rate_limit, history, record_exchange
from core.cases import build_context_bundle, get_similar_cases
from core.cases.search import table_checksum
from core.contracts import AskAnswer, EmptyReason
from core.errors import ImmutableRecordError, NotFoundError, RateLimitedError, ReadOnlyViolationError
from core.reports import DraftText, amend_report, save_draft, sign_draft
from core.runtime import Runtime, open_runtime
from core.store.models import HistoricalCase, RateLimitHit, Report, ReportDraft, Scan, User
from tests.backends import pg_runtime
from tests.conftest import make_settings, scan_of


@pytest.fixture(scope="module")
def ro(
    backend: str, request: pytest.FixtureRequest, demo_root: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runtime]:
    """A runtime that tests only read from."""
    if backend == "sqlite":
        rt = open_runtime(make_settings(demo_root))
    else:
        cluster, tpl = request.getfixturevalue("pg_cluster"), request.getfixturevalue("pg_tpl")
        rt = pg_runtime(cluster, tpl, tmp_path_factory.mktemp("pgro"), "ro")
    yield rt
    rt.db.dispose()


def _doctor(rt: Runtime, username: str = "dr.chen") -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(User.id).where(User.username == username)) or 0)


def _count(rt: Runtime, model: type) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(func.count()).select_from(model)) or 0)


def _hits(rt: Runtime, doctor_id: int, bucket: str = "ask") -> int:
    """The hits ``doctor_id`` holds in ``bucket`` (page tests leave other features' hits in the shared demo store)."""
    with rt.db.read_only() as s:
        return int(
            s.scalar(select(func.count()).where(RateLimitHit.doctor_id == doctor_id, RateLimitHit.bucket == bucket))
            or 0
        )


# -- store -------------------------------------------------------------------------------------------
def test_backend_is_the_one_asked_for(ro: Runtime, backend: str) -> None:
    assert ro.db.engine.dialect.name == ("sqlite" if backend == "sqlite" else "postgresql")
    assert type(ro.case_search).__name__ == ("CaseSearch" if backend == "sqlite" else "PgVectorSearch")


def test_demo_data_and_checksum_are_identical_on_both(ro: Runtime, demo: Runtime) -> None:
    with ro.db.read_only() as a, demo.db.read_only() as b:
        assert table_checksum(a) == table_checksum(b)
        assert a.scalar(select(func.count()).select_from(Scan)) == b.scalar(select(func.count()).select_from(Scan))
    assert ro.case_search.index.manifest["table_checksum"] == demo.case_search.index.manifest["table_checksum"]


def test_embeddings_round_trip_bit_exact(rw: Runtime) -> None:
    vec = np.random.default_rng(7).standard_normal(512).astype(np.float32)
    with rw.db.session() as s:
        s.execute(update(Scan).where(Scan.id == scan_of(rw, "li.wei")).values(embedding=vec))
    with rw.db.read_only() as s:
        got = s.scalar(select(Scan.embedding).where(Scan.id == scan_of(rw, "li.wei")))
    assert got is not None and got.dtype == np.float32 and np.array_equal(got, vec)


def test_read_only_refuses_orm_writes(ro: Runtime) -> None:
    with pytest.raises(ReadOnlyViolationError), ro.db.read_only() as s:
        s.scalars(select(HistoricalCase).limit(1)).one().diagnosis = "changed by inference"
        s.flush()


def test_read_only_refuses_raw_sql_writes(ro: Runtime) -> None:
    # SQLite's query_only refusal and PostgreSQL's SQLSTATE 25006 both become ReadOnlyViolationError
    for statement in (update(HistoricalCase).values(outcome="tampered"), text("DELETE FROM historical_cases")):
        with pytest.raises(ReadOnlyViolationError) as refused, ro.db.read_only() as s:
            s.execute(statement)
        assert isinstance(refused.value.__cause__, DBAPIError)  # raised from the database's own refusal
    with ro.db.read_only() as s:
        assert s.scalar(select(func.count()).where(HistoricalCase.outcome == "tampered")) == 0
        assert s.scalar(select(func.count()).select_from(HistoricalCase))


def test_signed_report_is_immutable(rw: Runtime) -> None:
    with rw.db.read_only() as s:
        rid, original = s.execute(select(Report.id, Report.findings).where(Report.signed_at.is_not(None))).first()
    with pytest.raises(ImmutableRecordError), rw.db.session() as s:
        report = s.get(Report, rid)
        assert report is not None
        report.findings = "edited after signing"
    with pytest.raises(ImmutableRecordError), rw.db.session() as s:
        s.delete(s.get(Report, rid))
    with rw.db.read_only() as s:
        assert s.scalar(select(Report.findings).where(Report.id == rid)) == original


def test_drafts_save_update_sign_amend(rw: Runtime) -> None:
    sid, doc = scan_of(rw, "imran.khan"), _doctor(rw)
    draft_id = save_draft(rw.db, sid, doc, DraftText("Findings A.", "Impression A.", "Rec A."))
    saved = save_draft(rw.db, sid, doc, DraftText("Findings B.", "Impression B.", ""), draft_id=draft_id, expected_version=1)
    assert saved == draft_id
    report_id = sign_draft(rw.db, draft_id, doc)
    with pytest.raises(ImmutableRecordError):
        save_draft(rw.db, sid, doc, DraftText("C.", "C.", ""), draft_id=draft_id, expected_version=2)
    with pytest.raises(ImmutableRecordError):
        sign_draft(rw.db, draft_id, doc)
    new_id = amend_report(rw.db, report_id, doc, "Findings D.", "Impression D.", "", reason="Corrected side")
    with rw.db.read_only() as s:
        old, new = s.get(Report, report_id), s.get(Report, new_id)
        assert old is not None and new is not None
        assert old.findings == "Findings B." and new.supersedes_id == report_id and new.version == old.version + 1
        row = s.get(ReportDraft, draft_id)
        assert row is not None and row.status == "signed" and row.report_id == report_id
    with pytest.raises(NotFoundError):
        save_draft(rw.db, sid, doc, DraftText("x", "y", ""), draft_id=10**9, expected_version=1)


def test_history_records_both_sides(rw: Runtime) -> None:
    sid, doc = scan_of(rw, "li.wei"), _doctor(rw)
    record_exchange(rw.db, sid, doc, "Q1?", AskAnswer(answer="A1.", citedCaseIds=["HC-00001"], confidence="low"))
    record_exchange(rw.db, sid, doc, "Q2?", AskAnswer(answer="A2.", citedCaseIds=[], confidence="low"))
    msgs = history(rw.db, sid, doc)
    assert [m["content"] for m in msgs] == ["Q1?", "A1.", "Q2?", "A2."]
    assert msgs[1]["citedCaseIds"] == ["HC-00001"]


def test_rate_limit_exact_under_threads(rw: Runtime) -> None:
    doc, ok, limited = _doctor(rw), [], []

    def worker() -> None:
        for _ in range(5):
            try:
                check_rate_limit(rw.db, doc, limit=15, window_s=60)
                ok.append(1)
            except RateLimitedError:
                limited.append(1)

    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 15 and len(limited) == 15
    assert _hits(rw, doc) == 15


def test_rate_limit_holds_its_lock_from_count_to_commit(rw: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pause after the count, before the commit, widens any check-then-write window: still exact.

    Without the per-user lock (PostgreSQL's advisory lock; SQLite's write lock, taken by the
    transaction's first write) every thread would count before any hit commits and all would pass.
    """
    import core.limits

    counted = core.limits.count_hit

    def slow_count(*args: Any, **kwargs: Any) -> int:
        hit = counted(*args, **kwargs)
        time.sleep(0.03)  # the hit is counted but not committed yet
        return hit

    monkeypatch.setattr(core.limits, "count_hit", slow_count)
    doc, ok, limited = _doctor(rw), [], []
    start = threading.Barrier(8)

    def worker() -> None:
        start.wait()
        for _ in range(2):
            try:
                check_rate_limit(rw.db, doc, limit=5, window_s=60)
                ok.append(1)
            except RateLimitedError:
                limited.append(1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (len(ok), len(limited), _hits(rw, doc)) == (5, 11, 5)


# -- similar-case search -------------------------------------------------------------------------------
@pytest.mark.parametrize("index", [0, 1, 2])
def test_copd_finds_copd(ro: Runtime, index: int) -> None:
    result = get_similar_cases(ro, scan_of(ro, "rahul.mehta", index), top_k=5)
    assert len(result.cases) == 5
    assert Counter(c.diagnosis for c in result.cases)["COPD with emphysema"] >= 4


def test_pneumothorax_critical_first(ro: Runtime) -> None:
    cases = get_similar_cases(ro, scan_of(ro, "imran.khan"), top_k=10).cases
    assert cases[0].severity == "critical" and cases[0].diagnosis == "Tension pneumothorax"
    assert sum(c.severity == "critical" for c in cases[:5]) >= 4


def test_same_neighbours_as_the_other_backend(ro: Runtime, demo: Runtime) -> None:
    for user in ("rahul.mehta", "priya.nair", "maria.gonzalez", "fatima.zahra"):
        a = get_similar_cases(ro, scan_of(ro, user), top_k=10)
        b = get_similar_cases(demo, scan_of(demo, user), top_k=10)
        assert [c.caseId for c in a.cases] == [c.caseId for c in b.cases]
        assert [c.similarity for c in a.cases] == pytest.approx([c.similarity for c in b.cases], abs=1e-4)
        assert a.scope == b.scope


def test_min_of_k_and_matching_with_region_fallback(ro: Runtime) -> None:
    sid = scan_of(ro, "fatima.zahra")  # abdomen / appendix
    with ro.db.read_only() as s:
        n_region = s.scalar(
            select(func.count()).where(HistoricalCase.anatomy == "abdomen", HistoricalCase.region == "appendix")
        )
        n_anatomy = s.scalar(select(func.count()).where(HistoricalCase.anatomy == "abdomen"))
    assert n_region and n_anatomy
    exact = get_similar_cases(ro, sid, top_k=n_region)
    assert len(exact.cases) == n_region and exact.scope == "region"
    assert {c.region for c in exact.cases} == {"appendix"}
    wide = get_similar_cases(ro, sid, top_k=n_region + 1)
    assert wide.scope == "anatomy" and wide.notice and "appendix" in wide.notice and len(wide.cases) == n_region + 1
    huge = get_similar_cases(ro, sid, top_k=100_000)
    assert len(huge.cases) == len({c.caseId for c in huge.cases}) == n_anatomy
    sims = [c.similarity for c in huge.cases]
    assert sims == sorted(sims, reverse=True) and all(0 <= x <= 1 for x in sims)


def test_hnsw_path_never_returns_fewer_rows(rw: Runtime, backend: str) -> None:
    """Every group goes through the approximate path; narrow filters still get min(k, matching)."""
    settings = rw.settings.model_copy(update={"search": rw.settings.search.model_copy(update={"hnsw_min_cases": 10})})
    rt = open_runtime(settings)
    index = rt.case_search.rebuild()  # the FAISS version does not record hnsw_min_cases: rebuild explicitly
    rt.case_search.refresh()
    assert any(g["hnsw"] for g in index.groups.values())
    for user in ("fatima.zahra", "priya.nair", "imran.khan", "li.wei"):
        sid = scan_of(rt, user)
        with rt.db.read_only() as s:
            scan = s.get(Scan, sid)
            assert scan is not None
            n = index.group_size(scan.anatomy, scan.region)
        for k in (1, 5, n, n + 3):
            res = get_similar_cases(rt, sid, top_k=k)
            assert len(res.cases) == min(
                k, index.group_size(scan.anatomy, None if res.scope == "anatomy" else scan.region)
            )
    exact = get_similar_cases(rw, scan_of(rw, "imran.khan"), top_k=10)
    approx = get_similar_cases(rt, scan_of(rt, "imran.khan"), top_k=10)
    assert len({c.caseId for c in exact.cases} & {c.caseId for c in approx.cases}) >= 8  # recall@10 >= 0.8
    rt.db.dispose()


def test_typed_empty_results_and_unknown_scan(ro: Runtime) -> None:
    assert get_similar_cases(ro, scan_of(ro, "ewa.kowalska")).empty_reason is EmptyReason.NO_EMBEDDING
    assert get_similar_cases(ro, scan_of(ro, "tomas.novak")).empty_reason is EmptyReason.LOW_CONFIDENCE
    with pytest.raises(NotFoundError):
        get_similar_cases(ro, "scan_missing")


def test_bundle_is_the_same_on_both(ro: Runtime, demo: Runtime) -> None:
    a = build_context_bundle(ro, scan_of(ro, "rahul.mehta"))
    b = build_context_bundle(demo, scan_of(demo, "rahul.mehta"))
    assert a.bundle == b.bundle and a.case_ids == b.case_ids


def test_new_cases_change_the_version_and_are_found(rw: Runtime) -> None:
    sid = scan_of(rw, "priya.nair")
    before = get_similar_cases(rw, sid)
    with rw.db.read_only() as s:
        scan = s.get(Scan, sid)
        assert scan is not None and scan.embedding is not None
        emb = scan.embedding
    with rw.db.session() as s:
        s.add(
            HistoricalCase(
                case_id="NEW-1",
                anatomy="lung",
                region="right_lung_lower",
                diagnosis="Community-acquired pneumonia",
                outcome="Full recovery",
                severity="moderate",
                embedding=emb,
            )
        )
    rw.case_search.refresh()
    after = get_similar_cases(rw, sid)
    assert after.index_version != before.index_version
    assert after.cases[0].caseId == "NEW-1" and after.cases[0].similarity == pytest.approx(1.0, abs=1e-4)


def test_lost_index_is_detected_and_rebuilt(rw: Runtime, backend: str) -> None:
    sid = scan_of(rw, "rahul.mehta")
    expected = [c.caseId for c in get_similar_cases(rw, sid).cases]
    version = rw.case_search.index.version
    if backend == "sqlite":
        shutil.rmtree((rw.case_search.root / "current").resolve())
    else:
        with rw.db.session() as s:
            for name in s.scalars(text("SELECT indexname FROM pg_indexes WHERE indexname LIKE '%hnsw%'")):
                s.execute(text(f'DROP INDEX "{name}"'))
            s.execute(text("DELETE FROM case_embeddings WHERE case_pk % 3 = 0"))
    rt = open_runtime(rw.settings)
    assert rt.case_search.index.version == version
    assert [c.caseId for c in get_similar_cases(rt, sid).cases] == expected
    rt.db.dispose()
