"""Render the demo images and embed each from its pixels: DEMO DATA, NOT FOR CLINICAL USE.

Seeding draws one 128x128 image per historical case and one study per demo scan
(:mod:`core.demo.looks`), stages the pixels in the image store and embeds every
image with the configured image encoder (the same code path an imported DICOM
takes, :mod:`core.imaging.encoders`). The diagnosis picks *what is drawn*; the
embedding sees only the drawn pixels.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence

import numpy as np

from core.demo.looks import render_case, render_scan
from core.imaging.demo import DemoImage
from core.imaging.encoders import ImageEncoder, make_image_encoder
from core.imaging.store import StagedImport
from core.settings import Settings

__all__ = ["case_images", "demo_encoder", "scan_image"]

CASE_SEED = 1  # the second seed word of a case's rendering; scans use 2
SCAN_SEED = 2
STUDY_YEARS = 6  # historical cases were imaged within this many years before the demo date


def demo_encoder(settings: Settings) -> ImageEncoder:
    """The encoder that embeds the demo images: the configured one, or radiomics when it is ``none``."""
    enc = make_image_encoder(settings)
    if enc is None:
        from core.imaging.radiomics import RadiomicsEncoder

        enc = RadiomicsEncoder()
    return enc


def case_images(
    settings: Settings,
    encoder: ImageEncoder,
    staged: StagedImport,
    rows: Sequence[dict[str, object]],
    demo_date: dt.datetime,
    progress: Callable[[str], None] | None = None,
) -> dict[str, DemoImage]:
    """One rendered, staged and embedded image per case row (``case_id``, ``anatomy``, ``diagnosis``, ``severity``)."""
    date_rng = np.random.default_rng([settings.demo.seed, 3])
    out: dict[str, DemoImage] = {}
    for i, row in enumerate(rows):
        anatomy = str(row["anatomy"])
        img = render_case(anatomy, str(row["diagnosis"]), row.get("severity"), [settings.demo.seed, CASE_SEED, i])  # type: ignore[arg-type]
        frames = img[np.newaxis]
        when = demo_date - dt.timedelta(days=int(date_rng.integers(30, 365 * STUDY_YEARS)))
        out[str(row["case_id"])] = DemoImage(
            anatomy, staged.add_frames(frames), frames.shape, encoder.encode(img), encoder.encoder_id, when
        )
        if progress and (i + 1) % 1000 == 0:
            progress(f"Drew and embedded {i + 1} of {len(rows)} case images")
    return out


def scan_image(
    settings: Settings,
    encoder: ImageEncoder,
    staged: StagedImport,
    anatomy: str,
    diagnosis: str,
    severity: str,
    key: int,
    embed: bool,
) -> DemoImage:
    """A demo scan's study, staged; embedded from its middle frame (as an import is) when ``embed``."""
    frames = render_scan(anatomy, diagnosis, severity, [settings.demo.seed, SCAN_SEED, key])
    vec = encoder.encode(frames[frames.shape[0] // 2]) if embed else None
    return DemoImage(anatomy, staged.add_frames(frames), frames.shape, vec, encoder.encoder_id if embed else None)
