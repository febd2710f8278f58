"""Class 9 of issue 26, "the small ones", each tested as a class of inputs on real parts.

* rate limits on every costly feature: parallel calls, some refused (a conflict, bad input,
  access denied), never spend the limit (hypothesis over limit, burst size and refusal kind);
  Ask AI's refusal for a question already in flight gives its count back;
* a global failed-log-in limit that needs no client address stops password spraying;
* every log-in gets a new token and revokes any token the browser already held;
* a full disk during ``import-dicom`` (the real CLI in a child whose files cannot grow past a
  few hundred KB, RLIMIT_FSIZE with SIGXFSZ ignored: the writes fail with EFBIG as with ENOSPC)
  is a typed ``DiskFullError`` with a hint, and nothing is imported;
* amending a colleague's report is a setting, recorded in the audit and shown.
"""

from __future__ import annotations

import itertools
import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import func, select

from core.answer.records import begin_exchange
from core.auth import authenticate
from core.demo.patients import DEMO_PASSWORD
from core.errors import (
    AccessDeniedError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    RateLimitedError,
)
from core.imaging.store import ImageStore
from core.limits import limited
from core.reports import DraftText, amend_report, report_versions, save_draft, sign_draft
from core.runtime import Runtime
from core.sessions import create_session, resolve_session
from core.store.models import AuditLog, RateLimitHit, User
from tests.conftest import make_settings, scan_of
from tests.imaging_support import counts, packaged

GENERATED = 12
_BUCKETS = itertools.count()  # a fresh bucket per generated case: hypothesis may repeat a case


def _uid(rt: Runtime, username: str) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(User.id).where(User.username == username)) or 0)


