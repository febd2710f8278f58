"""Ask AI answers carry their state: pending, answered or cancelled

- ``messages.status``: ``pending`` while a question is being answered (the in-flight marker a
  second question on the scan waits for), ``answered`` once the answer is stored, ``cancelled``
  when the doctor stopped the model (the instant answer is stored with it). Questions and
  answers written before this revision are ``answered``; a row still holding the old pending
  text is ``pending``.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27 12:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_OLD_PENDING = "\u2026 answer pending"  # core.answer.records.PENDING_ANSWER when this revision was written


def upgrade() -> None:
    """Add the column and mark rows still waiting for their answer."""
    op.add_column("messages", sa.Column("status", sa.String(16), nullable=False, server_default="answered"))
    messages = sa.table("messages", sa.column("role", sa.String), sa.column("content", sa.Text),
                        sa.column("status", sa.String))  # fmt: skip
    op.execute(
        messages.update()
        .where(messages.c.role == "assistant", messages.c.content == _OLD_PENDING)
        .values(status="pending")
    )


def downgrade() -> None:
    """Drop the column (SQLite through a table copy)."""
    with op.batch_alter_table("messages") as batch:
        batch.drop_column("status")
