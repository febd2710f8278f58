"""Progress with the time left: the estimate itself, and a real ingestion reporting through it."""

from __future__ import annotations

from pathlib import Path

from core.kb import KnowledgeBase
from core.progress import Eta
from core.settings import REPO_ROOT
from tests.conftest import make_settings


def test_eta_weights_stages_and_estimates_the_time_left() -> None:
    now = [100.0]
    seen: list[tuple[float, str]] = []
    eta = Eta(lambda f, text: seen.append((round(f, 3), text)), clock=lambda: now[0])
    eta("parse", 0, 2)
    eta("parse", 2, 2)
    eta("embed", 0, 400)
    now[0] += 10.0
    eta("embed", 100, 400)  # 100 passages in 10 s: 300 more take about 30 s
    now[0] += 50.0
    eta("embed", 400, 400)
    assert seen == [
        (0.0, "Reading files 0/2"),
        (0.15, "Reading files 2/2"),
        (0.15, "Embedding passages 0/400"),
        (0.362, "Embedding passages 100/400, about 30 s left"),
        (1.0, "Embedding passages 400/400"),
    ]
    slow = Eta(lambda f, text: seen.append((f, text)), clock=lambda: now[0])
    slow("embed", 0, 10_000)
    now[0] += 60.0
    slow("embed", 100, 10_000)
    assert seen[-1][1] == "Embedding passages 100/10000, about 1.6 h left"  # 9900 x 0.6 s


def test_an_ingestion_reports_every_stage_to_the_end(tmp_path: Path) -> None:
    kb = KnowledgeBase(make_settings(tmp_path, kb={"progress": False, "embed_batch": 4}))
    seen: list[tuple[float, str]] = []
    source = sorted((REPO_ROOT / "assets" / "kb" / "guidelines").glob("*.md"))[0]
    report = kb.ingest([source], "guideline", "user", progress=Eta(lambda f, text: seen.append((f, text))))
    assert report.total_chunks > 4 and not report.errors  # several embedding batches
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert seen[0][1].startswith("Reading files") and any("left" in t for _, t in seen)
    assert seen[-1][1] == f"Embedding passages {report.total_chunks}/{report.total_chunks}"
