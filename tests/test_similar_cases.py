"""Similar-case search: the contract's checks, filters, fallbacks, failures and index upkeep."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select

from core.cases import get_similar_cases
from core.cases.importer import import_cases
from core.contracts import EmptyReason
from core.errors import NotFoundError
from core.runtime import Runtime, open_runtime
from core.store.models import HistoricalCase, Scan
from tests.conftest import make_settings, scan_of


@pytest.mark.parametrize("index", [0, 1, 2])
def test_copd_scans_find_copd_cases(demo: Runtime, index: int) -> None:
    result = get_similar_cases(demo, scan_of(demo, "rahul.mehta", index), top_k=5)
    assert len(result.cases) == 5
    assert Counter(c.diagnosis for c in result.cases)["COPD with emphysema"] >= 4


def test_pneumothorax_scan_ranks_critical_cases_first(demo: Runtime) -> None:
    cases = get_similar_cases(demo, scan_of(demo, "imran.khan"), top_k=10).cases
    assert cases[0].severity == "critical" and cases[0].diagnosis == "Tension pneumothorax"
    assert sum(c.severity == "critical" for c in cases[:5]) >= 4


def test_results_are_sorted_and_similarity_in_range(demo: Runtime) -> None:
    cases = get_similar_cases(demo, scan_of(demo, "maria.gonzalez"), top_k=20).cases
    sims = [c.similarity for c in cases]
    assert sims == sorted(sims, reverse=True)
    assert all(0.0 <= s <= 1.0 for s in sims)


def test_results_respect_anatomy_and_region(demo: Runtime) -> None:
    sid = scan_of(demo, "priya.nair")
    result = get_similar_cases(demo, sid, top_k=7)
    assert result.scope == "region"
    assert {c.region for c in result.cases} == {"right_lung_lower"}
    with demo.db.read_only() as s:
        ids = [c.caseId for c in result.cases]
        anat = set(s.scalars(select(HistoricalCase.anatomy).where(HistoricalCase.case_id.in_(ids))))
    assert anat == {"lung"}


def test_always_min_of_top_k_and_matching_cases(demo: Runtime) -> None:
    sid = scan_of(demo, "fatima.zahra")  # abdomen / appendix
    with demo.db.read_only() as s:
        n_region = s.scalar(
            select(func.count())
            .select_from(HistoricalCase)
            .where(HistoricalCase.anatomy == "abdomen", HistoricalCase.region == "appendix")
        )
        n_anatomy = s.scalar(
            select(func.count()).select_from(HistoricalCase).where(HistoricalCase.anatomy == "abdomen")
        )
    assert n_region and n_anatomy
    exact = get_similar_cases(demo, sid, top_k=n_region)
    assert len(exact.cases) == n_region and exact.scope == "region"
    wide = get_similar_cases(demo, sid, top_k=n_region + 1)  # region too small: falls back to the anatomy
    assert wide.scope == "anatomy" and wide.notice and "appendix" in wide.notice
    assert len(wide.cases) == n_region + 1
    huge = get_similar_cases(demo, sid, top_k=100_000)
    assert len(huge.cases) == n_anatomy
    assert len({c.caseId for c in huge.cases}) == n_anatomy


def test_unknown_scan_is_a_clear_error(demo: Runtime) -> None:
    with pytest.raises(NotFoundError, match="scan_missing"):
        get_similar_cases(demo, "scan_missing")


def test_scan_without_embedding_gives_typed_empty_result(demo: Runtime) -> None:
    result = get_similar_cases(demo, scan_of(demo, "ewa.kowalska"))
    assert result.cases == [] and result.empty_reason is EmptyReason.NO_EMBEDDING


def test_low_confidence_scan_gives_typed_empty_result(demo: Runtime) -> None:
    result = get_similar_cases(demo, scan_of(demo, "tomas.novak"))
    assert result.cases == [] and result.empty_reason is EmptyReason.LOW_CONFIDENCE


def test_results_are_cached_per_scan_and_index_version(demo: Runtime) -> None:
    sid = scan_of(demo, "li.wei")
    assert get_similar_cases(demo, sid) is get_similar_cases(demo, sid)


def _case_row(case_id: str, vec: np.ndarray) -> dict[str, object]:
    return {
        "case_id": case_id,
        "anatomy": "lung",
        "region": "right_lung_lower",
        "diagnosis": "Community-acquired pneumonia",
        "outcome": "Full recovery",
        "severity": "moderate",
        "age": 40,
        "sex": "F",
        "embedding": vec.tolist(),
    }


def test_import_changes_index_version_and_invalidates_cache(fresh: Runtime, tmp_path: Path) -> None:
    sid = scan_of(fresh, "priya.nair")
    before = get_similar_cases(fresh, sid)
    with fresh.db.read_only() as s:
        scan = s.get(Scan, sid)
        assert scan is not None and scan.embedding is not None
        emb = scan.embedding
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(_case_row("NEW-1", emb)) + "\n")
    import_cases(fresh.db, path, max_mb=10)
    fresh.case_search.refresh()
    after = get_similar_cases(fresh, sid)
    assert after.index_version != before.index_version
    assert after.cases[0].caseId == "NEW-1" and after.cases[0].similarity == pytest.approx(1.0, abs=1e-4)


def test_stale_index_is_detected_and_rebuilt_on_open(fresh: Runtime, tmp_path: Path) -> None:
    old = fresh.case_search.index.version
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps(_case_row("NEW-2", np.ones(512))) + "\n")
    import_cases(fresh.db, path, max_mb=10)
    reopened = open_runtime(fresh.settings)
    assert reopened.case_search.index.version != old
    assert reopened.case_search.index.manifest["count"] == fresh.case_search.index.manifest["count"] + 1


def test_corrupt_index_is_detected_and_rebuilt(fresh: Runtime) -> None:
    current = (fresh.case_search.root / "current").resolve()
    vectors = current / "vectors.npy"
    data = bytearray(vectors.read_bytes())
    data[-100:] = b"\x00" * 100
    vectors.write_bytes(bytes(data))
    rt = open_runtime(fresh.settings)
    index = rt.case_search.index
    assert index.version == fresh.case_search.index.version  # same table, same build, fresh files
    assert (index.path / "vectors.npy").read_bytes() != bytes(data)


def test_index_from_another_encoder_is_never_reused(fresh: Runtime) -> None:
    settings = make_settings(fresh.settings.paths.data_dir.parent, search={"encoder_id": "other-encoder-v2"})
    rt = open_runtime(settings)
    assert rt.case_search.index.manifest["encoder_id"] == "other-encoder-v2"


def test_index_built_with_other_hnsw_parameters_is_rebuilt(fresh: Runtime) -> None:
    old = fresh.case_search.index
    assert old.manifest["params"]["hnsw_m"] == fresh.settings.search.hnsw_m
    settings = make_settings(fresh.settings.paths.data_dir.parent, search={"hnsw_m": 16, "hnsw_min_cases": 1000})
    index = open_runtime(settings).case_search.index
    assert index.manifest["params"] == {"hnsw_min_cases": 1000, "hnsw_m": 16, "hnsw_ef_construction": 80,
                                        "hnsw_codes": "fp16"}  # fmt: skip
    assert index.version != old.version and any(g.get("hnsw") for g in index.groups.values())
    # the graph's codes are a build-time parameter too
    sq8 = open_runtime(make_settings(fresh.settings.paths.data_dir.parent, search={
        "hnsw_m": 16, "hnsw_min_cases": 1000, "hnsw_codes": "sq8"})).case_search.index  # fmt: skip
    assert sq8.manifest["params"]["hnsw_codes"] == "sq8" and sq8.version != index.version
    index = open_runtime(settings).case_search.index  # back to the default codes
    # query-time settings never rebuild
    same = open_runtime(make_settings(fresh.settings.paths.data_dir.parent, search={
        "hnsw_m": 16, "hnsw_min_cases": 1000, "hnsw_ef_search": 64}))  # fmt: skip
    assert same.case_search.index.version == index.version
