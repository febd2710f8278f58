"""Image store (placeholder; filled by the imaging work)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 06:10:00
"""

from __future__ import annotations

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Nothing yet."""


def downgrade() -> None:
    """Nothing yet."""
