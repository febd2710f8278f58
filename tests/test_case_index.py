"""The case index against brute force: exact groups identical, HNSW groups high recall, never -1."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.cases.index import CaseIndex, IndexParams, build_index, group_key
from core.errors import IndexStateError


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, list[str], list[str | None], np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((20, 64)).astype(np.float32)
    labels = rng.integers(0, 20, n)
    vecs = centres[labels] + 0.6 * rng.standard_normal((n, 64)).astype(np.float32)
    anatomy = ["lung" if i % 10 else "eye" for i in range(n)]  # eye: 10%
    region = [("apex" if i % 100 == 1 else "base") if a == "lung" else None for i, a in enumerate(anatomy)]
    ids = np.arange(1000, 1000 + n, dtype=np.int64)
    return ids, anatomy, region, vecs


def _brute(ids, anatomy, region, vecs, q, a, r, k):  # type: ignore[no-untyped-def]
    mask = np.array([(a is None or x == a) and (r is None or y == r) for x, y in zip(anatomy, region, strict=True)])
    v = vecs / np.linalg.norm(vecs, axis=1, keepdims=True)
    scores = v[mask] @ (q / np.linalg.norm(q))
    order = np.argsort(-scores)[:k]
    return ids[mask][order]


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    ids, anatomy, region, vecs = _data(4000)
    root = tmp_path_factory.mktemp("idx")
    path = build_index(
        root,
        ids,
        anatomy,
        region,
        vecs,
        encoder_id="t",
        table_checksum="c",
        params=IndexParams(hnsw_min_cases=1000, hnsw_m=16, hnsw_ef_construction=80),
    )
    return CaseIndex(path), (ids, anatomy, region, vecs)


def test_large_groups_get_hnsw_and_small_ones_do_not(built) -> None:  # type: ignore[no-untyped-def]
    index, _ = built
    hnsw = {k for k, g in index.groups.items() if g["hnsw"]}
    assert hnsw == {"*", "lung", "lung/base"}
    assert index.group_size("lung", "apex") == 40


@pytest.mark.parametrize("a, r", [("eye", None), ("lung", "apex")])
def test_exact_groups_match_brute_force(built, a: str, r: str | None) -> None:  # type: ignore[no-untyped-def]
    index, (ids, anatomy, region, vecs) = built
    rng = np.random.default_rng(5)
    for _ in range(20):
        q = rng.standard_normal(64).astype(np.float32)
        got, _ = index.search(q, a, r, 10, ef_search=32, rerank=2)
        assert got.tolist() == _brute(ids, anatomy, region, vecs, q, a, r, 10).tolist()


@pytest.mark.parametrize("a, r", [(None, None), ("lung", None), ("lung", "base")])
def test_hnsw_groups_have_high_recall_and_no_missing_ids(built, a: str | None, r: str | None) -> None:  # type: ignore[no-untyped-def]
    index, (ids, anatomy, region, vecs) = built
    rng = np.random.default_rng(7)
    hits = 0
    for _ in range(30):
        q = vecs[rng.integers(len(vecs))] + 0.3 * rng.standard_normal(64).astype(np.float32)
        got, scores = index.search(q, a, r, 5, ef_search=64, rerank=4)
        assert len(got) == 5 and (got >= 1000).all()
        assert np.all(np.diff(scores) <= 1e-6)
        hits += len(set(got.tolist()) & set(_brute(ids, anatomy, region, vecs, q, a, r, 5).tolist()))
    assert hits / 150 >= 0.95


def test_small_group_returns_everything_it_has(built) -> None:  # type: ignore[no-untyped-def]
    index, _ = built
    got, _ = index.search(np.ones(64, dtype=np.float32), "lung", "apex", 500, ef_search=32, rerank=2)
    assert len(got) == 40 and len(set(got.tolist())) == 40
    none, _ = index.search(np.ones(64, dtype=np.float32), "brain", None, 5, ef_search=32, rerank=2)
    assert len(none) == 0


def test_group_keys() -> None:
    assert (group_key(None, None), group_key("lung", None), group_key("lung", "apex")) == ("*", "lung", "lung/apex")


def test_missing_manifest_is_an_index_state_error(tmp_path: Path) -> None:
    with pytest.raises(IndexStateError):
        CaseIndex(tmp_path)


def test_rebuild_swaps_atomically_and_removes_old_versions(tmp_path: Path) -> None:
    ids, anatomy, region, vecs = _data(300, seed=1)
    params = IndexParams(hnsw_min_cases=10_000, hnsw_m=16, hnsw_ef_construction=40)
    first = build_index(tmp_path, ids, anatomy, region, vecs, encoder_id="t", table_checksum="a", params=params)
    second = build_index(tmp_path, ids, anatomy, region, vecs, encoder_id="t", table_checksum="b", params=params)
    assert first != second and not first.exists()
    assert (tmp_path / "current").resolve() == second
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def _tight(n: int, seed: int = 3) -> tuple[np.ndarray, list[str], list[str | None], np.ndarray]:
    """Radiomics-like vectors: a 24-d subspace of 512-d, neighbours a few thousandths of a cosine apart."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((512, 24)))[0].T
    anchors = rng.standard_normal((40, 24))
    coords = anchors[rng.integers(0, 40, n)] + 0.02 * rng.standard_normal((n, 24))
    return np.arange(n, dtype=np.int64), ["lung"] * n, [None] * n, (coords @ basis).astype(np.float32)


