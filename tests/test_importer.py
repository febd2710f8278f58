"""Case import: all-or-nothing, every rejected row named by its line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from core.cases.importer import import_cases
from core.errors import ImportRejectedError, InvalidInputError
from core.runtime import Runtime
from core.store.models import HistoricalCase


def _vec(seed: int) -> list[float]:
    return np.random.default_rng(seed).standard_normal(512).round(5).tolist()


def _row(i: int, **kw: object) -> dict[str, object]:
    row: dict[str, object] = {
        "case_id": f"IMP-{i}",
        "anatomy": "brain",
        "region": "frontal_lobe",
        "diagnosis": "Meningioma",
        "outcome": "Stable",
        "severity": "low",
        "age": 50,
        "sex": "F",
        "embedding": _vec(i),
    }
    row.update(kw)
    return row


def _count(rt: Runtime) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(func.count()).select_from(HistoricalCase)) or 0)


def _csv(path: Path, rows: list[dict[str, object]]) -> Path:
    frame = pd.DataFrame(
        [
            {**r, "embedding": json.dumps(r["embedding"]) if isinstance(r["embedding"], list) else r["embedding"]}
            for r in rows
        ]
    )
    frame.to_csv(path, index=False)
    return path


def test_valid_csv_jsonl_and_parquet_import(fresh: Runtime, tmp_path: Path) -> None:
    n0 = _count(fresh)
    _csv(tmp_path / "a.csv", [_row(1), _row(2)])
    (tmp_path / "b.jsonl").write_text("\n".join(json.dumps(_row(i)) for i in (3, 4)) + "\n")
    pd.DataFrame([_row(5), _row(6)]).to_parquet(tmp_path / "c.parquet")
    for name in ("a.csv", "b.jsonl", "c.parquet"):
        assert import_cases(fresh.db, tmp_path / name, max_mb=10).imported == 2
    assert _count(fresh) == n0 + 6
    with fresh.db.read_only() as s:
        case = s.scalars(select(HistoricalCase).where(HistoricalCase.case_id == "IMP-5")).one()
        assert case.age == 50 and np.allclose(case.embedding, _vec(5), atol=1e-5)


def test_bad_rows_are_listed_by_line_and_nothing_is_imported(fresh: Runtime, tmp_path: Path) -> None:
    n0 = _count(fresh)
    rows = [
        _row(1),
        _row(2, embedding=_vec(2)[:300]),
        _row(3, anatomy="elbow"),
        _row(4),
        _row(5, embedding=[float("nan")] * 512),
        _row(1),
        _row(7, case_id="HC-00001"),
    ]
    path = _csv(tmp_path / "bad.csv", rows)
    with pytest.raises(ImportRejectedError) as err:
        import_cases(fresh.db, path, max_mb=10)
    lines = dict(err.value.rejected)
    assert set(lines) == {3, 4, 6, 7, 8}  # header is line 1
    assert "dimension 300" in lines[3] and "elbow" in lines[4] and "NaN" in lines[6]
    assert "duplicate" in lines[7] and "already exists" in lines[8]
    assert _count(fresh) == n0


def test_malformed_jsonl_line_is_reported(fresh: Runtime, tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(_row(1)) + "\n{not json\n" + json.dumps(_row(2))[:40] + "\n")
    with pytest.raises(ImportRejectedError) as err:
        import_cases(fresh.db, path, max_mb=10)
    assert [n for n, _ in err.value.rejected] == [2, 3]


@pytest.mark.parametrize(
    "content, match",
    [("case_id,anatomy\nA,lung\n", "lacks required columns"), ("", "Cannot read|no rows")],
)
def test_unreadable_files_are_clear_errors(fresh: Runtime, tmp_path: Path, content: str, match: str) -> None:
    path = tmp_path / "x.csv"
    path.write_text(content)
    with pytest.raises(InvalidInputError, match=match):
        import_cases(fresh.db, path, max_mb=10)


def test_oversized_and_unknown_files_are_refused(fresh: Runtime, tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    big.write_bytes(b" " * 1_200_000)
    with pytest.raises(InvalidInputError, match="limit is 1 MB"):
        import_cases(fresh.db, big, max_mb=1)
    with pytest.raises(InvalidInputError, match="Unsupported"):
        (tmp_path / "x.xlsx").write_bytes(b"PK")
        import_cases(fresh.db, tmp_path / "x.xlsx", max_mb=1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(garbage=st.binary(min_size=1, max_size=400))
def test_binary_garbage_never_imports_or_crashes(fresh: Runtime, tmp_path: Path, garbage: bytes) -> None:
    n0 = _count(fresh)
    path = tmp_path / "g.jsonl"
    path.write_bytes(garbage)
    with pytest.raises(InvalidInputError):
        import_cases(fresh.db, path, max_mb=1)
    assert _count(fresh) == n0
