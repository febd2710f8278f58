"""Alembic environment: runs on the connection that :meth:`Database.migrate` passes in."""

from __future__ import annotations

from alembic import context
from sqlalchemy import create_engine

from core.store.models import Base

config = context.config
target_metadata = Base.metadata


def run() -> None:
    """Run migrations on the given connection, or on ``sqlalchemy.url`` from the CLI."""
    connection = config.attributes.get("connection")
    if connection is None:
        engine = create_engine(config.get_main_option("sqlalchemy.url") or "sqlite://")
        with engine.begin() as conn:
            context.configure(connection=conn, target_metadata=target_metadata, render_as_batch=True)
            context.run_migrations()
        return
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    context.run_migrations()


run()
