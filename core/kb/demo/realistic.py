"""The long, real-shaped demo content: a 40-page guideline PDF and six full-layout labels.

Sources live under ``<assets_dir>/<kb.demo_subdir>/realistic/``: the guideline as
Markdown (``guidelines/*.md``, rendered to PDF here by :mod:`core.kb.demo.pdfwrite`) and the
labels as SPL XML (``labels/*.xml``, written from ``labels_src/*.txt`` by
:mod:`core.kb.demo.splwrite`). They are not part of the demo KB build; they are ingested the
way a doctor's upload is, into a document space (the shared one by default).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.kb.demo.pdfwrite import write_pdf

if TYPE_CHECKING:
    from core.kb.base import KnowledgeBase
    from core.kb.index.ingest import IngestReport
    from core.settings import Settings

__all__ = ["ingest_realistic", "realistic_dir", "realistic_files"]


def realistic_dir(settings: Settings) -> Path:
    """The folder holding the realistic sources."""
    return settings.paths.resolve(settings.paths.assets_dir) / settings.kb.demo_subdir / "realistic"


def realistic_files(settings: Settings, out_dir: Path | None = None) -> tuple[list[Path], list[Path]]:
    """(guideline PDFs rendered into ``out_dir``, label XML files); PDFs are re-rendered when the source is newer.

    ``out_dir`` defaults to ``<data_dir>/generated``.
    """
    src = realistic_dir(settings)
    out = out_dir or settings.paths.resolve(settings.paths.data_dir) / "generated"
    pdfs = [write_pdf(md, out / f"{md.stem}.pdf") for md in sorted((src / "guidelines").glob("*.md"))]
    return pdfs, sorted((src / "labels").glob("*.xml"))


def ingest_realistic(base: KnowledgeBase, kb: str = "user") -> list[IngestReport]:
    """Ingest the realistic guideline PDF(s) and labels into ``kb`` (guidelines first, then labels).

    As an upload is: bounded parsing, and each document's source is its file name, not the generated path.
    """
    from core.kb.index.ingest import IngestReport
    from core.kb.spaces import DocumentSpaces

    spaces = DocumentSpaces(base)
    pdfs, labels = realistic_files(base.settings)
    reports = []
    for kind, paths in (("guideline", pdfs), ("spl", labels)):
        if paths:
            report = IngestReport(kb=kb)
            spaces.ingest_named(kb, kind, [(p, p.name) for p in paths], report)
            reports.append(report)
    return reports
