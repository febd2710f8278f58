"""The app shell: log-in, roles and navigation; and the Scan Review page, through Streamlit's AppTest."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import func, select

from core.cases import build_context_bundle
from core.runtime import Runtime
from core.settings import REPO_ROOT
from core.store.models import Report, ReportDraft
from tests.conftest import scan_of
from tests.llm_server import FakeLLMServer
from tests.test_app_support import page, shown, texts, use_root, user_of

ALL_PAGES = [
    "scan_review",
    "similar_cases",
    "patient_explorer",
    "report_draft",
    "guideline_qa",
    "evaluation",
    "settings_status",
]


@pytest.fixture()
def demo_env(demo_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_root(demo_root, monkeypatch)
    return demo_root


@pytest.fixture()
def fresh_env(fresh: Runtime, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """A private database the test may write to, used by the app too."""
    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    return fresh


def test_every_page_is_registered() -> None:
    source = (REPO_ROOT / "app.py").read_text()
    for name in ALL_PAGES:
        assert f"pages/{name}.py" in source and (REPO_ROOT / "pages" / f"{name}.py").is_file()


def test_logged_out_app_shows_only_the_login_form(demo_env: Path) -> None:
    at = page("app").run()
    assert not at.exception
    assert [t.label for t in at.text_input] == ["Username", "Password"]
    assert not at.chat_input and not at.sidebar.selectbox


def test_plain_streamlit_run_warns_once_that_the_cookie_is_not_httponly(
    demo_env: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    """Without serve.py the cookie is written by a page script and cannot be HttpOnly: app.py says so, once."""
    import logging

    import pages._shared as shared
    from core.session_grants import ENV_FLAG

    def warnings_after_two_runs() -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="casebook"):
            for _ in range(2):
                assert not page("app").run().exception
        return [r.getMessage() for r in caplog.records if r.name == "casebook"]

    monkeypatch.setattr(shared, "_COOKIE_WARNED", [])
    monkeypatch.delenv(ENV_FLAG, raising=False)
    assert warnings_after_two_runs() == [shared.COOKIE_WARNING]
    assert "make serve" in capfd.readouterr().err and "NOT HttpOnly" in shared.COOKIE_WARNING
    monkeypatch.setattr(shared, "_COOKIE_WARNED", [])
    monkeypatch.setenv(ENV_FLAG, "1")  # what serve.py sets: the /api/session route makes it HttpOnly
    assert warnings_after_two_runs() == []


def test_wrong_password_is_refused(demo_env: Path) -> None:
    at = page("app").run()
    at.text_input[0].input("dr.chen")
    at.text_input[1].input("not-the-password")
    at.button[0].click().run()
    assert "wrong password" in at.error[0].value
    assert "user" not in at.session_state


def test_repeated_wrong_passwords_lock_the_account(fresh: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    monkeypatch.setenv("CASEBOOK_UI__MAX_FAILED_LOGINS", "2")
    at = page("app").run()
    for password in ("guess-1", "guess-2", "casebook-demo"):
        at.text_input[0].input("dr.chen")
        at.text_input[1].input(password)
        at.button[0].click().run()
    assert not at.exception
    assert "Too many failed log-ins" in shown(at.error[0].value) and "user" not in at.session_state


def test_doctor_logs_in_and_gets_the_review_pages(demo_env: Path) -> None:
    at = page("app").run()
    at.text_input[0].input("dr.chen")
    at.text_input[1].input("casebook-demo")
    at.button[0].click().run()
    assert not at.exception
    assert at.session_state["user"].role == "doctor"
    assert "Dr. Sarah Chen" in shown(at.sidebar.markdown[0].value)
    # a doctor lands on the worklist (issue 29), critical AI readings first
    assert at.title[0].value == "Worklist" and "Tension pneumothorax" in texts(at) and not at.chat_input
    at.sidebar.button[0].click().run()  # log out
    assert "user" not in at.session_state and [t.label for t in at.text_input] == ["Username", "Password"]


def test_patient_sees_own_scans_and_no_chat(demo_env: Path, demo: Runtime) -> None:
    at = page("app", user_of(demo, "rahul.mehta")).run()
    assert not at.exception
    assert at.title[0].value == "My scans"
    assert not at.chat_input, "patients get no Ask AI"
    assert not [b for b in at.button if b.label in {"Generate draft", "Save draft", "Sign report"}]
    assert len(at.sidebar.selectbox) == 1 and len(at.sidebar.selectbox[0].options) == 3
    assert "No signed report" in texts(at)
    at.sidebar.selectbox[0].select_index(1).run()  # the 2025 scan has a signed report
    assert "Progressive emphysematous COPD" in texts(at) and not at.text_area  # shown read-only


def test_patient_cannot_open_another_patients_scan_by_url(demo_env: Path, demo: Runtime) -> None:
    at = page("scan_review", user_of(demo, "rahul.mehta"), scan_of(demo, "imran.khan")).run()
    assert not at.exception
    assert "not name a scan you can open" in texts(at)
    assert "Tension pneumothorax" not in texts(at)
    assert at.query_params["scan"] == scan_of(demo, "rahul.mehta")


@pytest.mark.parametrize("name", ALL_PAGES)
def test_every_page_shows_the_login_form_when_logged_out(demo_env: Path, name: str) -> None:
    at = page(name).run()
    assert not at.exception
    assert [t.label for t in at.text_input] == ["Username", "Password"]


def test_scan_review_shows_a_scan_and_its_similar_cases(demo_env: Path, demo: Runtime) -> None:
    at = page("scan_review", user_of(demo, "dr.chen"), scan_of(demo, "imran.khan")).run()
    assert not at.exception
    assert at.sidebar.selectbox[0].value == "Imran Khan"
    body = texts(at)
    assert "Tension pneumothorax" in body and "HC-" in body
    assert "draft for review" in body  # the visible draft notice
    assert len(at.get("progress")) == demo.settings.search.top_k
    assert "Imran" not in str(at.query_params["scan"])  # only the opaque id in the URL


def test_scan_review_empty_state_for_scan_without_embedding(demo_env: Path, demo: Runtime) -> None:
    at = page("scan_review", user_of(demo, "dr.chen"), scan_of(demo, "ewa.kowalska")).run()
    assert not at.exception
    assert any("No comparable cases" in w.value for w in at.warning)


def test_patient_search_filters_the_list(demo_env: Path, demo: Runtime) -> None:
    at = page("scan_review", user_of(demo, "dr.chen")).run()
    at.sidebar.text_input[0].input("mehta").run()
    assert at.sidebar.selectbox[0].options == ["Rahul Mehta"]
    assert len(at.sidebar.selectbox[1].options) == 3
    at.sidebar.text_input[0].input("nobody-by-this-name").run()
    assert "No patient matches" in at.sidebar.warning[0].value


def test_ask_ai_answers_with_citation_chips_and_a_badge(fresh_env: Runtime) -> None:
    at = page("scan_review", user_of(fresh_env, "dr.chen"), scan_of(fresh_env, "rahul.mehta")).run()
    at.chat_input[0].set_value("What happened to similar patients?").run()
    assert not at.exception
    chips = [b for b in at.button if (b.key or "").startswith("chip-")]
    assert chips and all(shown(b.label).startswith("HC-") for b in chips)
    assert "-badge[" in texts(at)
    chips[0].click().run()
    assert at.session_state["highlight_case"] == shown(chips[0].label)
    assert any(m.value.startswith("📌") for m in at.markdown)
    # the exchange is in the history on the next visit
    again = page("scan_review", user_of(fresh_env, "dr.chen"), scan_of(fresh_env, "rahul.mehta")).run()
    assert "What happened to similar patients?" in texts(again)


def test_ask_ai_abstains_with_a_banner(fresh_env: Runtime) -> None:
    at = page("scan_review", user_of(fresh_env, "dr.chen"), scan_of(fresh_env, "tomas.novak")).run()
    at.chat_input[0].set_value("What is the prognosis?").run()
    assert not at.exception
    assert any("The AI abstained" in w.value and "No comparable cases" in w.value for w in at.warning)


def test_ask_ai_rate_limit_says_when_to_retry(fresh: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    monkeypatch.setenv("CASEBOOK_ASK__RATE_LIMIT_PER_MINUTE", "1")
    at = page("scan_review", user_of(fresh, "dr.chen"), scan_of(fresh, "rahul.mehta")).run()
    at.chat_input[0].set_value("Is this severe?").run()
    at.chat_input[0].set_value("Is this severe?").run()
    assert any(e.value.startswith("Rate limited, retry in") for e in at.error)


def test_generate_save_and_sign_a_draft(fresh_env: Runtime) -> None:
    scan = scan_of(fresh_env, "rahul.mehta")
    at = page("scan_review", user_of(fresh_env, "dr.chen"), scan).run()
    at.button(key="generate-draft").click().run()
    assert "Unsaved draft" in texts(at)
    with fresh_env.db.read_only() as s:
        assert s.scalar(select(func.count()).select_from(ReportDraft)) == 0  # generating writes nothing
    impression = at.text_area(key=f"draft:{scan}:impression")
    impression.input(impression.value + " Reviewed by me.").run()
    sign = at.button(key=f"draft:{scan}:sign")
    assert sign.disabled, "an unsaved draft cannot be signed"
    at.button(key=f"draft:{scan}:save").click().run()
    assert "Saved draft #" in texts(at)
    assert at.button(key=f"draft:{scan}:sign").disabled, "signing needs the confirmation"
    at.checkbox(key=f"draft:{scan}:confirm").check().run()
    assert at.button(key=f"draft:{scan}:sign").disabled, "each AI-derived sentence is confirmed (or edited) first"
    confirms = [c.key for c in at.checkbox if str(c.key).startswith(f"draft:{scan}:ai:")]
    assert confirms, "the template's AI reading is listed for confirmation"
    for key in confirms:
        at.checkbox(key=key).check().run()
    at.button(key=f"draft:{scan}:sign").click().run()
    assert not at.exception
    assert "It is now read-only" in texts(at)
    with fresh_env.db.read_only() as s:
        report = s.scalars(select(Report).where(Report.scan_id == scan)).one()
        assert report.impression.endswith("Reviewed by me.") and report.signed_at is not None
        assert "AI reading, not verified" not in report.findings + report.impression
        assert "ATTESTATION: I, Dr. Sarah Chen" in report.recommendations
    assert not at.text_area, "the signed report is shown read-only"


def test_ask_ai_streams_a_language_model_answer(
    fresh_env: Runtime, llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in llm_server.llm_env("openai").items():
        monkeypatch.setenv(name, value)
    scan = scan_of(fresh_env, "rahul.mehta")
    ids = build_context_bundle(fresh_env, scan).case_ids
    llm_server.reply = f"Based on similar cases, {ids[0]} and {ids[1]} show COPD with emphysema."
    at = page("scan_review", user_of(fresh_env, "dr.chen"), scan).run()
    at.chat_input[0].set_value("What do similar cases show?").run()
    assert not at.exception
    assert any(shown(m.value) == llm_server.reply for m in at.markdown), "the guarded model answer is shown"
    assert [shown(b.label) for b in at.button if (b.key or "").startswith("chip-")] == ids[:2]
    assert llm_server.requests, "the configured backend was called"


def test_ask_ai_falls_back_when_the_model_is_unavailable(
    fresh_env: Runtime, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CASEBOOK_LLM__BACKEND", "llamacpp")
    monkeypatch.setenv("CASEBOOK_PATHS__MODEL_DIR", str(tmp_path / "no-models"))
    at = page("scan_review", user_of(fresh_env, "dr.chen"), scan_of(fresh_env, "rahul.mehta")).run()
    at.chat_input[0].set_value("What happened to similar patients?").run()
    assert not at.exception
    assert any("language model (llamacpp) is unavailable" in shown(w.value) for w in at.warning)
    assert [b for b in at.button if (b.key or "").startswith("chip-")], "the extractive answer still cites cases"

