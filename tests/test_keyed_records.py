"""Class 4 of issue 26: signed reports, audit rows and image seeds are keyed with a key the database does not hold.

The attacker here can do anything to the database file (drop the triggers, rewrite rows,
recompute every hash with the project's own functions) but cannot read the record key.
Hypothesis generates the tampering: which report field is rewritten and to what, how many
of the newest audit rows are cut off, which audit row is rewritten and re-chained, and a
forged report for another doctor. Every variant must fail ``reports verify`` or
``audit verify``; the untouched database must pass both.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import secrets
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import insert, text

from core import audit
from core.errors import RecordIntegrityError
from core.reports import DraftText, amend_report, save_draft, sign_draft, verify_reports
from core.store.db import Database
from core.store.integrity import GENESIS, audit_row_hash, canonical_time, report_hash
from core.store.keys import Keyring, add_key
from core.store.models import Scan, User
from tests.conftest import run_cli

GENERATED = 60  # tampering variants tried per property


def _world(root: Path) -> Path:
    """A SQLite database with two doctors, a patient, two signed chains (one amended) and audit rows."""
    path = root / "data" / "casebook.db"
    db = Database(f"sqlite:///{path}")
    db.migrate()
    with db.session() as s:
        a = User(username="dr.a", display_name="Dr A", role="doctor")
        b = User(username="dr.b", display_name="Dr B", role="doctor")
        p = User(username="pat", display_name="Pat", role="patient")
        s.add_all([a, b, p])
        s.flush()
        s.add_all([Scan(id=f"scan_{i}", patient_id=p.id, anatomy="lung", ai_diagnosis="COPD", ai_confidence=0.9)
                   for i in range(2)])  # fmt: skip
        ids = (a.id, b.id)
    for i, scan in enumerate(("scan_0", "scan_1")):
        draft = save_draft(db, scan, ids[i], DraftText(f"Findings {i}.", f"Impression {i}.", ""))
        rid = sign_draft(db, draft, ids[i])
    amend_report(db, rid, ids[1], "Amended findings.", "Amended impression.", "", reason="Added detail")
    audit.record(db, audit.SCAN_READ, ids[0], "scan_0")
    db.dispose()
    return path


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _world(tmp_path_factory.mktemp("keyed"))


def _copy(template: Path, root: Path) -> Database:
    shutil.copytree(template.parent, root / "data", dirs_exist_ok=True)
    return Database(f"sqlite:///{root / 'data' / 'casebook.db'}")


def _raw(db: Database) -> sqlite3.Connection:
    """The attacker's connection: the triggers dropped, no key."""
    con = sqlite3.connect(str(db.url.removeprefix("sqlite:///")), isolation_level=None)
    for (name,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall():
        con.execute(f"DROP TRIGGER {name}")
    return con


def _problems(db: Database) -> list[str]:
    return verify_reports(db).problems + audit.verify(db).problems


def _rehash_report(con: sqlite3.Connection, rid: int) -> None:
    """Recompute a report's content hash with the project's own function, as the red team did."""
    con.row_factory = sqlite3.Row
    r = con.execute("SELECT * FROM reports WHERE id = ?", (rid,)).fetchone()
    prev = con.execute("SELECT content_hash FROM reports WHERE id = ?", (r["supersedes_id"],)).fetchone()
    h = report_hash(
        scan_id=r["scan_id"], author_id=r["author_id"], findings=r["findings"], impression=r["impression"],
        recommendations=r["recommendations"], is_ai_corrected=bool(r["is_ai_corrected"]), version=r["version"],
        supersedes_id=r["supersedes_id"], signed_at=dt.datetime.fromisoformat(r["signed_at"]),
        amend_reason=r["amend_reason"], prev_hash=prev[0] if prev else None,
    )  # fmt: skip
    con.execute("UPDATE reports SET content_hash = ? WHERE id = ?", (h, rid))


def _rechain(con: sqlite3.Connection) -> None:
    """Renumber and re-hash the whole audit chain and move the head, as someone without the key can."""
    con.row_factory = sqlite3.Row
    prev, seq = GENESIS, 0
    for r in con.execute("SELECT * FROM audit_log ORDER BY seq").fetchall():
        seq += 1
        h = audit_row_hash(
            prev_hash=prev, seq=seq, at=dt.datetime.fromisoformat(r["at"]), actor_id=r["actor_id"],
            action=r["action"], scan_ref=r["scan_ref"], backend=r["backend"], prompt_hash=r["prompt_hash"],
            outcome=r["outcome"], detail=json.loads(r["detail"]),
        )  # fmt: skip
        con.execute("UPDATE audit_log SET seq = ?, prev_hash = ?, row_hash = ? WHERE id = ?", (seq, prev, h, r["id"]))
        prev = h
    con.execute("UPDATE audit_head SET seq = ?, last_hash = ? WHERE id = 1", (seq, prev))


def test_the_untouched_records_verify(template: Path, tmp_path: Path) -> None:
    db = _copy(template, tmp_path)
    assert not _problems(db)
    assert verify_reports(db).checked == 3 and audit.verify(db).checked >= 6
    db.dispose()


FIELDS = ("findings", "impression", "recommendations", "author_id", "signed_at", "amend_reason", "scan_id")
_VALUES = st.one_of(st.text(min_size=1, max_size=40), st.integers(1, 3).map(str))


@settings(max_examples=GENERATED, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=st.sampled_from(FIELDS), value=_VALUES, rid=st.integers(1, 3), guess_key=st.booleans())
def test_a_rewritten_report_with_a_recomputed_hash_fails(
    template: Path, tmp_path_factory: pytest.TempPathFactory, field: str, value: str, rid: int, guess_key: bool
) -> None:
    db = _copy(template, tmp_path_factory.mktemp("t"))
    con = _raw(db)
    if field == "author_id":
        value = "2" if con.execute("SELECT author_id FROM reports WHERE id = ?", (rid,)).fetchone()[0] == 1 else "1"
    if field == "signed_at":
        value = canonical_time(dt.datetime(2020, 1, 1) + dt.timedelta(minutes=len(value))) or ""
    if field == "scan_id":
        value = "scan_0" if con.execute("SELECT scan_id FROM reports WHERE id = ?", (rid,)).fetchone()[0] != "scan_0" \
            else "scan_1"  # fmt: skip
    before = con.execute(f"SELECT {field} FROM reports WHERE id = ?", (rid,)).fetchone()[0]
    con.execute(f"UPDATE reports SET {field} = ? WHERE id = ?", (value, rid))
    if str(before) == str(value):
        return  # nothing changed: no tampering to find
    _rehash_report(con, rid)
    if guess_key:  # a seal under a key of the attacker's own, with the right key id
        ring = Keyring((("k1", secrets.token_bytes(32)),))
        h = con.execute("SELECT content_hash FROM reports WHERE id = ?", (rid,)).fetchone()[0]
        con.execute("UPDATE reports SET record_mac = ? WHERE id = ?", (ring.seal(h), rid))
    con.close()
    problems = verify_reports(db).problems
    assert any(f"report {rid}" in p for p in problems), (field, value, problems)
    db.dispose()


@settings(max_examples=GENERATED // 2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(1, 4))
def test_cutting_the_newest_audit_rows_and_moving_the_head_back_fails(
    template: Path, tmp_path_factory: pytest.TempPathFactory, cut: int
) -> None:
    db = _copy(template, tmp_path_factory.mktemp("t"))
    con = _raw(db)
    top = con.execute("SELECT max(seq) FROM audit_log").fetchone()[0]
    con.execute("DELETE FROM audit_log WHERE seq > ?", (top - cut,))
    _rechain(con)
    con.close()
    problems = audit.verify(db).problems
    assert any("were removed" in p for p in problems), (cut, problems)
    db.dispose()


@settings(max_examples=GENERATED // 2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seq=st.integers(1, 6), outcome=st.text(alphabet="abcdefghij", min_size=1, max_size=10))
def test_a_rewritten_and_rechained_audit_row_fails(
    template: Path, tmp_path_factory: pytest.TempPathFactory, seq: int, outcome: str
) -> None:
    db = _copy(template, tmp_path_factory.mktemp("t"))
    con = _raw(db)
    con.execute("UPDATE audit_log SET outcome = ? WHERE seq = ?", (outcome, seq))
    _rechain(con)
    con.close()
    problems = audit.verify(db).problems
    assert any(f"seq {seq}:" in p for p in problems) or outcome == "ok", (seq, problems)
    db.dispose()


@settings(max_examples=GENERATED // 3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text_=st.text(min_size=1, max_size=30), with_audit_row=st.booleans())
def test_a_report_forged_for_another_doctor_fails(
    template: Path, tmp_path_factory: pytest.TempPathFactory, text_: str, with_audit_row: bool
) -> None:
    """Inserted with a valid hash (and, in half the cases, a valid chained audit row): no valid seal."""
    db = _copy(template, tmp_path_factory.mktemp("t"))
    signed = dt.datetime(2026, 11, 1, 9, 0)
    h = report_hash(scan_id="scan_0", author_id=1, findings=text_, impression=text_, recommendations="",
                    is_ai_corrected=False, version=1, supersedes_id=None, signed_at=signed, amend_reason=None,
                    prev_hash=None)  # fmt: skip
    with db.engine.begin() as c:  # an INSERT is what the app role may do: no trigger stands in the way
        c.execute(text(
            "INSERT INTO reports (id, scan_id, author_id, findings, impression, recommendations, is_ai_corrected, "
            "version, signed_at, content_hash, record_mac) VALUES (99, 'scan_0', 1, :t, :t, '', 0, 1, :at, :h, :m)"
        ), {"t": text_, "at": canonical_time(signed), "h": h, "m": "k1:" + "0" * 64})  # fmt: skip
    if with_audit_row:
        con = _raw(db)
        con.execute(
            "INSERT INTO audit_log (at, actor_id, action, outcome, detail, seq) VALUES (?, 1, 'draft.sign', 'ok', ?, ?)",
            (canonical_time(signed), f'{{"report_id": 99, "content_hash": "{h}"}}', 10_000),
        )
        _rechain(con)
        con.close()
    problems = _problems(db)
    assert any("report 99" in p for p in problems), problems
    db.dispose()


def test_verify_cross_checks_reports_against_their_audit_rows(template: Path, tmp_path: Path) -> None:
    db = _copy(template, tmp_path)
    con = _raw(db)
    con.execute("DELETE FROM audit_log WHERE action = 'report.amend'")  # the amendment's signing row
    _rechain(con)
    con.close()
    problems = verify_reports(db).problems
    assert any("no audit row records its signing" in p for p in problems), problems
    db.dispose()


# -- the key, its file, its rotation and the seeds -------------------------------------------------------------------
def test_the_key_file_is_private_and_outside_the_database(template: Path, tmp_path: Path) -> None:
    key = template.parent / "keys" / "records.key"
    assert stat.S_IMODE(key.stat().st_mode) == 0o600 and stat.S_IMODE(key.parent.stat().st_mode) == 0o700
    raw = key.read_text().split(":")[1].strip()
    assert raw.encode() not in template.read_bytes() and bytes.fromhex(raw) not in template.read_bytes()


def test_rotation_seals_new_records_with_the_new_key_and_old_ones_still_verify(template: Path, tmp_path: Path) -> None:
    db = _copy(template, tmp_path)
    key = tmp_path / "data" / "keys" / "records.key"
    assert add_key(key) == "k2" and stat.S_IMODE(key.stat().st_mode) == 0o600
    db.dispose()
    db = Database(db.url)
    draft = save_draft(db, "scan_0", 1, DraftText("New findings.", "New impression.", ""))
    sign_draft(db, draft, 1)
    assert not _problems(db)
    with db.read_only() as s:
        macs = [m for (m,) in s.execute(text("SELECT record_mac FROM reports ORDER BY id"))]
    assert macs[-1].startswith("k2:") and macs[0].startswith("k1:")
    db.dispose()
    key.write_text(key.read_text().splitlines()[-1] + "\n")  # the old key dropped: its records no longer verify
    db = Database(db.url)
    assert any("does not hold" in p for p in verify_reports(db).problems)
    db.dispose()


def test_the_environment_key_overrides_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASEBOOK_RECORD_KEY", f"k7:{'ab' * 32}")
    ring = Keyring.load(tmp_path / "none.key", create=False)
    assert ring.active == "k7" and not (tmp_path / "none.key").exists()


@settings(max_examples=GENERATED, deadline=None)
@given(seed=st.text(alphabet="0123456789abcdef", min_size=8, max_size=64))
def test_seeds_are_stored_encrypted_and_only_the_key_opens_them(seed: str) -> None:
    ring, other = Keyring.ephemeral(), Keyring.ephemeral()
    stored = ring.seal_seed(seed)
    assert seed not in stored and ring.open_seed(stored) == seed
    with pytest.raises(RecordIntegrityError):
        other.open_seed(stored)  # the same key id, another key
    with pytest.raises(RecordIntegrityError):
        ring.open_seed(stored[:-1] + ("0" if stored[-1] != "0" else "1"))  # a changed seal
    with pytest.raises(RecordIntegrityError):
        Keyring((("k9", os.urandom(32)),)).open_seed(stored)
    with pytest.raises(RecordIntegrityError):
        ring.open_seed(seed)  # a seed in clear is refused, never used


# -- migration of an existing (revision 0004) database ---------------------------------------------------------------
def test_a_0004_database_migrates_without_losing_signed_records(tmp_path: Path) -> None:
    from alembic import command
    from alembic.config import Config

    from core.store.db import MIGRATIONS

    db = Database(f"sqlite:///{tmp_path / 'data' / 'casebook.db'}")
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    with db.engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0004")
    signed = dt.datetime(2026, 10, 1, 8, 30)
    h = report_hash(scan_id="scan_0", author_id=1, findings="Old findings.", impression="Old impression.",
                    recommendations="", is_ai_corrected=False, version=1, supersedes_id=None, signed_at=signed,
                    amend_reason=None, prev_hash=None)  # fmt: skip
    with db.engine.begin() as c:  # rows as revision 0004's code wrote them
        c.execute(insert(User).values(id=1, username="dr.a", display_name="Dr A", role="doctor",
                                                created_at=signed))  # fmt: skip
        c.execute(text("INSERT INTO scans (id, patient_id, anatomy, ai_diagnosis, ai_confidence, created_at) "
                       "VALUES ('scan_0', 1, 'lung', 'COPD', 0.9, :t)"), {"t": canonical_time(signed)})  # fmt: skip
        c.execute(text(
            "INSERT INTO reports (id, scan_id, author_id, findings, impression, recommendations, is_ai_corrected, "
            "version, signed_at, content_hash) VALUES (1, 'scan_0', 1, 'Old findings.', 'Old impression.', '', 0, 1, "
            ":t, :h)"), {"t": canonical_time(signed), "h": h})  # fmt: skip
        c.execute(text("INSERT INTO image_identity_map (identity_hmac, patient_user_id, pseudonym, uid_seed, "
                       "created_at) VALUES ('x' , 1, 'P1', 'plainseed0123', :t)"), {"t": canonical_time(signed)})  # fmt: skip
    db.migrate()
    assert not _problems(db), _problems(db)
    with db.read_only() as s:
        row = s.execute(text("SELECT findings, content_hash, record_mac FROM reports WHERE id = 1")).one()
        seed = s.execute(text("SELECT uid_seed FROM image_identity_map")).scalar_one()
        events = [a for (a,) in s.execute(text("SELECT action FROM audit_log"))]
    assert row[0] == "Old findings." and row[1] == h and row[2].startswith("k1:")
    assert seed != "plainseed0123" and db.keyring.open_seed(seed) == "plainseed0123"
    assert events == ["report.seal"]
    db.dispose()


def test_the_cli_verify_commands_fail_on_a_forged_report(demo_root: Path, tmp_path: Path) -> None:
    shutil.copytree(demo_root / "data", tmp_path / "data")
    shutil.copytree(demo_root / "indexes", tmp_path / "indexes", symlinks=True)
    assert run_cli(tmp_path, "reports", "verify").returncode == 0
    assert run_cli(tmp_path, "audit", "verify").returncode == 0
    con = sqlite3.connect(tmp_path / "data" / "casebook.db", isolation_level=None)
    con.execute("DROP TRIGGER reports_signed_no_update")
    con.execute("UPDATE reports SET impression = 'Normal study.' WHERE id = (SELECT min(id) FROM reports)")
    rid = con.execute("SELECT min(id) FROM reports").fetchone()[0]
    _rehash_report(con, rid)
    con.close()
    out = run_cli(tmp_path, "reports", "verify")
    assert out.returncode == 1 and f"report {rid}" in out.stdout, out.stdout
