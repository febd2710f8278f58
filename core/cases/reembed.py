"""Re-embed the historical cases and scans from their images with the configured image encoder.

Switching ``imaging.encoder`` (say, to a user's TorchScript or ONNX model) changes the
embedding space. The case index must then be built from vectors of *that* encoder, or
an imported scan would be compared with vectors of another one. ``python -m core
reembed`` reads each case's and scan's stored image (the middle frame of its first
series, as an import embeds it), encodes it, stores the vector with the encoder's
id on the series and on the case or scan, and the index is rebuilt on next use.
Cases or scans without an image keep their vector and are counted as skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import select, update

from core.errors import ConfigError
from core.imaging.encoders import ImageEncoder, index_encoder_id
from core.imaging.store import ImageStore
from core.settings import Settings
from core.store.db import Database
from core.store.models import HistoricalCase, ImageInstance, ImageSeries, Scan

__all__ = ["ReembedSummary", "reembed", "stale_encoders"]


@dataclass(frozen=True)
class ReembedSummary:
    """What a re-embedding run changed."""

    encoder_id: str
    cases: int
    scans: int
    skipped: int


def _first_series(db: Database, column: Any) -> dict[str, tuple[int, str, int]]:
    """owner id -> (series id, pixels sha256 of its middle instance, frame index of the middle slice)."""
    with db.read_only() as s:
        rows = s.execute(
            select(column, ImageSeries.id, ImageInstance.pixels_sha256, ImageInstance.frames, ImageInstance.position)
            .join(ImageInstance, ImageInstance.series_id == ImageSeries.id)
            .where(column.is_not(None), ImageSeries.kind != "demo-dicom")
            .order_by(ImageSeries.id, ImageInstance.position)
        ).all()
    slices: dict[str, list[tuple[int, str, int]]] = {}
    first: dict[str, int] = {}
    for owner, sid, sha, frames, _pos in rows:
        if first.setdefault(owner, sid) != sid:
            continue
        slices.setdefault(owner, []).extend((sid, sha, f) for f in range(frames))
    return {owner: parts[len(parts) // 2] for owner, parts in slices.items()}


def stale_encoders(db: Database, encoder_id: str) -> dict[str, int]:
    """Encoder id -> number of stored image series whose vectors another encoder made (an upgrade or a settings change).

    Series without a vector, and the attached real DICOM series (``demo-dicom``, never embedded), are not counted.
    """
    from sqlalchemy import func

    with db.read_only() as s:
        rows = s.execute(
            select(ImageSeries.encoder_id, func.count())
            .where(ImageSeries.embedding.is_not(None), ImageSeries.kind != "demo-dicom")
            .where((ImageSeries.encoder_id != encoder_id) | ImageSeries.encoder_id.is_(None))
            .group_by(ImageSeries.encoder_id)
        ).all()
    return {str(enc): int(n) for enc, n in rows}


def reembed(
    settings: Settings,
    db: Database,
    encoder: ImageEncoder,
    *,
    progress: Callable[[str], None] | None = None,
    only_stale: bool = False,
) -> ReembedSummary:
    """Encode every case and scan image with ``encoder``; it must be the case index's encoder.

    With ``only_stale``, images whose stored vector ``encoder`` already made are left as they are.
    """
    target = index_encoder_id(settings)
    if encoder.encoder_id != target:
        raise ConfigError(
            f"The encoder {encoder.encoder_id} is not the case index's ({target})",
            hint="Leave search.encoder_id at auto, or set it to the encoder's id.",
        )
    store = ImageStore.from_settings(settings)
    done = {"cases": 0, "scans": 0}
    owners = (
        (HistoricalCase, HistoricalCase.case_id, ImageSeries.case_id, "cases"),
        (Scan, Scan.id, ImageSeries.scan_id, "scans"),
    )
    skipped = 0
    current: set[int] = set()
    if only_stale:
        with db.read_only() as s:
            current = set(s.scalars(select(ImageSeries.id).where(ImageSeries.encoder_id == encoder.encoder_id)))
    for model, key, column, name in owners:
        picks = {o: p for o, p in _first_series(db, column).items() if p[0] not in current}
        with db.read_only() as s:
            all_ids = [str(v) for v in s.scalars(select(key))]
        skipped += 0 if only_stale else sum(1 for i in all_ids if i not in picks)
        batch: list[tuple[str, int, np.ndarray]] = []
        for owner, (sid, sha, frame) in picks.items():
            batch.append((owner, sid, encoder.encode(np.asarray(store.load_frames(sha)[frame]))))
            if len(batch) >= 500:
                _write(db, model, key, batch, encoder.encoder_id)
                done[name] += len(batch)
                batch = []
                if progress:
                    progress(f"Re-embedded {done[name]} {name}")
        _write(db, model, key, batch, encoder.encoder_id)
        done[name] += len(batch)
    return ReembedSummary(encoder.encoder_id, done["cases"], done["scans"], skipped)


def _write(db: Database, model: Any, key: Any, batch: list[tuple[str, int, np.ndarray]], enc_id: str) -> None:
    with db.session() as s:
        for owner, sid, vec in batch:
            s.execute(update(model).where(key == owner).values(embedding=vec))
            s.execute(update(ImageSeries).where(ImageSeries.id == sid).values(embedding=vec, encoder_id=enc_id))
