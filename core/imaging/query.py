"""Read-only lookups the viewer needs: a scan's series, its prior, thumbnails of similar cases.

Everything here runs in a read-only session and returns plain frozen
dataclasses (safe to cache, never PHI: labels are our own words, UIDs are the
remapped ones).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import select

from core.imaging.render import Window
from core.store.db import Database
from core.store.models import ImageInstance, ImageSeries, Scan

__all__ = ["PriorScan", "SeriesView", "case_thumbnails", "prior_scan", "series_for_case", "series_for_scan"]


@dataclass(frozen=True)
class SeriesView:
    """One series as the viewer shows it: its slices are ``(pixels sha256, frame index)`` pairs."""

    id: int
    label: str
    kind: str
    modality: str
    rows: int
    cols: int
    window: Window | None
    colour: bool
    slices: tuple[tuple[str, int], ...]
    encoder_id: str | None

    @property
    def is_demo(self) -> bool:
        """True for demo images (synthetic renderings or packaged test files)."""
        return self.kind.startswith("demo")

    @property
    def middle(self) -> tuple[str, int]:
        """The slice a thumbnail shows."""
        return self.slices[len(self.slices) // 2]


@dataclass(frozen=True)
class PriorScan:
    """The patient's most recent earlier scan of the same anatomy that has images."""

    scan_id: str
    created_at: dt.datetime
    diagnosis: str


def _views(db: Database, where: object) -> list[SeriesView]:
    with db.read_only() as s:
        rows = s.scalars(select(ImageSeries).where(where).order_by(ImageSeries.id)).all()  # type: ignore[arg-type]
        if not rows:
            return []
        insts = s.scalars(
            select(ImageInstance)
            .where(ImageInstance.series_id.in_([r.id for r in rows]))
            .order_by(ImageInstance.series_id, ImageInstance.position)
        ).all()
    by_series: dict[int, list[ImageInstance]] = {}
    for inst in insts:
        by_series.setdefault(inst.series_id, []).append(inst)
    out = []
    for r in rows:
        parts = by_series.get(r.id, [])
        if not parts:
            continue
        slices = tuple((i.pixels_sha256, f) for i in parts for f in range(i.frames))
        window = Window(r.window_center, r.window_width) if r.window_center is not None and r.window_width else None
        out.append(
            SeriesView(
                r.id, r.label, r.kind, r.modality, r.rows, r.cols, window, parts[0].samples == 3, slices, r.encoder_id
            )
        )
    return out


def series_for_scan(db: Database, scan_id: str) -> list[SeriesView]:
    """Every series of a scan, in import order."""
    return _views(db, ImageSeries.scan_id == scan_id)


def series_for_case(db: Database, case_id: str) -> list[SeriesView]:
    """Every series of a historical case."""
    return _views(db, ImageSeries.case_id == case_id)


def case_thumbnails(db: Database, case_ids: list[str]) -> dict[str, SeriesView]:
    """The first series of each case that has one (cases without images are absent)."""
    if not case_ids:
        return {}
    out: dict[str, SeriesView] = {}
    with db.read_only() as s:
        pairs = s.execute(
            select(ImageSeries.case_id, ImageSeries.id)
            .where(ImageSeries.case_id.in_(case_ids))
            .order_by(ImageSeries.id)
        ).all()
    first: dict[str, int] = {}
    for case_id, sid in pairs:
        if case_id is not None:
            first.setdefault(case_id, sid)
    views = {v.id: v for v in _views(db, ImageSeries.id.in_(list(first.values())))}
    for case_id, sid in first.items():
        if sid in views:
            out[case_id] = views[sid]
    return out


def prior_scan(db: Database, scan_id: str) -> PriorScan | None:
    """The same patient's latest earlier scan of the same anatomy with images, if any."""
    with db.read_only() as s:
        scan = s.get(Scan, scan_id)
        if scan is None:
            return None
        row = s.execute(
            select(Scan.id, Scan.created_at, Scan.ai_diagnosis)
            .where(
                Scan.patient_id == scan.patient_id,
                Scan.anatomy == scan.anatomy,
                Scan.created_at < scan.created_at,
                Scan.id.in_(select(ImageSeries.scan_id).where(ImageSeries.scan_id.is_not(None))),
            )
            .order_by(Scan.created_at.desc())
            .limit(1)
        ).first()
    return PriorScan(row[0], row[1], row[2]) if row else None
