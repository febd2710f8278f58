"""Compare PDF table extractors (pdfplumber, PyMuPDF ``find_tables``, camelot lattice) on guideline PDFs.

    nice -n 5 .venv/bin/python bench/pdf_tables.py [--pages 12-61] [--realdocs ../shared/realdocs]

Ground truth: the two long demo guidelines (assets/kb/realshaped) are rendered here, and their
generator knows every table, so each extractor's rows can be scored exactly: row recall (true rows
on the scanned pages found with every cell right, headers included) and row precision. The real
CDC booklet (read at run time from ``--realdocs``, never copied) has no ground truth: the number of
tables and rows found is printed, with a sample. PyMuPDF and camelot are optional imports (they are
not dependencies: PyMuPDF is AGPL, camelot pulls OpenCV); install them in a scratch venv and put it
on PYTHONPATH to time them. Prints the load average and CPU flags beside every figure.
"""

from __future__ import annotations

import argparse
import io
import os
import platform
import re
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

Rows = list[tuple[str, ...]]


def _norm(cells: list[str | None]) -> tuple[str, ...]:
    return tuple(re.sub(r"\s+", " ", c or "").strip() for c in cells)


def pdfplumber_rows(data: bytes, pages: list[int]) -> Rows:
    import pdfplumber

    out: Rows = []
    with pdfplumber.open(io.BytesIO(data)) as pdf:
        for n in pages:
            if n < len(pdf.pages):
                for table in pdf.pages[n].find_tables():
                    out += [_norm(r) for r in table.extract()]
    return out


def pymupdf_rows(data: bytes, pages: list[int]) -> Rows:
    import pymupdf

    out: Rows = []
    doc = pymupdf.open(stream=data, filetype="pdf")
    for n in pages:
        if n < doc.page_count:
            for table in doc[n].find_tables().tables:
                out += [_norm(r) for r in table.extract()]
    return out


def camelot_rows(data: bytes, pages: list[int]) -> Rows:
    import camelot
    from pypdf import PdfReader

    count = len(PdfReader(io.BytesIO(data)).pages)
    with tempfile.NamedTemporaryFile(suffix=".pdf") as f:
        f.write(data)
        f.flush()
        spec = ",".join(str(n + 1) for n in pages if n < count)
        tables = camelot.read_pdf(f.name, pages=spec, flavor="lattice")
        return [_norm([str(c) for c in row]) for t in tables for row in t.df.values.tolist()]


EXTRACTORS: dict[str, Callable[[bytes, list[int]], Rows]] = {
    "pdfplumber": pdfplumber_rows, "pymupdf": pymupdf_rows, "camelot": camelot_rows,
}  # fmt: skip


def _truth(doc: object, pages: set[int]) -> set[tuple[str, ...]]:
    """True rows of the tables whose section starts on a scanned page (1-based pages)."""
    rows: set[tuple[str, ...]] = set()
    page = 0
    for kind, payload in doc.source.items:  # type: ignore[attr-defined]
        if kind == "heading":
            page = doc.pages.get(payload.title, 0)  # type: ignore[attr-defined]
        elif kind == "table" and page in pages:
            rows |= {_norm(r) for r in payload}
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pages", default="12-61", help="0-based page range of each long guideline to scan")
    ap.add_argument("--realdocs", default="../shared/realdocs")
    args = ap.parse_args()
    from core.kb.demo.longguides import long_guidelines

    lo, hi = (int(x) for x in args.pages.split("-"))
    scan = list(range(lo, hi + 1))
    flags = [f for f in ("avx512_bf16", "avx512f", "avx2") if f in Path("/proc/cpuinfo").read_text()]
    print(f"# {platform.processor() or platform.machine()} flags={flags} load={os.getloadavg()}")
    docs = long_guidelines(Path("assets/kb/realshaped"))
    real = Path(args.realdocs) / "cdc_what_you_need_to_know_about_tb.pdf"
    for name, extract in EXTRACTORS.items():
        for doc in docs:
            truth = _truth(doc, {n + 1 for n in range(lo, hi)})  # a section starting on the last page may spill over
            t0 = time.perf_counter()
            try:
                rows = extract(doc.pdf, scan)
            except ImportError as exc:
                print(f"{name}: not installed ({exc})")
                break
            secs = time.perf_counter() - t0
            got = set(rows)
            recall = len(truth & got) / max(1, len(truth))
            precision = sum(r in truth for r in rows) / max(1, len(rows))
            print(f"{name:10s} {doc.name:18s} pages={len(scan)} {secs:6.1f}s rows={len(rows)} "
                  f"row_recall={recall:.3f} row_precision={precision:.3f} load={os.getloadavg()[0]:.1f}")  # fmt: skip
        else:
            if real.exists():
                data = real.read_bytes()
                t0 = time.perf_counter()
                rows = extract(data, list(range(40)))
                print(f"{name:10s} cdc-booklet        {time.perf_counter() - t0:6.1f}s rows={len(rows)} sample={rows[:2]}")


if __name__ == "__main__":
    main()
