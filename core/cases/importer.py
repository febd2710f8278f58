"""Import real historical-case tables (CSV, Parquet, JSONL) all-or-nothing.

Columns: ``case_id``, ``anatomy``, ``diagnosis``, ``embedding`` (required);
``region``, ``outcome``, ``severity``, ``age``, ``sex`` (optional). In CSV the
embedding is a JSON array (``"[0.1, -0.2, ...]"``). Every row is validated
first: dimension 512, finite values, a known anatomy, a unique case id. If any
row is rejected, nothing is written and the error lists each rejected row by
its line (CSV/JSONL, header = line 1 in CSV) or row number (Parquet).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from sqlalchemy import select

from core.errors import EmbeddingError, ImportRejectedError, InvalidInputError
from core.store.db import Database
from core.store.models import ANATOMIES, SEVERITIES, HistoricalCase, validate_embedding

__all__ = ["ImportSummary", "import_cases"]

REQUIRED = ("case_id", "anatomy", "diagnosis", "embedding")
OPTIONAL = ("region", "outcome", "severity", "age", "sex")


@dataclass(frozen=True)
class ImportSummary:
    """Rows imported from one file."""

    path: str
    imported: int


def _blank(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or (isinstance(v, str) and not v.strip())


def _rows(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line or row number, record) for every record of the file."""
    suffix = path.suffix.lower()
    if suffix in {".jsonl", ".ndjson"}:
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidInputError(f"{path.name} is not UTF-8 text: {exc.reason} at byte {exc.start}") from exc
        for n, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as exc:
                yield n, {"__error__": f"invalid JSON ({exc.msg})"}
                continue
            yield n, rec if isinstance(rec, dict) else {"__error__": "not a JSON object"}
        return
    try:
        if suffix == ".csv":
            frame = pd.read_csv(path, dtype=str, keep_default_na=False)
            first = 2
        elif suffix in {".parquet", ".pq"}:
            frame = pd.read_parquet(path)
            first = 1
        else:
            raise InvalidInputError(f"Unsupported case file type {suffix!r}", hint="Use .csv, .parquet or .jsonl.")
    except (ValueError, OSError, UnicodeDecodeError, pd.errors.ParserError) as exc:
        raise InvalidInputError(f"Cannot read {path.name}: {exc}") from exc
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        raise InvalidInputError(f"{path.name} lacks required columns: {', '.join(missing)}")
    for i, rec in enumerate(frame.to_dict(orient="records")):
        yield first + i, rec


def _validate(rec: dict[str, Any]) -> dict[str, Any]:
    if "__error__" in rec:
        raise ValueError(rec["__error__"])
    for col in REQUIRED:
        if _blank(rec.get(col)):
            raise ValueError(f"missing {col}")
    anatomy = str(rec["anatomy"]).strip().lower()
    if anatomy not in ANATOMIES:
        raise ValueError(f"unknown anatomy {rec['anatomy']!r}")
    emb = rec["embedding"]
    if isinstance(emb, str):
        try:
            emb = json.loads(emb)
        except json.JSONDecodeError as exc:
            raise ValueError("embedding is not a JSON array") from exc
    try:
        vec = validate_embedding(list(emb) if not isinstance(emb, list) else emb)
    except (EmbeddingError, TypeError) as exc:
        raise ValueError(str(exc)) from exc
    out: dict[str, Any] = {
        "case_id": str(rec["case_id"]).strip(),
        "anatomy": anatomy,
        "diagnosis": str(rec["diagnosis"]).strip(),
        "embedding": vec,
    }
    for col in OPTIONAL:
        v = rec.get(col)
        out[col] = None if _blank(v) else str(v).strip()
    if out["severity"] is not None and out["severity"].lower() not in SEVERITIES:
        raise ValueError(f"unknown severity {out['severity']!r}")
    if out["age"] is not None:
        try:
            age = float(out["age"])
        except ValueError as exc:
            raise ValueError(f"age {out['age']!r} is not a number") from exc
        if not (0 <= age <= 130) or age != int(age):
            raise ValueError(f"age {out['age']!r} out of range")
        out["age"] = int(age)
    if len(out["case_id"]) > 40 or (out["region"] and len(out["region"]) > 40):
        raise ValueError("case_id or region longer than 40 characters")
    return out


def import_cases(
    db: Database, path: Path, *, max_mb: int, max_rejections_listed: int = 50, actor_id: int | None = None
) -> ImportSummary:
    """Validate every row of ``path``; import all of them in one transaction (audited), or none."""
    if not path.is_file():
        raise InvalidInputError(f"No such file: {path}")
    size_mb = path.stat().st_size / 1e6
    if size_mb > max_mb:
        raise InvalidInputError(
            f"{path.name} is {size_mb:.1f} MB; the limit is {max_mb} MB",
            hint="Split the file or raise store.import_max_mb.",
        )
    good: list[dict[str, Any]] = []
    rejected: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for line, rec in _rows(path):
        try:
            row = _validate(rec)
            if row["case_id"] in seen:
                raise ValueError(f"duplicate case_id {row['case_id']!r} (first on line {seen[row['case_id']]})")
            seen[row["case_id"]] = line
            good.append(row)
        except ValueError as exc:
            rejected.append((line, str(exc)))
    with db.session() as s:
        known = set(s.scalars(select(HistoricalCase.case_id).where(HistoricalCase.case_id.in_(list(seen)))))
    rejected += [(seen[c], f"case_id {c!r} already exists") for c in sorted(known)]
    if not good and not rejected:
        raise InvalidInputError(f"{path.name} holds no rows")
    if rejected:
        rejected.sort()
        listed = "; ".join(f"line {n}: {why}" for n, why in rejected[:max_rejections_listed])
        more = f" (and {len(rejected) - max_rejections_listed} more)" if len(rejected) > max_rejections_listed else ""
        raise ImportRejectedError(
            f"{path.name}: {len(rejected)} rows rejected, nothing imported. {listed}{more}", rejected
        )
    from core import audit

    with db.session() as s:
        s.add_all(HistoricalCase(**row) for row in good)
        audit.record_in(s, audit.IMPORT, actor_id, None, kind="cases", rows=len(good))
    return ImportSummary(str(path), len(good))
