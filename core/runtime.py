"""The objects a process needs once: settings, database, similar-case search.

Pages build one with ``st.cache_resource`` and the CLI builds one per command;
nothing here is created at import time.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.cases.search import CaseSearch
from core.settings import Settings, load_settings
from core.store.db import Database

__all__ = ["Runtime", "open_runtime"]


@dataclass
class Runtime:
    """Settings, the migrated database and the similar-case search of one process."""

    settings: Settings
    db: Database
    search: CaseSearch


def open_runtime(settings: Settings | None = None) -> Runtime:
    """Open the database (migrating it to the newest schema) and prepare search."""
    s = settings or load_settings()
    db = Database(s.database_url, echo=s.store.echo_sql, busy_timeout_s=s.store.sqlite_busy_timeout_s)
    db.migrate()
    if db.engine.dialect.name == "postgresql":  # pgvector serves similar cases; same API (docs/POSTGRES.md)
        from core.cases.pgvector_search import PgVectorSearch

        return Runtime(settings=s, db=db, search=PgVectorSearch(s, db))
    return Runtime(settings=s, db=db, search=CaseSearch(s, db))
