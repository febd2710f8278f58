"""Records, audit and sessions (placeholder; filled by the records-and-log-in work)

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-25 06:10:00
"""

from __future__ import annotations

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing yet."""


def downgrade() -> None:
    """Nothing yet."""
