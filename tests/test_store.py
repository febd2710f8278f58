"""Store: migrations, read-only inference sessions, immutable signed reports, validated embeddings."""

from __future__ import annotations

import datetime as dt
import math
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import func, select, text, update

from core.cases import build_context_bundle, get_similar_cases
from core.cases.search import table_checksum
from core.errors import EmbeddingError, ImmutableRecordError, ReadOnlyViolationError
from core.runtime import Runtime
from core.store.db import Database
from core.store.models import HistoricalCase, Report, Scan, validate_embedding
from tests.conftest import scan_of


def test_migrate_is_idempotent(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = Database(f"sqlite:///{tmp_path / 'x.db'}")
    db.migrate()
    db.migrate()
    with db.session() as s:
        version = s.execute(text("select version_num from alembic_version")).scalar()
    assert version == db.head_revision()


def test_demo_data_is_as_promised(demo: Runtime) -> None:
    with demo.db.read_only() as s:
        assert s.scalar(select(func.count()).select_from(HistoricalCase)) >= 5000
        anatomies = set(s.scalars(select(Scan.anatomy).distinct()))
        patients = s.scalar(select(func.count(func.distinct(Scan.patient_id))))
    assert anatomies == {"lung", "brain", "spine", "eye", "breast", "abdomen", "skin", "pathology"}
    assert patients is not None and patients >= 12


def test_read_only_session_refuses_orm_writes(demo: Runtime) -> None:
    with pytest.raises(ReadOnlyViolationError), demo.db.read_only() as s:
        case = s.scalars(select(HistoricalCase).limit(1)).one()
        case.diagnosis = "changed by inference"
        s.flush()


def test_read_only_session_refuses_raw_sql_writes(demo: Runtime) -> None:
    with pytest.raises(ReadOnlyViolationError), demo.db.read_only() as s:
        s.execute(update(HistoricalCase).values(outcome="tampered"))


def test_inference_leaves_cases_and_reports_unchanged(fresh: Runtime) -> None:
    with fresh.db.read_only() as s:
        before = table_checksum(s)
        reports_before = [(r.id, r.findings, r.signed_at) for r in s.scalars(select(Report))]
    for user in ("rahul.mehta", "imran.khan", "maria.gonzalez"):
        sid = scan_of(fresh, user)
        get_similar_cases(fresh, sid)
        build_context_bundle(fresh, sid)
    with fresh.db.read_only() as s:
        assert table_checksum(s) == before
        assert [(r.id, r.findings, r.signed_at) for r in s.scalars(select(Report))] == reports_before


def test_signed_report_is_immutable(fresh: Runtime) -> None:
    with fresh.db.session() as s:
        report = s.scalars(select(Report).where(Report.signed_at.is_not(None)).limit(1)).one()
        rid, original = report.id, report.findings
    with pytest.raises(ImmutableRecordError), fresh.db.session() as s:
        report = s.get(Report, rid)
        assert report is not None
        report.findings = "edited after signing"
    with pytest.raises(ImmutableRecordError), fresh.db.session() as s:
        report = s.get(Report, rid)
        s.delete(report)
    with fresh.db.session() as s:
        report = s.get(Report, rid)
        assert report is not None and report.findings == original


def test_unsigned_report_may_be_signed(fresh: Runtime) -> None:
    sid = scan_of(fresh, "imran.khan")
    with fresh.db.session() as s:
        r = Report(scan_id=sid, author_id=1, findings="f", impression="i")
        s.add(r)
    with fresh.db.session() as s:
        r2 = s.get(Report, r.id)
        assert r2 is not None
        r2.signed_at = dt.datetime.now(dt.UTC)
    with fresh.db.session() as s:
        r3 = s.get(Report, r.id)
        assert r3 is not None and r3.signed_at is not None


@pytest.mark.parametrize(
    "bad, match",
    [
        ([0.1] * 511, "dimension 511"),
        ([0.1] * 511 + [math.nan], "NaN"),
        ([0.0] * 512, "zeros"),
        ([0.1] * 511 + [math.inf], "NaN or infinite"),
        ("abc", "not a list of numbers"),
    ],
)
def test_embeddings_are_validated(bad: object, match: str) -> None:
    with pytest.raises(EmbeddingError, match=match):
        validate_embedding(bad)


def test_bad_embedding_never_reaches_the_table(fresh: Runtime) -> None:
    with pytest.raises(EmbeddingError), fresh.db.session() as s:
        s.add(HistoricalCase(case_id="X-1", anatomy="lung", diagnosis="d", embedding=np.full(512, np.nan)))
    with fresh.db.read_only() as s:
        assert s.scalar(select(HistoricalCase).where(HistoricalCase.case_id == "X-1")) is None


@pytest.mark.parametrize("revision", ["0007", "0008"])
def test_a_sqlite_migration_cut_short_after_its_triggers_completes_when_run_again(tmp_path: Path, revision: str) -> None:
    """pysqlite opens a transaction only before DML, so a migration's CREATE TRIGGERs commit one by one.

    A run cut short after them (before the version stamp) left triggers and revision 0006 behind, and every
    later ``core setup`` failed with "trigger ... already exists" (seen on a worktree's demo store).
    """
    import importlib.util
    import sqlite3

    from alembic import command
    from alembic.config import Config

    from core.store.db import MIGRATIONS, shipped_head

    path = tmp_path / "c.db"
    db = Database(f"sqlite:///{path}")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, str(int(revision) - 1).zfill(4))
    (file,) = (MIGRATIONS / "versions").glob(f"{revision}_*.py")
    spec = importlib.util.spec_from_file_location(f"m{revision}", file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    statements = module._SQLITE if isinstance(module._SQLITE, tuple) else (module._SQLITE,)
    con = sqlite3.connect(path)
    con.execute(statements[0])  # the first trigger went in, then the run stopped
    con.commit()
    con.close()
    db.migrate()
    with db.engine.connect() as c:
        assert c.execute(text("SELECT version_num FROM alembic_version")).scalar_one() == shipped_head()
    db.dispose()
