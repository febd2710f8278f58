"""Compare PDF extractors that expose font size and weight, on the 41-page demo guideline.

    PYTHONPATH=.:/path/with/pdfplumber/and/pymupdf nice -n 5 .venv/bin/python bench/pdf_extractors.py

pypdf is the project's extractor (core.kb.parse.pdfparse); pdfplumber and PyMuPDF are timed
only when importable (they are not dependencies). Prints seconds per run (best of 3)
and the load average: the machine is shared, so compare the ratios of one run.
"""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from pathlib import Path

from core.kb.demo.pdfwrite import read_source, render_pdf

SOURCE = Path("assets/kb/realistic/guidelines/tb_cap_consolidated.md")


def _pypdf(data: bytes) -> int:
    from pypdf import PdfReader

    from core.kb.parse.pdfparse import read_lines

    pages, _ = read_lines(PdfReader(io.BytesIO(data)))
    return sum(len(p) for p in pages)


def _pdfplumber(data: bytes) -> int:
    import pdfplumber

    with pdfplumber.open(io.BytesIO(data)) as pdf:
        return sum(len(page.extract_words(extra_attrs=["fontname", "size"])) for page in pdf.pages)


def _pymupdf(data: bytes) -> int:
    import pymupdf

    with pymupdf.open(stream=data, filetype="pdf") as doc:
        return sum(len(b.get("lines", [])) for page in doc for b in page.get_text("dict")["blocks"])


def main() -> None:
    """Time each available extractor."""
    data = render_pdf(read_source(SOURCE), outline=False, metadata=False)
    runs: dict[str, Callable[[bytes], int]] = {"pypdf": _pypdf, "pdfplumber": _pdfplumber, "pymupdf": _pymupdf}
    print(f"load average: {Path('/proc/loadavg').read_text().split()[:3]}")
    for name, fn in runs.items():
        try:
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                n = fn(data)
                best = min(best, time.perf_counter() - start)
            print(f"{name:11s} {best:6.3f} s  ({n} lines/words)")
        except ImportError:
            print(f"{name:11s} not installed")


if __name__ == "__main__":
    main()
