"""Load: many doctors asking and saving drafts at once, in threads and in processes, on both stores.

Checked: no lost or duplicated drafts, messages or audit rows (rows counted, ids
unique), rate limits exact under concurrency. Latencies are recorded, never
asserted: set ``CASEBOOK_RELIABILITY_OUT=path.json`` to keep them (docs/RELIABILITY.md).
Extractive path only (no model), loopback only, bounded in count and time.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import func, select

from core import audit
from core.answer.service import ask_question
from core.errors import RateLimitedError
from core.reports import DraftText, save_draft
from core.runtime import Runtime, open_runtime
from core.settings import Settings
from core.store.models import AuditLog, Message, ReportDraft, Scan, User
from tests.backends import backend_params, writable_runtime

THREADS, PER_THREAD = 8, 6
PROCS, PER_PROC = 3, 6
QUESTIONS = ("What do similar cases show?", "How severe are similar cases?", "What is the prognosis?")


@pytest.fixture(params=backend_params())
def loaded(request: pytest.FixtureRequest, demo_root: Path, tmp_path: Path) -> Iterator[Runtime]:
    """A writable store with 8 extra doctors and a rate limit no test run reaches."""
    rt = writable_runtime(str(request.param), request, demo_root, tmp_path, ask={"rate_limit_per_minute": 10_000})
    with rt.db.session() as s:
        s.add_all(User(username=f"dr.load{i}", display_name=f"Load {i}", role="doctor") for i in range(THREADS))
    yield rt
    rt.db.dispose()


def _doctors(rt: Runtime) -> list[int]:
    with rt.db.read_only() as s:
        return list(s.scalars(select(User.id).where(User.username.like("dr.load%")).order_by(User.id)))


def _scans(rt: Runtime) -> list[str]:
    with rt.db.read_only() as s:
        return list(s.scalars(select(Scan.id).where(Scan.embedding.is_not(None)).order_by(Scan.id)))


def _counts(rt: Runtime) -> dict[str, int]:
    """Rows per table, plus audit rows per event the load writes (an ask, a draft save)."""
    with rt.db.read_only() as s:
        counts = {
            m.__tablename__: int(s.scalar(select(func.count()).select_from(m)) or 0)
            for m in (Message, ReportDraft, AuditLog)
        }
        for event in (audit.ASK, audit.DRAFT_SAVE):
            q = select(func.count()).select_from(AuditLog).where(AuditLog.action == event)
            counts[f"audit:{event}"] = int(s.scalar(q) or 0)
        return counts


def _audit_grew(rt: Runtime, before: dict[str, int], after: dict[str, int], asks: int, saves: int) -> None:
    """One ``ask`` row per answer, one ``draft.save`` row per saved draft, no other row, and the chain verifies."""
    assert after[f"audit:{audit.ASK}"] - before[f"audit:{audit.ASK}"] == asks
    assert after[f"audit:{audit.DRAFT_SAVE}"] - before[f"audit:{audit.DRAFT_SAVE}"] == saves
    assert after["audit_log"] - before["audit_log"] == asks + saves
    checked = audit.verify(rt.db)  # concurrent writers must queue on the chain, never fork it
    assert checked.ok, checked


def _record(name: str, backend: str, latencies: list[float], **extra: Any) -> None:
    """Print p50/p95 and, when asked, append them to ``CASEBOOK_RELIABILITY_OUT``."""
    ms = np.array(latencies) * 1000
    row = {
        "test": name,
        "backend": backend,
        "n": len(ms),
        "p50_ms": round(float(np.percentile(ms, 50)), 1),
        "p95_ms": round(float(np.percentile(ms, 95)), 1),
        **extra,
    }
    print(json.dumps(row))
    if out := os.environ.get("CASEBOOK_RELIABILITY_OUT"):
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")


def _work(rt: Runtime, doctor: int, scans: list[str], n: int, tag: str) -> tuple[list[float], list[int]]:
    """``n`` rounds of ask + save-draft; returns ask latencies and saved draft ids."""
    latencies, drafts = [], []
    for i in range(n):
        sid = scans[(doctor + i) % len(scans)]
        t = time.perf_counter()
        ask_question(rt, sid, QUESTIONS[i % len(QUESTIONS)], doctor)
        latencies.append(time.perf_counter() - t)
        drafts.append(save_draft(rt.db, sid, doctor, DraftText(f"Findings {tag}-{i}.", f"Impression {tag}-{i}.", "")))
    return latencies, drafts


def test_threads_lose_and_duplicate_nothing(loaded: Runtime) -> None:
    before, doctors, scans = _counts(loaded), _doctors(loaded), _scans(loaded)
    results: list[tuple[list[float], list[int]]] = []
    errors: list[BaseException] = []

    def run(doctor: int) -> None:
        try:
            results.append(_work(loaded, doctor, scans, PER_THREAD, f"t{doctor}"))
        except BaseException as exc:  # surfaced below: a thread must not swallow a failure
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(d,)) for d in doctors]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    after, n = _counts(loaded), THREADS * PER_THREAD
    assert after["messages"] - before["messages"] == 2 * n
    _audit_grew(loaded, before, after, asks=n, saves=n)
    assert after["report_drafts"] - before["report_drafts"] == n
    ids = [d for _, ds in results for d in ds]
    assert len(ids) == len(set(ids)) == n
    with loaded.db.read_only() as s:
        texts = set(s.scalars(select(ReportDraft.findings).where(ReportDraft.id.in_(ids))))
    assert texts == {f"Findings t{d}-{i}." for d in doctors for i in range(PER_THREAD)}
    _record(
        "threads",
        loaded.db.engine.dialect.name,
        [x for ls, _ in results for x in ls],
        doctors=THREADS,
        asks=n,
        drafts=n,
        seconds=round(time.perf_counter() - started, 1),
    )


def _proc_main(settings_json: str, doctor: int, scans: list[str], n: int, out: Any) -> None:
    rt = open_runtime(Settings.model_validate_json(settings_json))
    try:
        out.put(("ok", doctor, *_work(rt, doctor, scans, n, f"p{doctor}")))
    except BaseException as exc:
        out.put(("error", doctor, repr(exc), []))
    finally:
        rt.db.dispose()


def test_processes_lose_and_duplicate_nothing(loaded: Runtime, spawn_ctx: Any) -> None:
    before, doctors, scans = _counts(loaded), _doctors(loaded)[:PROCS], _scans(loaded)
    ctx = spawn_ctx
    out = ctx.Queue()
    payload = loaded.settings.model_dump_json()
    procs = [ctx.Process(target=_proc_main, args=(payload, d, scans, PER_PROC, out)) for d in doctors]
    for p in procs:
        p.start()
    got = [out.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(30)
    assert all(g[0] == "ok" for g in got), got
    after, n = _counts(loaded), PROCS * PER_PROC
    assert after["messages"] - before["messages"] == 2 * n
    _audit_grew(loaded, before, after, asks=n, saves=n)
    ids = [d for g in got for d in g[3]]
    assert len(ids) == len(set(ids)) == after["report_drafts"] - before["report_drafts"] == n
    _record("processes", loaded.db.engine.dialect.name, [x for g in got for x in g[2]], processes=PROCS, asks=n)


def test_rate_limit_exact_under_load(loaded: Runtime) -> None:
    """One doctor, many threads: exactly ``limit`` answers, every other request refused, nothing half-saved."""
    limit = 10
    rt = open_runtime(
        loaded.settings.model_copy(
            update={"ask": loaded.settings.ask.model_copy(update={"rate_limit_per_minute": limit})}
        )
    )
    doctor, scans = _doctors(rt)[0], _scans(rt)
    # one scan per thread: a second question on a scan while one is in flight is refused
    # (ConflictError, core.answer.records.begin_exchange), which is not what this test counts
    assert len(scans) >= 6
    before = _counts(rt)
    answered, refused = [], []
    errors: list[BaseException] = []

    def run(i: int) -> None:
        for j in range(4):
            try:
                ask_question(rt, scans[i], QUESTIONS[j % 3], doctor)
                answered.append(1)
            except RateLimitedError:
                refused.append(1)
            except BaseException as exc:  # surfaced below: a thread must not swallow a failure
                errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    after = _counts(rt)
    assert len(answered) == limit and len(refused) == 24 - limit
    assert after["messages"] - before["messages"] == 2 * limit
    _audit_grew(loaded, before, after, asks=limit, saves=0)
    rt.db.dispose()
