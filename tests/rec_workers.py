"""Light worker targets for the record, audit and log-in concurrency tests.

Spawned children import only this module (the store, auth, drafts persistence
and audit), not a whole test module, so 40 concurrent attempts cost a few
processes instead of 40 interpreters importing FAISS. Each child runs
``threads`` workers that start together after every child is ready; each has
its own connection pool, so the database sees real concurrent clients.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["run_children"]


def _child(
    url: str, key_file: str, job: str, args: tuple[Any, ...], first: int, threads: int, barrier: Any, out: Any
) -> None:
    from pathlib import Path

    from core.store.db import Database

    db = Database(url, key_file=Path(key_file))  # the parent's record key: the children seal what they write
    start = threading.Barrier(threads)
    work = _JOBS[job]

    def one(i: int) -> None:
        start.wait()
        try:
            out.put(work(db, i, *args))
        except Exception as exc:  # reported to the test, which fails on it
            out.put(("error", repr(exc)))

    pool = [threading.Thread(target=one, args=(first + k,)) for k in range(threads)]
    barrier.wait()
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    db.dispose()


def _guess(db: Any, i: int, passwords: list[str], limit: int) -> tuple[str, Any]:
    from core.auth import authenticate
    from core.errors import RateLimitedError

    try:
        user = authenticate(db, "dr.chen", passwords[i], max_failures=limit, window_s=300)
    except RateLimitedError:
        return ("locked", i)
    return ("ok" if user is not None else "wrong", i)


def _amend(db: Any, i: int, report_id: int, doctor_id: int) -> tuple[str, Any]:
    from core.errors import ConflictError
    from core.reports import amend_report

    try:
        return ("ok", amend_report(db, report_id, doctor_id, f"Findings {i}.", "Impression.", "", reason=f"w{i}"))
    except ConflictError as exc:
        return ("conflict", str(exc))


def _edit(db: Any, i: int, scan_id: str, doctor_id: int, draft_id: int) -> tuple[str, Any]:
    from core.errors import ConflictError
    from core.reports import DraftText, save_draft

    try:
        save_draft(db, scan_id, doctor_id, DraftText(f"Edit {i}.", "I.", ""), draft_id=draft_id, expected_version=1)
        return ("ok", i)
    except ConflictError as exc:
        return ("conflict", (exc.current or {}).get("findings"))


def _audit(db: Any, i: int, per_worker: int) -> tuple[str, Any]:
    from core import audit

    return ("ok", [audit.record(db, audit.SCAN_READ, 1, f"scan_{i}_{k}", n=k) for k in range(per_worker)])


_JOBS: dict[str, Callable[..., tuple[str, Any]]] = {"guess": _guess, "amend": _amend, "edit": _edit, "audit": _audit}


def run_children(
    ctx: Any, settings: Any, job: str, *args: Any, children: int, threads: int, timeout_s: float = 240
) -> list[tuple[str, Any]]:
    """Run ``children * threads`` concurrent ``job`` workers in spawned processes; their results, in any order.

    The children open ``settings``' database with its record key.
    """
    url, key_file = settings.database_url, str(settings.record_key_path)
    barrier, out = ctx.Barrier(children), ctx.Queue()
    procs = [
        ctx.Process(target=_child, args=(url, key_file, job, args, c * threads, threads, barrier, out)) for c in range(children)
    ]
    for p in procs:
        p.start()
    results = [out.get(timeout=timeout_s) for _ in range(children * threads)]
    for p in procs:
        p.join(timeout=30)
    return results
