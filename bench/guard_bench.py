"""How much grounded text the output guard keeps, and how much hostile text it drops.

Usefulness: the doctor-question set (tests/data/doctor_questions.json, 248
questions over the demo scans) is answered by the extractive composer; every
sentence of every cited answer is text a faithful model could write, so the
guard should keep it. The share it drops is the guard's false-drop rate, with
the reasons counted.

Safety: the hostile sentences of tests/test_hostile_guard.py, checked against
each demo bundle that answers, must all be dropped.

Run: ``PYTHONPATH=. python bench/guard_bench.py`` (seeds a demo database in a temp folder,
about two minutes on two shared cores).
"""

from __future__ import annotations

import collections
import json
import tempfile
import time
from pathlib import Path

from sqlalchemy import select

from core.answer.guard import enforce, split_sentences
from core.answer.service import answer_readonly
from core.demo.seed import seed_demo
from core.runtime import open_runtime
from core.settings import load_settings
from core.store.models import Scan, User

ROOT = Path(__file__).resolve().parents[1]


def _scan(rt: object, username: str, index: int) -> str:
    with rt.db.read_only() as s:  # type: ignore[attr-defined]
        ids = s.scalars(
            select(Scan.id)
            .join(User, User.id == Scan.patient_id)
            .where(User.username == username)
            .order_by(Scan.created_at)
        ).all()
    return str(ids[index])


def main() -> None:
    """Seed, answer, guard, print."""
    items = json.loads((ROOT / "tests" / "data" / "doctor_questions.json").read_text())["items"]
    from tests.test_hostile_guard import (  # the hostile lists live with their tests
        DIAGNOSIS_CASES,
        DRUG_CASES,
        NUMBER_CASES,
        OUTSIDE_CASES,
        PROCEDURE_CASES,
        UNICODE_CASES,
    )

    hostile = DRUG_CASES + PROCEDURE_CASES + NUMBER_CASES + UNICODE_CASES + OUTSIDE_CASES + DIAGNOSIS_CASES
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        settings = load_settings(
            "test", paths={"data_dir": root / "data", "index_dir": root / "indexes", "model_dir": root / "models"}
        )
        rt = open_runtime(settings)
        seed_demo(rt.settings, rt.db)
        rt.search.open()
        kept = dropped = answers = 0
        hostile_kept = hostile_checked = 0
        reasons: collections.Counter[str] = collections.Counter()
        started = time.perf_counter()
        for item in items:
            result, res = answer_readonly(rt, _scan(rt, item["user"], item["scan"]), item["question"])
            if not res.answer.citedCaseIds or result.bundle is None:
                continue
            answers += 1
            a, b = (result.case_ids * 2)[:2]
            for sentence in split_sentences(res.answer.answer):
                report = enforce(sentence, result)
                kept += len(report.kept)
                dropped += len(report.removed)
                reasons.update(r.split(":")[0] for _, r in report.removed)
            for text in hostile:
                hostile_checked += 1
                hostile_kept += bool(enforce(text.replace("HC-00012", a).replace("HC-00004", b), result).kept)
        elapsed = time.perf_counter() - started
        rt.db.dispose()
    load = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"answers with citations: {answers} of {len(items)} questions")
    print(f"grounded sentences kept: {kept} of {kept + dropped} ({kept / max(1, kept + dropped):.1%})")
    print(f"drop reasons: {dict(reasons.most_common())}")
    print(f"hostile sentences kept: {hostile_kept} of {hostile_checked}")
    print(f"{elapsed:.1f} s for answering and guarding; load average {load} (2 shared cores)")


if __name__ == "__main__":
    main()