def _recall(index: CaseIndex, data: tuple[np.ndarray, list[str], list[str | None], np.ndarray]) -> float:
    ids, anatomy, region, vecs = data
    rng = np.random.default_rng(11)
    hits = 0
    for _ in range(40):
        q = vecs[rng.integers(len(vecs))] + 0.001 * rng.standard_normal(512).astype(np.float32)
        got, _ = index.search(q, None, None, 5, ef_search=64, rerank=4)
        hits += len(set(got.tolist()) & set(_brute(ids, anatomy, region, vecs, q, None, None, 5).tolist()))
    return hits / 200


def test_default_half_precision_codes_keep_recall_where_cases_sit_close(tmp_path: Path) -> None:
    """The default graph codes (fp16) find the true top five among near-ties that 8-bit codes blur."""
    import faiss

    data = _tight(2000)
    recalls = {}
    for codes in ("fp16", "sq8"):
        params = IndexParams(hnsw_min_cases=1000, hnsw_m=16, hnsw_ef_construction=80, hnsw_codes=codes)
        path = build_index(tmp_path / codes, *data, encoder_id="t", table_checksum="c", params=params)
        (graph,) = {p for p in path.glob("hnsw-*.faiss")} - set(path.glob("hnsw-lung*.faiss"))  # the all-cases graph
        stored = faiss.read_index(str(graph))  # keep the owner alive while its storage is read
        storage = faiss.downcast_index(stored.storage)
        wanted = faiss.ScalarQuantizer.QT_fp16 if codes == "fp16" else faiss.ScalarQuantizer.QT_8bit
        assert storage.sq.qtype == wanted
        recalls[codes] = _recall(CaseIndex(path), data)
    assert IndexParams(1, 16, 80).hnsw_codes == "fp16"
    assert recalls["fp16"] >= 0.97, recalls
    assert recalls["sq8"] < recalls["fp16"] - 0.1, recalls  # why fp16 is the default (0.70 vs 1.00 when written)


def test_unknown_hnsw_codes_are_refused(tmp_path: Path) -> None:
    params = IndexParams(hnsw_min_cases=100, hnsw_m=16, hnsw_ef_construction=40, hnsw_codes="pq4")
    with pytest.raises(IndexStateError, match="pq4"):
        build_index(tmp_path, *_data(300), encoder_id="t", table_checksum="c", params=params)
