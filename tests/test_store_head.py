"""The start-up shortcut of Database.migrate reads the same head revision as Alembic, and still migrates."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from core.store.db import Database, shipped_head


def test_the_files_head_is_alembics_head_and_a_new_database_is_migrated(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'new.db'}")
    assert not db._at_head()  # no version table yet: Alembic runs
    db.migrate()
    assert shipped_head() == db.head_revision()
    assert db._at_head()
    with db.engine.begin() as conn:  # an older schema version is not mistaken for the newest
        conn.execute(text("UPDATE alembic_version SET version_num = '0001'"))
    assert not db._at_head()
    db.dispose()
