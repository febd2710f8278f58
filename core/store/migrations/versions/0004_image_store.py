"""Image store: series, instances and the protected identity map

``image_series`` and ``image_instances`` hold de-identified metadata and the
content addresses (sha256) of files in the image store (core/imaging/store.py);
pixels never live in the database. ``image_identity_map`` is the protected
table linking a keyed hash of an original patient identity to its pseudonym
(docs/IMAGING.md).

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-25 06:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    """Create the three image tables and their indexes."""
    op.create_table(
        "image_series",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("scan_id", sa.String(40), sa.ForeignKey("scans.id"), nullable=True),
        sa.Column("case_id", sa.String(40), nullable=True),
        sa.Column("study_uid", sa.String(64), nullable=True),
        sa.Column("series_uid", sa.String(64), nullable=True, unique=True),
        sa.Column("modality", sa.String(16), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("label", sa.String(200), nullable=False),
        sa.Column("n_images", sa.Integer, nullable=False),
        sa.Column("rows", sa.Integer, nullable=False),
        sa.Column("cols", sa.Integer, nullable=False),
        sa.Column("window_center", sa.Float, nullable=True),
        sa.Column("window_width", sa.Float, nullable=True),
        sa.Column("embedding", sa.LargeBinary, nullable=True),
        sa.Column("encoder_id", sa.String(200), nullable=True),
        sa.Column("import_id", sa.String(40), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_image_series_scan", "image_series", ["scan_id"])
    op.create_index("ix_image_series_case", "image_series", ["case_id"])
    op.create_table(
        "image_instances",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("series_id", sa.Integer, sa.ForeignKey("image_series.id"), nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("sop_uid", sa.String(64), nullable=True),
        sa.Column("file_sha256", sa.String(64), nullable=True),
        sa.Column("file_ext", sa.String(8), nullable=False),
        sa.Column("pixels_sha256", sa.String(64), nullable=False),
        sa.Column("frames", sa.Integer, nullable=False),
        sa.Column("rows", sa.Integer, nullable=False),
        sa.Column("cols", sa.Integer, nullable=False),
        sa.Column("samples", sa.Integer, nullable=False),
        sa.Column("slice_location", sa.Float, nullable=True),
    )
    op.create_index("ix_image_instances_series", "image_instances", ["series_id", "position"])
    op.create_table(
        "image_identity_map",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("identity_hmac", sa.String(64), nullable=False, unique=True),
        sa.Column("patient_user_id", sa.Integer, sa.ForeignKey("users.id"), nullable=False),
        sa.Column("pseudonym", sa.String(40), nullable=False),
        sa.Column("uid_seed", sa.String(64), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )


def downgrade() -> None:
    """Drop the image tables (the files in the image store stay; they are content-addressed)."""
    op.drop_table("image_identity_map")
    op.drop_index("ix_image_instances_series", table_name="image_instances")
    op.drop_table("image_instances")
    op.drop_index("ix_image_series_case", table_name="image_series")
    op.drop_index("ix_image_series_scan", table_name="image_series")
    op.drop_table("image_series")
