"""Log-in against bcrypt hashes, the immutable current user, and who may see which scan."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import bcrypt
import pytest
from sqlalchemy import func, select, update

from core.auth import CurrentUser, authenticate, can_view_scan, visible_scans
from core.demo.patients import DEMO_PASSWORD, DEMO_PATIENTS
from core.errors import RateLimitedError
from core.runtime import Runtime
from core.store.models import LoginAttempt, Scan, User
from tests.conftest import scan_of


def _user(rt: Runtime, username: str) -> CurrentUser:
    with rt.db.read_only() as s:
        u = s.scalars(select(User).where(User.username == username)).one()
        return CurrentUser(u.id, "doctor" if u.role == "doctor" else "patient", u.display_name)


def test_doctor_and_patient_log_in_with_the_demo_password(fresh: Runtime) -> None:
    doctor = authenticate(fresh.db, "dr.chen", DEMO_PASSWORD)
    patient = authenticate(fresh.db, "  Rahul.Mehta ", DEMO_PASSWORD)
    assert doctor is not None and doctor.role == "doctor" and doctor.is_doctor
    assert doctor.display_name == "Dr. Sarah Chen"
    assert patient is not None and patient.role == "patient" and not patient.is_doctor


@pytest.mark.parametrize(
    ("username", "password"), [("dr.chen", "wrong"), ("dr.chen", ""), ("nobody", DEMO_PASSWORD), ("", "")]
)
def test_bad_credentials_give_none(fresh: Runtime, username: str, password: str) -> None:
    assert authenticate(fresh.db, username, password) is None


def test_repeated_failures_lock_the_account_for_the_window(fresh: Runtime) -> None:
    t0 = time.time()
    for _ in range(3):
        assert authenticate(fresh.db, "dr.chen", "guess", max_failures=3, window_s=60) is None
    with pytest.raises(RateLimitedError, match="Too many failed log-ins") as info:
        authenticate(fresh.db, "dr.chen", DEMO_PASSWORD, max_failures=3, window_s=60)  # even the right password
    assert 1 <= info.value.retry_after_s <= 60
    # other accounts are unaffected
    assert authenticate(fresh.db, "dr.hassan", DEMO_PASSWORD, max_failures=3, window_s=60) is not None
    # an unknown name locks exactly like a real one: the lock tells nobody which names exist
    for _ in range(3):
        assert authenticate(fresh.db, "nobody", "x", max_failures=3, window_s=60) is None
    with pytest.raises(RateLimitedError) as unknown:
        authenticate(fresh.db, "nobody", "x", max_failures=3, window_s=60)
    assert str(unknown.value).split(" in ")[0] == str(info.value).split(" in ")[0]
    # once the failures leave the window the right password works again (a 0.5 s window, 0.6 s later:
    # attempts cannot be aged by hand, migration 0007 lets only a pending attempt change)
    time.sleep(0.6)
    assert authenticate(fresh.db, "dr.chen", DEMO_PASSWORD, max_failures=3, window_s=0.5) is not None
    with fresh.db.read_only() as s:
        # dr.hassan's log-in above and this one (attempts are no longer aged by hand, so both are after t0)
        assert s.scalar(select(func.count()).where(LoginAttempt.status == "ok", LoginAttempt.at >= t0)) == 2


def test_a_success_does_not_erase_failures_in_the_window(fresh: Runtime) -> None:
    # a success racing a burst of guesses must not let another max_failures guesses through;
    # failures leave the count only by ageing out of the window
    for _ in range(2):
        authenticate(fresh.db, "dr.chen", "guess", max_failures=3, window_s=60)
    assert authenticate(fresh.db, "dr.chen", DEMO_PASSWORD, max_failures=3, window_s=60) is not None
    assert authenticate(fresh.db, "dr.chen", "guess", max_failures=3, window_s=60) is None
    with pytest.raises(RateLimitedError):
        authenticate(fresh.db, "dr.chen", DEMO_PASSWORD, max_failures=3, window_s=60)


def test_current_user_is_immutable() -> None:
    user = CurrentUser(1, "doctor", "Dr. Example")
    with pytest.raises(dataclasses.FrozenInstanceError):
        user.role = "patient"  # type: ignore[misc]


def test_users_without_or_with_a_broken_hash_cannot_log_in(fresh: Runtime) -> None:
    with fresh.db.session() as s:
        s.execute(update(User).where(User.username == "dr.chen").values(password_hash=None))
        s.execute(update(User).where(User.username == "dr.hassan").values(password_hash="not-a-bcrypt-hash"))
    assert authenticate(fresh.db, "dr.chen", DEMO_PASSWORD) is None
    assert authenticate(fresh.db, "dr.hassan", DEMO_PASSWORD) is None


def test_passwords_are_stored_hashed(demo: Runtime) -> None:
    with demo.db.read_only() as s:
        stored = s.scalars(select(User.password_hash)).all()
    assert all(h and h.startswith("$2") and DEMO_PASSWORD not in h for h in stored)
    assert bcrypt.checkpw(DEMO_PASSWORD.encode(), stored[0].encode())


def test_doctors_see_every_scan_patients_only_their_own(demo: Runtime) -> None:
    doctor = _user(demo, "dr.chen")
    patient = _user(demo, "rahul.mehta")
    assert doctor is not None and patient is not None
    all_scans = visible_scans(demo.db, doctor)
    assert len(all_scans) == sum(len(p.scans) for p in DEMO_PATIENTS)
    own = visible_scans(demo.db, patient)
    assert len(own) == 3 and {s.patient_id for s in own} == {patient.id}
    assert own[0].created_at > own[-1].created_at  # newest first
    with demo.db.read_only() as s:
        other = s.scalars(select(Scan.id).where(Scan.patient_id != patient.id)).first()
    assert other is not None
    assert can_view_scan(demo.db, doctor, other) and not can_view_scan(demo.db, patient, other)
    assert can_view_scan(demo.db, patient, scan_of(demo, "rahul.mehta"))
    assert not can_view_scan(demo.db, doctor, "scan_does_not_exist")


def test_auth_never_imports_streamlit() -> None:
    import core.auth
    import core.reports

    for module in (core.auth, core.reports):
        assert "streamlit" not in Path(module.__file__ or "").read_text()