# -- rate limits: refused calls are free -----------------------------------------------------------------------------
@settings(max_examples=GENERATED, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    limit=st.integers(2, 7),
    burst=st.integers(8, 20),
    refusal=st.sampled_from([ConflictError, InvalidInputError, AccessDeniedError, NotFoundError]),
    feature=st.sampled_from(["guideline", "selfrag", "draft", "import", "upload", "ask"]),
)
def test_parallel_refused_calls_never_spend_the_limit(
    fresh: Runtime, limit: int, burst: int, refusal: type[Exception], feature: str
) -> None:
    """``burst`` calls at once; one holds the single in-flight slot, the others are refused by it."""
    uid = _uid(fresh, "dr.chen")
    bucket = f"{feature}-{next(_BUCKETS)}"
    slot, start = threading.Lock(), threading.Barrier(burst)
    outcomes: list[str] = []

    def call() -> None:
        start.wait()
        try:
            with limited(fresh.db, uid, bucket, limit=limit, window_s=60, lazy=True) as gate:
                if not slot.acquire(blocking=False):
                    raise refusal("another call of this feature is in flight")
                gate()  # counted only once past its own checks
                time.sleep(0.3)  # the costly work, while the others arrive and are refused
            outcomes.append("done")
        except RateLimitedError:
            outcomes.append("limited")
        except refusal:
            outcomes.append("refused")

    threads = [threading.Thread(target=call) for _ in range(burst)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done = outcomes.count("done")
    assert done == 1 and outcomes.count("limited") == 0, outcomes  # no refused call was counted
    more = 0
    while True:  # what is left of the limit, one call at a time
        try:
            with limited(fresh.db, uid, bucket, limit=limit, window_s=60):
                more += 1
        except RateLimitedError:
            break
    assert done + more == limit, (outcomes, more)


@pytest.mark.parametrize("refusal", [ConflictError, InvalidInputError, AccessDeniedError])
def test_a_refused_call_gives_its_count_back(fresh: Runtime, refusal: type[Exception]) -> None:
    """Counted at entry (the feature checks inside its own call): a refusal in the block is refunded."""
    uid, bucket = _uid(fresh, "dr.chen"), f"refund-{next(_BUCKETS)}"
    for _ in range(5):
        with pytest.raises(refusal), limited(fresh.db, uid, bucket, limit=2, window_s=60):
            raise refusal("refused before any work")
    for _ in range(2):
        with limited(fresh.db, uid, bucket, limit=2, window_s=60):
            pass
    with pytest.raises(RateLimitedError), limited(fresh.db, uid, bucket, limit=2, window_s=60):
        pass


@pytest.mark.parametrize(("asks", "limit"), [(20, 7), (12, 3), (8, 2)])
def test_parallel_asks_on_one_scan_answer_one_and_leave_the_limit(fresh: Runtime, asks: int, limit: int) -> None:
    """The red team's case: ``asks`` parallel questions on one scan, one in flight at a time."""
    from core.answer.records import complete_exchange
    from core.contracts import AskAnswer

    uid, scan = _uid(fresh, "dr.chen"), scan_of(fresh, "rahul.mehta")
    start, outcomes, pending = threading.Barrier(asks), [], []

    def ask(i: int) -> None:
        start.wait()
        try:
            pending.append(begin_exchange(fresh.db, scan, uid, f"Question {i}?", stale_after_s=600,
                                          limit=limit, window_s=60))  # fmt: skip
            outcomes.append("answered")
        except ConflictError:
            outcomes.append("in flight")
        except RateLimitedError:
            outcomes.append("limited")

    threads = [threading.Thread(target=ask, args=(i,)) for i in range(asks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert outcomes.count("answered") == 1 and outcomes.count("limited") == 0, outcomes
    done = AskAnswer(answer="Done.", citedCaseIds=[], confidence="low")
    complete_exchange(fresh.db, pending[0], done)
    for i in range(limit - 1):  # the rest of the limit is still there, one question at a time
        complete_exchange(fresh.db, begin_exchange(fresh.db, scan, uid, f"Later {i}?", stale_after_s=600,
                                                   limit=limit, window_s=60), done)  # fmt: skip
    with pytest.raises(RateLimitedError):
        begin_exchange(fresh.db, scan, uid, "One too many?", stale_after_s=600, limit=limit, window_s=60)
    with fresh.db.read_only() as s:
        hits = s.scalar(select(func.count()).select_from(RateLimitHit).where(RateLimitHit.bucket == "ask"))
    assert hits == limit


# -- password spraying without a client address ----------------------------------------------------------------------
@pytest.mark.parametrize("global_limit", [2, 3, 5])
def test_a_global_limit_stops_spraying_with_no_client_address(fresh: Runtime, global_limit: int) -> None:
    with fresh.db.read_only() as s:
        names = list(s.scalars(select(User.username).order_by(User.id)))
    sprayed = names[: global_limit + 2]
    refused = []
    for name in sprayed:  # one guess per account: the per-account limit (5) never trips
        try:
            assert authenticate(fresh.db, name, "Summer2026!", max_failures=5, max_global_failures=global_limit) is None
        except RateLimitedError:
            refused.append(name)
    assert refused == sprayed[global_limit:], refused
    with pytest.raises(RateLimitedError):  # until the failures age out, even the right password waits
        authenticate(fresh.db, "dr.chen", DEMO_PASSWORD, max_failures=5, max_global_failures=global_limit)
    assert authenticate(fresh.db, "dr.chen", DEMO_PASSWORD, max_failures=5, max_global_failures=0) is not None


# -- session fixation ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("planted_by", ["dr.hassan", "rahul.mehta", "dr.chen"])
def test_a_log_in_gets_a_new_token_and_revokes_a_planted_one(fresh: Runtime, planted_by: str) -> None:
    planted = create_session(fresh.db, _uid(fresh, planted_by), lifetime_s=600)
    assert resolve_session(fresh.db, planted, idle_s=600) is not None
    victim = _uid(fresh, "dr.chen")
    token = create_session(fresh.db, victim, lifetime_s=600, replaces=planted)
    assert token != planted
    assert resolve_session(fresh.db, planted, idle_s=600) is None
    mine = resolve_session(fresh.db, token, idle_s=600)
    assert mine is not None and mine.id == victim


# -- a full disk during import-dicom ---------------------------------------------------------------------------------
def _file_size_limit(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the kernel kills the writer instead of failing the write
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))


def _import_dicom(root: Path, limit_kb: int | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """The real ``python -m core import-dicom`` over the database under ``root``, its files capped at ``limit_kb``."""
    return subprocess.run(
        [sys.executable, "-m", "core", "--preset", "test", "import-dicom", str(packaged("CT_small.dcm")),
         "--anatomy", "lung"],
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "CASEBOOK_PATHS__DATA_DIR": str(root / "data"),
             "CASEBOOK_PATHS__INDEX_DIR": str(root / "indexes"), **env},
        preexec_fn=(lambda: _file_size_limit(limit_kb * 1024)) if limit_kb else None,
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def _assert_typed_and_nothing_imported(fresh: Runtime, before: dict[str, int], done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-3000:])
    assert "ran out of room" in done.stderr and "hint: Free space" in done.stderr, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    assert counts(fresh) == before  # nothing imported, nothing left in staging


# Under RLIMIT_FSIZE the writes past the limit fail with EFBIG, as they would with ENOSPC. SQLite reports EFBIG
# as a plain I/O error (it reports ENOSPC as SQLITE_FULL), so these limits are sized to be hit by the image
# store's writes (the de-identified 39 KB file); the tmpfs case below fills a real file system.
@pytest.mark.parametrize("limit_kb", [8, 24])
def test_a_file_size_limit_during_import_dicom_is_a_typed_error_and_imports_nothing(
    fresh: Runtime, limit_kb: int
) -> None:
    before = counts(fresh)
    _assert_typed_and_nothing_imported(fresh, before, _import_dicom(fresh.settings.paths.data_dir.parent, limit_kb))


def test_a_full_image_store_file_system_is_a_typed_error(fresh: Runtime, tmp_path: Path) -> None:
    """A real ENOSPC: the image store on a 1 MB tmpfs with about 16 KB left (needs root to mount)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    if shutil.which("mount") is None or subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True
    ).returncode:
        pytest.skip("cannot mount a tmpfs here (needs root); the file-size-limit cases above cover a full disk")
    try:
        store = ImageStore.from_settings(fresh.settings)
        if (store.root / "keys" / "identity.key").is_file():  # else the import creates it (32 bytes)
            (mnt / "keys").mkdir()
            shutil.copy2(store.root / "keys" / "identity.key", mnt / "keys" / "identity.key")
        free = shutil.disk_usage(mnt).free
        (mnt / "filler").write_bytes(b"\0" * max(free - 16 * 1024, 0))
        before = counts(fresh)
        done = _import_dicom(fresh.settings.paths.data_dir.parent, CASEBOOK_IMAGING__STORE_ROOT=str(mnt))
        _assert_typed_and_nothing_imported(fresh, before, done)
        assert "No space left" in done.stderr or "ENOSPC" in done.stderr or "Errno 28" in done.stderr, done.stderr
        leftovers = [p for p in mnt.rglob("*") if p.is_file() and p.name not in {"filler", "identity.key"}]
        assert not leftovers, leftovers
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


# -- amending a colleague's report -----------------------------------------------------------------------------------
def test_amending_a_colleagues_report_is_a_setting_recorded_and_shown(fresh: Runtime) -> None:
    chen, hassan = _uid(fresh, "dr.chen"), _uid(fresh, "dr.hassan")
    scan = scan_of(fresh, "imran.khan")
    rid = sign_draft(fresh.db, save_draft(fresh.db, scan, chen, DraftText("Findings.", "Impression.", "")), chen)
    with pytest.raises(AccessDeniedError, match="another doctor"):  # off by default
        amend_report(fresh.db, rid, hassan, "Other findings.", "Impression.", "", reason="Second look")
    assert make_settings(fresh.settings.paths.data_dir.parent).ui.amend_colleague_reports is False
    new = amend_report(fresh.db, rid, hassan, "Other findings.", "Impression.", "", reason="Second look",
                       allow_colleague=True)  # fmt: skip
    own = amend_report(fresh.db, new, hassan, "Other findings, again.", "Impression.", "", reason="Typo")
    rows = {r.id: r for r in report_versions(fresh.db, scan)}
    assert rows[new].amends_colleague and not rows[own].amends_colleague and not rows[rid].amends_colleague
    with fresh.db.read_only() as s:
        details = [d for (d,) in s.execute(select(AuditLog.detail).where(AuditLog.action == "report.amend"))]
    assert {"colleague_of": chen}.items() <= details[-2].items() and "colleague_of" not in details[-1]


# -- images only to a session ----------------------------------------------------------------------------------------
_MEDIA_CALLS = {"image", "audio", "video", "pdf", "download_button"}  # Streamlit serves these on /media/ URLs


def test_no_page_puts_a_file_on_the_media_endpoint() -> None:
    """``/media/`` serves any client holding the URL, session or not; pages send images inside the page instead."""
    import ast

    from core.settings import REPO_ROOT

    found = []
    for path in [*sorted((REPO_ROOT / "pages").glob("*.py")), REPO_ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MEDIA_CALLS:
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node.func)}")
    assert not found, found


def test_a_cookie_grant_is_used_once_and_expires() -> None:
    from core.session_grants import issue, redeem

    grant = issue("tok", 600, now=1000.0)
    assert redeem("forged", now=1001.0) is None
    assert redeem(grant, now=1001.0) == ("tok", 600)
    assert redeem(grant, now=1002.0) is None  # spent
    late = issue("tok", 600, now=2000.0)
    assert redeem(late, now=2061.0) is None  # older than 60 s
