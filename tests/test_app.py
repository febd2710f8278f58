"""The app shell and the Scan Review page, through Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.runtime import Runtime
from core.settings import REPO_ROOT
from tests.conftest import scan_of

PLACEHOLDERS = ["ask_ai", "report_draft", "guideline_qa", "evaluation", "patient_explorer"]


@pytest.fixture()
def demo_env(demo_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CASEBOOK_PRESET", "test")
    monkeypatch.setenv("CASEBOOK_PATHS__DATA_DIR", str(demo_root / "data"))
    monkeypatch.setenv("CASEBOOK_PATHS__INDEX_DIR", str(demo_root / "indexes"))
    return demo_root


def test_app_registers_every_page(demo_env: Path) -> None:
    at = AppTest.from_file(str(REPO_ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    source = (REPO_ROOT / "app.py").read_text()
    for page in [
        "scan_review",
        "similar_cases",
        "ask_ai",
        "report_draft",
        "guideline_qa",
        "evaluation",
        "settings_status",
        "patient_explorer",
    ]:
        assert f"pages/{page}.py" in source and (REPO_ROOT / "pages" / f"{page}.py").is_file()


def test_scan_review_shows_a_scan_and_its_similar_cases(demo_env: Path, demo: Runtime) -> None:
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "scan_review.py"), default_timeout=60)
    at.query_params["scan"] = scan_of(demo, "imran.khan")
    at.run()
    assert not at.exception
    assert at.selectbox[0].value == "Imran Khan"
    markdown = " ".join(m.value for m in at.markdown)
    assert "Tension pneumothorax" in markdown and "HC-" in markdown
    assert len([p for p in at.get("progress")]) == demo.settings.search.top_k


def test_scan_review_empty_state_for_scan_without_embedding(demo_env: Path, demo: Runtime) -> None:
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "scan_review.py"), default_timeout=60)
    at.query_params["scan"] = scan_of(demo, "ewa.kowalska")
    at.run()
    assert not at.exception
    assert any("No comparable cases" in w.value for w in at.warning)


def test_patient_search_filters_the_list(demo_env: Path) -> None:
    at = AppTest.from_file(str(REPO_ROOT / "pages" / "scan_review.py"), default_timeout=60).run()
    at.sidebar.text_input[0].input("mehta").run()
    assert at.sidebar.selectbox[0].options == ["Rahul Mehta"]
    assert len(at.sidebar.selectbox[1].options) == 3


@pytest.mark.parametrize("page", PLACEHOLDERS)
def test_pages_not_yet_built_say_so(demo_env: Path, page: str) -> None:
    at = AppTest.from_file(str(REPO_ROOT / "pages" / f"{page}.py"), default_timeout=60).run()
    assert not at.exception
    assert "Not yet available" in at.info[0].value
