"""Test helpers for running one suite over SQLite + FAISS and PostgreSQL + pgvector.

PostgreSQL tests need ``CASEBOOK_TEST_PG_URL`` (``make test`` sets it from
``scripts/pg_setup.sh``). The demo data is copied once from the session's SQLite
demo database into a template database; each writer test gets its own database
cloned from the template (``CREATE DATABASE ... TEMPLATE``, well under a second).
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Integer, create_engine, insert, select, text
from sqlalchemy.engine import make_url

from core.runtime import Runtime, open_runtime
from core.store.models import Base
from tests.conftest import copy_data, make_settings

__all__ = [
    "PG_ENV",
    "PG_SKIP",
    "PgCluster",
    "backend",
    "backend_params",
    "pg_cluster",
    "pg_tpl",
    "pg_url_or_skip",
    "rw",
    "writable_runtime",
]

PG_ENV = "CASEBOOK_TEST_PG_URL"
_TEMPLATE_KEYS: dict[str, Path] = {}  # template database -> the record key its rows are sealed with
PG_SKIP = f"{PG_ENV} is unset: run `scripts/pg_setup.sh` (or `make test`) to start PostgreSQL + pgvector"


def backend_params() -> list[Any]:
    """``sqlite`` and ``postgres`` (marked ``postgres``) for ``pytest.fixture(params=...)``."""
    return ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]


def pg_url_or_skip() -> str:
    """The PostgreSQL server URL, or skip the test with the reason."""
    url = os.environ.get(PG_ENV, "").strip()
    if not url:
        if os.environ.get("CASEBOOK_REQUIRE_PG"):  # CI: a missing server is a failure, not a skip
            pytest.fail(PG_SKIP)
        pytest.skip(PG_SKIP)
    return url


class PgCluster:
    """Creates and drops throw-away databases on the test server."""

    def __init__(self, url: str) -> None:
        self.url = make_url(url)
        self.admin = create_engine(self.url.set(database="postgres"), isolation_level="AUTOCOMMIT")
        self.prefix = f"cbt_{os.getpid()}_{uuid.uuid4().hex[:6]}"
        self.created: list[str] = []

    def drop_dead_runs(self) -> list[str]:
        """Drop the databases of earlier test runs whose process is gone (a run killed mid-way).

        Each run names its databases ``cbt_<pid>_...``; a run that died (kill -9, a full disk) never
        reached :meth:`drop_all`, and its clones of the demo data (about 65 MB each) would stay.
        """
        with self.admin.connect() as c:
            names = [r[0] for r in c.execute(text("SELECT datname FROM pg_database WHERE datname LIKE 'cbt\\_%'"))]
            dropped = []
            for name in names:
                pid = name.split("_")[1]
                if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                    c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
                    dropped.append(name)
        return dropped

    def drop(self, name: str) -> None:
        """Drop one database this object created (its connections are ended)."""
        with self.admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        if name in self.created:
            self.created.remove(name)

    def url_for(self, name: str) -> str:
        """SQLAlchemy URL of database ``name``."""
        return self.url.set(database=name).render_as_string(hide_password=False)

    def create(self, suffix: str, template: str | None = None) -> str:
        """A new empty (or template-cloned) database; returns its name."""
        name = f"{self.prefix}_{suffix}"
        with self.admin.connect() as c:
            c.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            c.execute(text(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else "")))
        self.created.append(name)
        return name

    def drop_all(self) -> None:
        """Drop every database this cluster object created."""
        with self.admin.connect() as c:
            for name in reversed(self.created):
                c.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        self.admin.dispose()

    def terminate_others(self, name: str) -> int:
        """Kill every backend connected to ``name`` (a dropped connection); returns how many."""
        with self.admin.connect() as c:
            return len(
                c.execute(
                    text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :d"), {"d": name}
                ).all()
            )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def copy_sqlite_to_pg(sqlite_path: Path, pg_url: str) -> None:
    """Copy every table of a migrated SQLite database into a migrated, empty PostgreSQL one."""
    src = create_engine(f"sqlite:///{sqlite_path}")
    dst = create_engine(pg_url)
    with src.connect() as r, dst.begin() as w:
        for table in Base.metadata.sorted_tables:
            rows = [dict(m) for m in r.execute(select(table)).mappings()]
            if rows:
                w.execute(insert(table), rows)
            if "id" in table.c and isinstance(table.c.id.type, Integer) and rows:
                # explicit ids do not advance the serial sequence; later inserts would collide
                w.execute(
                    text(
                        f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), (SELECT max(id) FROM {table.name}))"
                    )
                )
    src.dispose()
    dst.dispose()


def pg_template(cluster: PgCluster, demo_root: Path) -> str:
    """A template database holding the demo data and synced pgvector search (nobody stays connected)."""
    name = cluster.create("tpl")
    settings = make_settings(demo_root, store={"url": cluster.url_for(name)})
    rt = open_runtime(settings)  # migrates
    rt.db.dispose()
    copy_sqlite_to_pg(demo_root / "data" / "casebook.db", cluster.url_for(name))
    rt = open_runtime(settings)
    rt.case_search.open()
    rt.db.dispose()
    _TEMPLATE_KEYS[name] = settings.record_key_path  # the copied records are sealed with the demo's key
    return name


def pg_runtime(cluster: PgCluster, template: str, root: Path, suffix: str, **overrides: Any) -> Runtime:
    """A runtime on a fresh clone of the template database (files, if any, under ``root``)."""
    name = cluster.create(suffix, template=template)
    key = root / "data" / "keys" / "records.key"
    if template in _TEMPLATE_KEYS and not key.exists():  # the clone's sealed records need the template's key
        key.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        shutil.copy2(_TEMPLATE_KEYS[template], key)
    return open_runtime(make_settings(root, store={"url": cluster.url_for(name)}, **overrides))


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """The test PostgreSQL server (skips without ``CASEBOOK_TEST_PG_URL``); its databases are dropped after."""
    cluster = PgCluster(pg_url_or_skip())
    cluster.drop_dead_runs()
    yield cluster
    cluster.drop_all()


@pytest.fixture(scope="session")
def pg_tpl(pg_cluster: PgCluster, demo_root: Path) -> str:
    """Name of the template database holding the demo data."""
    return pg_template(pg_cluster, demo_root)


def writable_runtime(
    backend: str, request: pytest.FixtureRequest, demo_root: Path, root: Path, **overrides: Any
) -> Runtime:
    """A private writable copy of the demo store on ``backend`` (files under ``root``)."""
    if backend == "sqlite":
        if not (root / "data").exists():
            copy_data(demo_root / "data", root / "data")
            shutil.copytree(demo_root / "indexes", root / "indexes", symlinks=True)
        return open_runtime(make_settings(root, **overrides))
    cluster, tpl = request.getfixturevalue("pg_cluster"), request.getfixturevalue("pg_tpl")
    suffix = f"w{uuid.uuid4().hex[:8]}"
    rt = pg_runtime(cluster, tpl, root, suffix, **overrides)
    # dropped when the requesting test or fixture ends, not at the end of the session: a whole run
    # would otherwise hold one ~65 MB clone per writer test
    def drop() -> None:
        rt.db.dispose()
        cluster.drop(f"{cluster.prefix}_{suffix}")

    request.addfinalizer(drop)
    return rt


@pytest.fixture(scope="module", params=backend_params())
def backend(request: pytest.FixtureRequest) -> str:
    """``sqlite``, then ``postgres``: a suite whose fixtures take ``backend`` runs once on each."""
    return str(request.param)


@pytest.fixture()
def rw(backend: str, request: pytest.FixtureRequest, demo_root: Path, tmp_path: Path) -> Iterator[Runtime]:
    """A private writable copy of the demo store on ``backend``."""
    rt = writable_runtime(backend, request, demo_root, tmp_path)
    yield rt
    rt.db.dispose()
