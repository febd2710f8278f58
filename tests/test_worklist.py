"""The worklist: status, priority (critical first, then the oldest), filters, search, next/previous."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.errors import AccessDeniedError
from core.reports import DraftText, save_draft, sign_draft
from core.runtime import Runtime, open_runtime
from core.worklist import is_critical, neighbours, worklist
from tests.conftest import make_settings, scan_of
from tests.test_app_support import page, texts, use_root, user_of

CRITICAL = ("tension pneumothorax", "pneumothorax", "ischemic stroke")


@pytest.fixture()
def rt(demo_root: Path, tmp_path: Path) -> Runtime:
    shutil.copytree(demo_root / "data", tmp_path / "data")
    shutil.copytree(demo_root / "indexes", tmp_path / "indexes", symlinks=True)
    return open_runtime(make_settings(tmp_path))


def test_status_priority_filters_and_search(rt: Runtime) -> None:
    doctor = user_of(rt, "dr.chen")
    items = worklist(rt.db, doctor, CRITICAL)
    assert {i.status for i in items} == {"unread", "signed"}  # the demo signed some earlier scans
    first_signed = next(k for k, i in enumerate(items) if i.status == "signed")
    assert all(i.status == "signed" for i in items[first_signed:]), "signed studies come last"
    items = items[:first_signed]
    crit = [i for i in items if i.critical]
    assert {i.diagnosis for i in crit} == {"Tension pneumothorax", "Ischemic stroke"}
    assert items[: len(crit)] == crit, "critical AI readings come first"
    rest = items[len(crit) :]
    assert [i.created_at for i in rest] == sorted(i.created_at for i in rest), "then the oldest study"
    # a saved draft and a signed report change the status; a signed study drops to the end
    copd = scan_of(rt, "rahul.mehta")
    draft_id = save_draft(rt.db, copd, doctor.id, DraftText("Emphysema, upper zones.", "COPD.", ""))
    assert next(i for i in worklist(rt.db, doctor, CRITICAL) if i.scan_id == copd).status == "draft"
    sign_draft(rt.db, draft_id, doctor.id)
    signed = worklist(rt.db, doctor, CRITICAL, status=["signed"])
    assert copd in {i.scan_id for i in signed} and {i.status for i in signed} == {"signed"}
    assert copd not in {i.scan_id for i in worklist(rt.db, doctor, CRITICAL, status=["unread", "draft"])}
    assert {i.anatomy for i in worklist(rt.db, doctor, CRITICAL, anatomy=["brain"])} == {"brain"}
    critical_only = worklist(rt.db, doctor, CRITICAL, critical_only=True)
    assert {i.diagnosis for i in critical_only} == {"Tension pneumothorax", "Ischemic stroke"}
    assert {i.patient for i in worklist(rt.db, doctor, CRITICAL, query="MEHTA")} == {"Rahul Mehta"}
    assert worklist(rt.db, doctor, CRITICAL, query="no such patient") == []
    with pytest.raises(AccessDeniedError):
        worklist(rt.db, user_of(rt, "rahul.mehta"), CRITICAL)


def test_critical_match_and_neighbours() -> None:
    assert is_critical("Tension pneumothorax", CRITICAL) and not is_critical("COPD with emphysema", CRITICAL)
    assert not is_critical("anything", ["", "  "])
    ids = ["a", "b", "c"]
    assert neighbours(ids, "a") == (None, "b") and neighbours(ids, "b") == ("a", "c")
    assert neighbours(ids, "c") == ("b", None) and neighbours(ids, "x") == (None, "a")
    assert neighbours([], "x") == (None, None)


def test_worklist_page_lists_critical_first_and_links_each_study(
    demo_root: Path, demo: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    use_root(demo_root, monkeypatch)
    at = page("app", user_of(demo, "dr.chen"))  # log-in lands on the worklist
    at.run()
    assert not at.exception
    shown = texts(at)
    assert shown.index("Imran Khan") < shown.index("Rahul Mehta"), "the tension pneumothorax is first"
    at.toggle(key="wl-critical").set_value(True).run()
    assert "Imran Khan" in texts(at) and "Rahul Mehta" not in texts(at)
    at.toggle(key="wl-critical").set_value(False).run()
    at.text_input(key="wl-query").set_value("mehta").run()
    assert "Rahul Mehta" in texts(at) and "Imran Khan" not in texts(at)
    patient = page("worklist", user_of(demo, "rahul.mehta"))
    patient.run()
    assert "This page is for doctors." in texts(patient)
    home = page("app", user_of(demo, "rahul.mehta"))
    home.run()
    assert not home.exception and "Lung scan" in texts(home), "a patient still lands on their own scans"
