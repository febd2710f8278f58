"""AppTests of the PACS page: doctors only, not configured, an unreachable PACS, an empty study list and reports tab."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.runtime import Runtime
from tests.pacs_support import FakeEndpoint
from tests.test_app_support import page, texts, use_root, user_of


@pytest.fixture()
def demo_env(demo_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_root(demo_root, monkeypatch)
    return demo_root


def test_patients_are_refused(demo_env: Path, demo: Runtime) -> None:
    at = page("pacs", user_of(demo, "rahul.mehta")).run()
    assert not at.exception and "for doctors" in at.warning[0].value


def test_without_a_pacs_it_says_how_to_configure_one(demo_env: Path, demo: Runtime) -> None:
    at = page("pacs", user_of(demo, "dr.chen")).run()
    assert not at.exception and "No PACS is configured" in at.info[0].value


def test_an_unreachable_pacs_is_a_typed_error_with_its_hint(
    demo_env: Path, demo: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASEBOOK_PACS__URL", "http://127.0.0.1:9/dicom-web")
    monkeypatch.setenv("CASEBOOK_PACS__RETRIES", "1")
    at = page("pacs", user_of(demo, "dr.chen")).run()
    at.text_input[1].input("PID1")
    at.button[0].click().run()
    assert not at.exception
    shown = texts(at)
    assert "The PACS search failed" in shown and "is unreachable" in shown and "Check pacs.url" in shown


def test_an_empty_study_list_and_no_reports_yet(demo_env: Path, demo: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeEndpoint()
    try:
        monkeypatch.setenv("CASEBOOK_PACS__URL", f"{fake.root}/dicom-web")
        at = page("pacs", user_of(demo, "dr.chen")).run()
        at.button[0].click().run()
        assert not at.exception
        shown = texts(at)
        assert "Studies found: 0" in at.subheader[0].value
        assert "No signed report of a study imported from the PACS yet." in shown
        assert fake.gets == 1
    finally:
        fake.close()
