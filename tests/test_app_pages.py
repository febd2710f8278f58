"""AppTests of the pages besides Scan Review: Similar Cases, Patient Explorer, Report Draft, Status, later pages."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from sqlalchemy import select
from streamlit.testing.v1 import AppTest

from core.reports import AI_MARK, DraftText, save_draft, sign_draft
from core.runtime import Runtime
from core.store.models import Report
from tests.conftest import scan_of
from tests.llm_server import FakeLLMServer
from tests.test_app_support import page, texts, use_root, user_of


@pytest.fixture()
def demo_env(demo_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_root(demo_root, monkeypatch)
    return demo_root


@pytest.mark.parametrize("name", ["similar_cases", "patient_explorer", "report_draft", "settings_status"])
def test_doctor_pages_refuse_patients(demo_env: Path, demo: Runtime, name: str) -> None:
    at = page(name, user_of(demo, "rahul.mehta")).run()
    assert not at.exception
    assert "for doctors" in at.warning[0].value


def test_similar_cases_plots_and_filters(demo_env: Path, demo: Runtime) -> None:
    at = page("similar_cases", user_of(demo, "dr.chen"), scan_of(demo, "rahul.mehta")).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 2
    assert at.metric[0].value == "25 of 25"
    at.multiselect[0].select(at.multiselect[0].options[0]).run()
    shown = int(at.metric[0].value.split()[0])
    assert 0 < shown < 25
    at.slider(key="min-similarity").set_value(1.0).run()
    assert any("No case passes these filters" in w.value for w in at.warning)


def test_similar_cases_empty_state(demo_env: Path, demo: Runtime) -> None:
    at = page("similar_cases", user_of(demo, "dr.chen"), scan_of(demo, "ewa.kowalska")).run()
    assert not at.exception
    assert "No comparable cases" in at.warning[0].value and not at.get("plotly_chart")


def test_patient_explorer_heatmap_from_similar_case_evidence(demo_env: Path, demo: Runtime) -> None:
    at = page("patient_explorer", user_of(demo, "dr.chen"), scan_of(demo, "rahul.mehta")).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1
    assert "3 scan(s)" in texts(at)
    assert not at.chat_input  # no chat here
    grid = at.dataframe[0].value
    assert set(grid["anatomy"]) == {"lung"} and grid["evidence"].gt(0).all()


def test_patient_explorer_empty_state(demo_env: Path, demo: Runtime) -> None:
    at = page("patient_explorer", user_of(demo, "dr.chen"), scan_of(demo, "ewa.kowalska")).run()
    assert not at.exception
    assert "No similar-case evidence" in at.warning[0].value


def test_report_draft_lists_edits_signs_and_amends(fresh: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    doctor = user_of(fresh, "dr.chen")
    scan = scan_of(fresh, "imran.khan")
    draft_id = save_draft(
        fresh.db, scan, doctor.id, DraftText("Left apical pneumothorax.", "Tension pneumothorax.", "")
    )
    at = page("report_draft", doctor, scan).run()
    assert not at.exception
    assert f"Draft #{draft_id}" in texts(at) and "No signed report" in texts(at)
    at.button(key=f"open-{draft_id}").click().run()
    assert f"Saved draft #{draft_id}" in texts(at)
    at.text_area(key=f"draft:{scan}:findings").input("Large left pneumothorax with mediastinal shift.").run()
    assert f"Draft #{draft_id} · autosaved" in texts(at)  # the committed edit is kept as the unsigned draft
    at.button(key=f"draft:{scan}:save").click().run()
    at.checkbox(key=f"draft:{scan}:confirm").check().run()
    # a tension pneumothorax is a critical result: no signing before the communication record
    assert at.button(key=f"draft:{scan}:sign").disabled
    at.text_input(key=f"draft:{scan}:to").input("Dr. A. Osei, emergency registrar").run()
    at.checkbox(key=f"draft:{scan}:readback").check().run()
    at.button(key=f"draft:{scan}:sign").click().run()
    assert not at.exception and "Report #" in texts(at) and "version 1" in texts(at)
    report = sign_id = None
    with fresh.db.read_only() as s:
        report = s.scalars(select(Report).where(Report.scan_id == scan)).one()
        sign_id = report.id
    assert report.findings.startswith("Large left pneumothorax")
    assert "CRITICAL RESULT: communicated to Dr. A. Osei, emergency registrar by phone" in report.recommendations
    # the amendment starts from the signed text without its attestation, which stays with version 1
    assert "ATTESTATION" not in (at.text_area(key=f"amend-{sign_id}:recommendations").value or "")
    ai = f"Tension pneumothorax, decompressed ({AI_MARK})."  # pasted from an AI draft: it keeps its mark
    at.text_area(key=f"amend-{sign_id}:impression").input(ai).run()
    at.text_input(key=f"amend-{sign_id}:reason").input("Decompression recorded after signing.").run()
    at.checkbox(key=f"amend-{sign_id}:confirm").check().run()
    assert at.button(key=f"amend-{sign_id}:sign").disabled, "an AI-derived sentence is not yet confirmed"
    at.checkbox(key=f"amend-{sign_id}:ai:0").check().run()
    at.button(key=f"amend-{sign_id}:sign").click().run()
    assert not at.exception and "Signed amended report" in texts(at)
    with fresh.db.read_only() as s:
        v2 = s.scalars(select(Report).where(Report.supersedes_id == sign_id)).one()
    assert v2.impression == "Tension pneumothorax, decompressed." and v2.recommendations.count("ATTESTATION:") == 1
    assert "amending version 1) and sign it as my own. Its 1 AI-derived statement(s)" in v2.recommendations
    assert f"superseded by report #{sign_id + 1}" in texts(at) and "version 2" in texts(at)
    assert "Reason for this amendment: Decompression recorded after signing." in texts(at)



def test_amend_naming_a_new_critical_finding_asks_for_the_record(fresh: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    doctor = user_of(fresh, "dr.chen")
    scan = scan_of(fresh, "rahul.mehta")  # AI reading: COPD, not critical; signed with no record
    sign_id = sign_draft(fresh.db, save_draft(fresh.db, scan, doctor.id, DraftText("Emphysema.", "COPD.", "")), doctor.id)
    at = page("report_draft", doctor, scan).run()
    k = f"amend-{sign_id}"
    assert "record the communication" not in texts(at)
    at.text_input(key=f"{k}:reason").input("Missed finding.").run()
    at.checkbox(key=f"{k}:confirm").check().run()
    assert not at.button(key=f"{k}:sign").disabled and not [w for w in at.text_input if w.key == f"{k}:to"]
    # typed and signed in one go: the form had not asked yet, core refuses and the page says why
    at.text_area(key=f"{k}:findings").input("Emphysema. Large right pneumothorax.")
    at.button(key=f"{k}:sign").click().run()
    assert not at.exception
    assert "Could not amend: This amendment newly names a critical finding (pneumothorax)" in texts(at)
    with fresh.db.read_only() as s:
        assert s.scalars(select(Report).where(Report.supersedes_id == sign_id)).first() is None
    # now the form asks: the same record fields as at signing, and no signing before they are complete
    assert "newly named: pneumothorax" in texts(at) and at.button(key=f"{k}:sign").disabled
    at.text_input(key=f"{k}:to").input("Dr. B. Mensah, surgical registrar").run()
    assert at.button(key=f"{k}:sign").disabled, "not read back yet"
    at.checkbox(key=f"{k}:readback").check().run()
    at.button(key=f"{k}:sign").click().run()
    assert not at.exception and "Signed amended report" in texts(at)
    with fresh.db.read_only() as s:
        v2 = s.scalars(select(Report).where(Report.supersedes_id == sign_id)).one()
    assert "CRITICAL RESULT: communicated to Dr. B. Mensah, surgical registrar by phone" in v2.recommendations
    assert "CRITICAL RESULT: communicated to Dr. B. Mensah" in texts(at), "the record is shown on the amended report"

def test_report_draft_empty_state(demo_env: Path, demo: Runtime) -> None:
    at = page("report_draft", user_of(demo, "dr.chen"), scan_of(demo, "li.wei")).run()
    assert not at.exception
    assert "No saved drafts" in texts(at) and "No draft in progress" in texts(at)


def test_signed_draft_cannot_be_reopened(fresh: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    doctor = user_of(fresh, "dr.chen")
    scan = scan_of(fresh, "priya.nair")
    sign_draft(fresh.db, save_draft(fresh.db, scan, doctor.id, DraftText("f", "i", "r")), doctor.id)
    at = page("report_draft", doctor, scan).run()
    assert "signed as report #" in texts(at)
    assert not [b for b in at.button if (b.key or "").startswith("open-")]


def test_settings_status_shows_backends_models_and_index(demo_env: Path, demo: Runtime) -> None:
    at = page("settings_status", user_of(demo, "dr.chen")).run()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Language model"] == "extractive" and metrics["Cases"] == f"{demo.settings.demo.n_cases:,}"
    assert demo.case_search.index.version in texts(at)
    assert len(at.dataframe) == 3  # the model time budgets, Ask AI's guard pass rates, the model file row
    rates = at.dataframe[1].value  # the shipped model's measured rate (core/llm/models.json): instant only
    assert list(rates["pass rate"]) == ["62%"] and list(rates["Ask AI under auto"]) == ["instant only"]
    assert "`ask.model_answers` = auto" in texts(at)
    budgets = at.dataframe[0].value
    assert list(budgets["feature"]) == ["Ask AI", "Report drafts", "Guideline QA writer", "Self-RAG stage"]
    assert budgets["the model is stopped at (s)"][0] == min(demo.settings.ask.llm_budget_s, demo.settings.llm.timeout_s)
    assert at.button(key="rebuild-index").disabled, "rebuilding needs the confirmation"


def test_settings_status_shows_the_measured_speed_and_when(
    demo_env: Path, demo: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    from core.llm.budget import SPEED_FILE
    from core.llm.speed import SpeedMeter

    monkeypatch.setattr("core.llm.budget._METER", SpeedMeter())  # this process has not run the model
    at = page("settings_status", user_of(demo, "dr.chen")).run()
    assert any("no speed measured yet" in c.value for c in at.caption)
    path = demo.settings.paths.resolve(demo.settings.paths.data_dir) / SPEED_FILE
    measured = {"prompt_tps": 12.5, "gen_tps": 1.5, "threads": 2, "load": 7.5, "measured_at": time.time() - 600}
    path.write_text(json.dumps(measured | {"partial": True, "samples": 3}), encoding="utf-8")
    try:  # another process measured it: the page reads the persisted estimate
        monkeypatch.setattr("core.llm.budget._METER", SpeedMeter())
        at = page("settings_status", user_of(demo, "dr.chen")).run()
    finally:
        path.unlink()
    # the page shows the line through inert(): the Markdown escapes are not part of what a doctor reads
    line = next(v for c in at.caption if (v := re.sub(r"\\(.)", r"\1", c.value)).startswith("Local model speed"))
    assert "reads 12.5 tokens/s, writes 1.5 tokens/s at load average 7.5, measured 10 min ago" in line
    assert at.dataframe[0].value["typical call here (s)"][0] is not None  # the table uses it too


def test_settings_status_rebuilds_the_index(fresh: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    at = page("settings_status", user_of(fresh, "dr.chen")).run()
    at.checkbox(key="confirm-rebuild").check().run()
    at.button(key="rebuild-index").click().run()
    assert not at.exception
    assert "Index rebuilt" in at.success[0].value


# -- Guideline QA and Self-reflective RAG (over the demo knowledge bases) ---------------------------------
@pytest.fixture()
def kb_env(demo_kb_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    use_root(demo_kb_root, monkeypatch)
    monkeypatch.setenv("CASEBOOK_KB__PROGRESS", "false")
    return demo_kb_root


@pytest.mark.parametrize("name", ["guideline_qa", "evaluation"])
def test_knowledge_pages_refuse_patients(kb_env: Path, demo: Runtime, name: str) -> None:
    at = page(name, user_of(demo, "rahul.mehta")).run()
    assert not at.exception
    assert "for doctors" in at.warning[0].value


def _ask(at: AppTest, question: str, kb: str | None = None) -> AppTest:
    if kb is not None:
        at.selectbox(key="guideline-route").select(kb).run()
    at.text_area(key="guideline-question").input(question)
    at.button[0].click()  # the form's Ask button
    return at.run()


def test_guideline_qa_answers_with_snippets_and_sources(kb_env: Path, demo: Runtime) -> None:
    at = _ask(page("guideline_qa", user_of(demo, "dr.chen")).run(), "What is the usual adult dose of isoniazid?")
    assert not at.exception
    shown = texts(at)
    assert "Drug label" in str([b.proto for b in at.get("badge")]) or "Drug label" in shown
    assert "Source:" in shown and ":orange-background[" not in shown, shown[:2000]  # evidence behind a toggle
    at.toggle(key="guideline-evidence").set_value(True).run()
    assert ":orange-background[" in texts(at) and "demo" in texts(at)  # the evidence, and the demo mark
    metrics = {m.label: m.value for m in at.metric}
    assert int(metrics["Bullets"]) >= 1 and metrics["Written by"] == "extractive"


def test_guideline_qa_abstains_out_of_scope_and_on_empty_input(kb_env: Path, demo: Runtime) -> None:
    at = page("guideline_qa", user_of(demo, "dr.chen")).run()
    at.button[0].click().run()
    assert "Type a question first" in texts(at)
    at = _ask(at, "What is the best treatment for migraine headaches?")
    assert not at.exception
    assert "No answer (ABSTAIN)" in texts(at) and not [m for m in at.metric if m.label == "Bullets"]


def test_guideline_qa_knowledge_base_selector_restricts_the_route(kb_env: Path, demo: Runtime) -> None:
    at = _ask(page("guideline_qa", user_of(demo, "dr.chen")).run(), "What is the dose of isoniazid?", "Guidelines only")
    assert not at.exception
    route = at.session_state["guideline:result"].route
    assert route == "guideline"
    for bullet in getattr(at.session_state["guideline:result"], "bullets", []):
        assert bullet.evidence.kb == "guidelines"


def test_guideline_qa_search_tab_and_empty_user_kb(kb_env: Path, demo: Runtime) -> None:
    at = page("guideline_qa", user_of(demo, "dr.chen")).run()
    assert "You have no documents yet" in texts(at)  # pages/_mydocs.py empty state
    at.selectbox(key="kb-search-kb").select("druglabels").run()
    at.text_input(key="kb-search-q").input("rifampicin hepatotoxicity").run()
    assert not at.exception and "score" in texts(at)


def test_guideline_qa_without_knowledge_bases_says_how_to_build_them(
    fresh: Runtime, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = fresh.settings.paths.data_dir.parent
    for kb in (root / "indexes").glob("kb_*"):
        shutil.rmtree(kb) if kb.is_dir() and not kb.is_symlink() else kb.unlink()
    use_root(root, monkeypatch)
    at = page("guideline_qa", user_of(fresh, "dr.chen")).run()
    assert not at.exception
    assert "No guideline or drug-label knowledge base is built yet" in at.info[0].value


def test_selfrag_page_explains_it_needs_a_model(kb_env: Path, demo: Runtime) -> None:
    at = page("evaluation", user_of(demo, "dr.chen")).run()
    assert not at.exception
    assert "needs a language model" in at.info[0].value


def test_selfrag_page_shows_the_trace_and_runs_a_benchmark(
    kb_env: Path, demo: Runtime, llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One scripted reply: "B", with Yes/No and utility digits among the alternatives (as in test_selfrag_judge).
    llm_server.reply = "B"
    llm_server.token_probs = {"B": {"B": 0.5, "Yes": 0.2, "No": 0.05, "5": 0.2, "1": 0.05}}
    for name, value in llm_server.llm_env("openai", timeout_s=10.0).items():
        monkeypatch.setenv(name, value)
    at = page("evaluation", user_of(demo, "dr.chen")).run()
    at.text_area(key="selfrag-question").input("Which drug treats latent tuberculosis?")
    at.text_area(key="selfrag-options").input("A: Ceftriaxone\nB: Isoniazid")
    at.selectbox(key="selfrag-mode").select("always")
    at.button[0].click().run()
    assert not at.exception
    trace = at.session_state["selfrag:trace"]
    assert trace.letter == "B" and trace.decision.retrieve and trace.documents
    assert "Answer:** B" in texts(at) and at.get("plotly_chart")
    at.number_input(key="bench-limit").set_value(2).run()
    at.button(key="bench-run").click().run()
    assert not at.exception
    runs = at.session_state["selfrag:runs"]
    assert len(runs) == 2 and {r["mode"] for r in runs} == {"adaptive"}
    assert any(c.key == "bench-accuracy" for c in at.get("plotly_chart")) or len(at.get("plotly_chart")) >= 2
