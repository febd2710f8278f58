"""PACS: the protected study links and the report export queue

``pacs_study_links`` is the protected table linking a study in the hospital PACS
(its original Study Instance UID, sealed with a key kept outside the database,
and a keyed hash of it) to the scan it was imported as. ``report_exports`` holds
one row per signed report version and target (``sr``, ``fhir``): queued until
sent, so a failed export can be sent again (docs/INTEGRATION.md).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-27 08:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the two tables."""
    op.create_table(
        "pacs_study_links",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("scan_id", sa.String(40), sa.ForeignKey("scans.id"), nullable=False, unique=True),
        sa.Column("study_hmac", sa.String(64), nullable=False, unique=True),
        sa.Column("study_sealed", sa.LargeBinary, nullable=False),
        sa.Column("endpoint", sa.String(120), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "report_exports",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("report_id", sa.Integer, sa.ForeignKey("reports.id"), nullable=False),
        sa.Column("target", sa.String(8), nullable=False),
        sa.Column("status", sa.String(12), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("last_error", sa.String(80), nullable=True),
        sa.Column("requested_by", sa.Integer, sa.ForeignKey("users.id"), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("sent_at", sa.DateTime(timezone=True), nullable=True),
    )
    op.create_index("uq_report_exports_target", "report_exports", ["report_id", "target"], unique=True)


def downgrade() -> None:
    """Drop the two tables."""
    op.drop_index("uq_report_exports_target", table_name="report_exports")
    op.drop_table("report_exports")
    op.drop_table("pacs_study_links")
