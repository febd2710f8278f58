"""pgvector case embeddings (PostgreSQL only)

A side table ``case_embeddings`` holds every historical case's unit vector as
``vector(512)`` beside its anatomy and region (the filter columns), for
similar-case search on PostgreSQL (core/cases/pgvector_search.py). The HNSW
index is created by that module with the build parameters from the settings in
its name. A trigger drops a case's row when its embedding, anatomy or region
changes, so a stale vector is never searched; the search re-adds it on its next
sync. On SQLite this revision does nothing (FAISS serves similar cases there).

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 08:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the side table, its filter index, the meta table and the invalidation trigger."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    if not bind.execute(sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")).scalar():
        raise RuntimeError(
            "The pgvector extension is not installed on this PostgreSQL server. "
            "Install it (scripts/pg_setup.sh builds pgvector 0.8.0; see docs/POSTGRES.md) and migrate again."
        )
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(
        """
        CREATE TABLE case_embeddings (
            case_pk integer PRIMARY KEY REFERENCES historical_cases (id) ON DELETE CASCADE,
            anatomy varchar(16) NOT NULL,
            region varchar(40),
            embedding vector(512) NOT NULL
        )
        """
    )
    # 2,056-byte vectors stay inline (no TOAST): exact scans read pages, not out-of-line chunks
    op.execute("ALTER TABLE case_embeddings ALTER COLUMN embedding SET STORAGE PLAIN")
    op.execute("CREATE INDEX ix_case_embeddings_anatomy_region ON case_embeddings (anatomy, region)")
    op.execute("CREATE TABLE case_embeddings_meta (key varchar(40) PRIMARY KEY, value text NOT NULL)")
    op.execute(
        """
        CREATE FUNCTION case_embeddings_invalidate() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM case_embeddings WHERE case_pk = OLD.id;
            RETURN NULL;
        END
        $$
        """
    )
    op.execute(
        """
        CREATE TRIGGER historical_cases_vector_changed
        AFTER UPDATE OF embedding, anatomy, region ON historical_cases
        FOR EACH ROW
        WHEN (OLD.embedding IS DISTINCT FROM NEW.embedding
              OR OLD.anatomy IS DISTINCT FROM NEW.anatomy
              OR OLD.region IS DISTINCT FROM NEW.region)
        EXECUTE FUNCTION case_embeddings_invalidate()
        """
    )


def downgrade() -> None:
    """Drop what :func:`upgrade` created (the extension stays: other databases may use it)."""
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS historical_cases_vector_changed ON historical_cases")
    op.execute("DROP FUNCTION IF EXISTS case_embeddings_invalidate()")
    op.execute("DROP TABLE IF EXISTS case_embeddings_meta")
    op.execute("DROP TABLE IF EXISTS case_embeddings")
