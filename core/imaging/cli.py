"""Sub-commands for medical images: ``import-dicom`` and ``demo-images``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from core.cli import emit, settings_from_args
from core.store.models import ANATOMIES

__all__ = ["register"]


def _import(args: argparse.Namespace) -> int:
    from core.imaging.importer import import_images
    from core.runtime import open_runtime

    rt = open_runtime(settings_from_args(args))
    last = [-1]

    def progress(fraction: float, message: str) -> None:
        pct = int(fraction * 100)
        if pct // 10 != last[0] // 10 or fraction >= 1.0:
            print(f"[{pct:3d}%] {message}", file=sys.stderr)
            last[0] = pct

    summary = import_images(
        rt.settings,
        rt.db,
        [Path(p) for p in args.paths],
        patient=args.patient,
        anatomy=args.anatomy,
        confirm_burned_in=args.confirm_burned_in,
        progress=progress,
    )
    payload = {
        "import_id": summary.import_id,
        "files": summary.files,
        "scans": [s.__dict__ for s in summary.scans],
        "embedding": summary.embedding_note,
    }
    emit(payload, args.json)
    return 0


def _demo_images(args: argparse.Namespace) -> int:
    from sqlalchemy import func, select

    from core.runtime import open_runtime
    from core.store.models import ImageSeries

    rt = open_runtime(settings_from_args(args))
    with rt.db.read_only() as s:
        embedded = s.scalar(
            select(func.count()).select_from(ImageSeries).where(
                ImageSeries.case_id.is_not(None), ImageSeries.encoder_id.is_not(None)
            )
        )
    if not embedded:  # seeded before demo images were embedded from their pixels: the vectors came from text
        print(
            "This demo database predates pixel embeddings: its case vectors were derived from text. "
            "Move the data folder away and run `python -m core setup` to seed it again.",
            file=sys.stderr,
        )
        return 2
    emit({"series_added": 0, "note": "demo images are attached by seed-demo; demo data, not for clinical use"},
         args.json)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``import-dicom`` and ``demo-images``."""
    p = sub.add_parser(
        "import-dicom",
        help="Import DICOM files, folders or zips (and PNG/JPEG photographs), de-identified; all or nothing.",
    )
    p.add_argument("paths", nargs="+", help="Files, folders (searched recursively) or .zip archives.")
    p.add_argument("--patient", default=None, help="Username of the Casebook patient the studies belong to.")
    p.add_argument("--anatomy", default=None, choices=ANATOMIES, help="Anatomy when the headers do not say it.")
    p.add_argument(
        "--confirm-burned-in",
        action="store_true",
        help="Accept images flagged as having burned-in annotation after a doctor has checked them.",
    )
    p.add_argument("--json", action="store_true", help="Print the summary as JSON.")
    p.set_defaults(func=_import)
    p = sub.add_parser(
        "demo-images",
        help="Check that the demo database's images carry pixel embeddings (seed-demo attaches them).",
    )
    p.add_argument("--json", action="store_true", help="Print the result as JSON.")
    p.set_defaults(func=_demo_images)
    p = sub.add_parser(
        "annex-e",
        help="Print the DICOM PS3.15 Annex E table Casebook applies, as Markdown (docs/DICOM_ANNEX_E.md is its output).",
    )
    p.set_defaults(func=_annex_e)


def _annex_e(args: argparse.Namespace) -> int:
    from core.imaging.annex_e import markdown_table

    print(markdown_table(), end="")
    return 0
