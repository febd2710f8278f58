"""Ask AI question understanding, computed facts, the doctor-question targets and chat history that holds."""

from __future__ import annotations

import json
import re

import pytest
from sqlalchemy import select

from core.answer.compose import OUT_OF_SCOPE, is_pointer
from core.answer.facts import bundle_facts
from core.answer.records import PENDING_ANSWER, begin_exchange, complete_exchange, history
from core.answer.service import ask_question, stream_answer
from core.answer.understand import EVENTS, understand
from core.askeval.doctor_set import TARGETS, load_questions, required_facts, run_eval, summarise
from core.contracts import (
    INSUFFICIENT_DATA,
    NO_COMPARABLE_CASES,
    AskAnswer,
    BundleResult,
    ContextBundle,
    CurrentScan,
    PatientContextOut,
    SimilarCaseBrief,
)
from core.errors import ConflictError
from core.llm.factory import make_llm
from core.runtime import Runtime, open_runtime
from core.settings import REPO_ROOT
from core.store.models import User
from tests.conftest import make_settings, run_cli, scan_of
from tests.llm_server import FakeLLMServer

QUESTIONS = REPO_ROOT / "tests" / "data" / "doctor_questions.json"


def _doctor(rt: Runtime) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)


@pytest.mark.parametrize(
    "question, intent",
    [
        ("f/u outcomes for similar pts?", "outcomes"),
        ("how mnay of the simillar cases were admitted", "count"),
        ("c/w prior?", "prior"),
        ("Is this getting worse compared with before?", "prior"),
        ("ddx?", "differential"),
        ("wich of the matchs were critcal", "severity"),
        ("Should we be worried about a pneumothorax?", "severity"),
        ("which abx should we start?", "treatment"),
        ("Tx recs for this pt?", "treatment"),
        ("What do published trials say about tamoxifen here?", "treatment"),
        ("what does the literature say about HCC?", "general_knowledge"),
        ("wil the patient get better", "prediction"),
        ("wy are these cases simillar", "why_similar"),
        ("Summarise the clinical course of the matched cases.", "outcomes"),
        ("any ICU admissions among the comparables?", "count"),
        ("appendix perforated?", "count"),
        ("new enhancing lesions vs last MRI?", "prior"),
        ("what is a tension pneumothorax?", "general_knowledge"),
        ("any relevant medical history in the similar cases?", "summary"),  # "medical" is not "medication"
    ],
)
def test_intents_survive_shorthand_and_typos(question: str, intent: str) -> None:
    assert understand(question).intent == intent


def test_entities_abbreviations_typos_and_unknown_conditions() -> None:
    assert [e.name for e in understand("could this be PE?").entities] == ["Pulmonary embolism"]
    assert understand("could this be pe?").entities == ()  # 'pe' in lower case is too ambiguous to count
    assert [e.name for e in understand("any gliobastoma in the simlar cases").entities] == ["Glioblastoma"]
    assert [e.name for e in understand("r/o pleural efusion?").entities] == ["Pleural effusion"]
    assert [e.name for e in understand("Is this the PTX getting worse?").entities] == ["Pneumothorax"]
    assert understand("Is there evidence of ankylosing spondylitis?").unknown == ("ankylosing spondylitis",)
    assert understand("Is this consistent with Zorblax syndrome?").unknown == ("zorblax syndrome",)
    assert understand("What is the prognossis?").unknown == ()
    assert understand("has the disease progressed since the previous MRI?").unknown == ()
    assert [e.name for e in understand("any empyema in the similar ones?").entities] == ["Empyema"]  # not emphysema
    assert [e.name for e in understand("how many had mets").entities] == ["Metastasis"]
    admission = understand("how many needed admission?").event
    assert admission is not None and admission.name == "admission"


def test_measurements_and_grades_the_evidence_never_records(demo: Runtime) -> None:
    from core.answer.service import answer_readonly

    assert understand("BI-RADS category?").attributes == (("BI-RADS category", "bi-rads"),)
    assert understand("is this a big ptx").attributes == (("Size or measurement", "measur"),)
    _, res = answer_readonly(demo, scan_of(demo, "ananya.iyer"), "BI-RADS category?")
    assert res.answer.answer == INSUFFICIENT_DATA and res.reason is not None
    assert res.reason.startswith("BI-RADS category is not recorded in the evidence of these 5 cases")
    # the prior report of the MS patient does say "No enhancement.": that is evidence, so it is answered
    _, prior = answer_readonly(demo, scan_of(demo, "hannah.schmidt"), "new enhancing lesions vs last MRI?")
    assert prior.intent == "prior" and "2026-10-19" in prior.answer.answer


def _result(outcomes: list[str], severities: list[str]) -> BundleResult:
    bundle = ContextBundle(
        currentScan=CurrentScan(anatomy="breast", diagnosis="Invasive ductal carcinoma", confidence=0.8),
        patientContext=PatientContextOut(),
        similarCases=[
            SimilarCaseBrief(diagnosis="Invasive ductal carcinoma", outcome=o, similarity=0.9) for o in outcomes
        ],
        priorReports=[],
    )
    return BundleResult(
        bundle=bundle, case_ids=[f"HC-{i:05d}" for i in range(len(outcomes))], severities=list(severities)
    )


def test_counts_are_computed_from_the_cited_outcomes() -> None:
    facts = bundle_facts(
        _result(
            ["Distant recurrence at 3 years", "No recurrence at 5 years", "Local recurrence at 3 years", "Died"],
            ["high", "moderate", "high", "critical"],
        ),
        max_cases=3,
    )
    recurrence = next(e for e in EVENTS if e.name == "recurrence")
    count = facts.count(recurrence)
    assert count.positive == ("HC-00000", "HC-00002") and count.negative == ("HC-00001",) and count.total == 3
    admission = facts.count(next(e for e in EVENTS if e.name == "admission"))
    assert not admission.recorded  # never "0 of 3": the outcomes do not record admission at all
    assert [s for s, _ in facts.by_severity()] == ["high", "moderate"]  # only the 3 cited cases
    assert required_facts({"count": {"keyword": "recurrence"}}, ["Distant recurrence", "No recurrence"], []) == [
        "1 of 2"
    ]


def test_count_answer_states_the_computed_number(demo: Runtime) -> None:
    from core.answer.service import answer_readonly

    sid = scan_of(demo, "priya.nair")
    _, res = answer_readonly(demo, sid, "How did similar patients with this pneumonia pattern do?")
    assert res.intent == "outcomes" and res.answer.citedCaseIds
    result, counted = answer_readonly(demo, sid, "how many needed admission?")
    assert result.bundle is not None and counted.intent == "count"
    # the look-alikes come from pixels: whether their outcomes record admission is the data's to say
    need = required_facts({"count": {"keyword": "admission"}}, [c.outcome for c in result.bundle.similarCases[:5]], [])
    text = counted.answer.answer + (counted.reason or "")
    if need == ["not recorded"]:
        assert "Admission is not recorded in the evidence of these 5 cases" in text
    else:
        assert f"{need[0]} similar cases record admission" in text


def test_absent_condition_reason_is_one_sentence(demo: Runtime) -> None:
    from core.answer.service import answer_readonly

    _, res = answer_readonly(demo, scan_of(demo, "priya.nair"), "Should we be worried about a pneumothorax?")
    assert res.answer.answer == INSUFFICIENT_DATA and res.reason is not None
    assert res.reason.startswith("Pneumothorax is not recorded in the evidence of these 5 cases")
    assert res.reason.count(".") == 1
    _, present = answer_readonly(demo, scan_of(demo, "rahul.mehta"), "Should we be worried about a pneumothorax?")
    assert present.path == "extractive" and "No pneumothorax." in present.answer.answer


def test_treatment_points_to_guideline_qa_saying_what_it_covers(demo: Runtime) -> None:
    from core.answer.service import answer_readonly

    q = "Which antibiotic and dose should we start?"
    _, res = answer_readonly(demo, scan_of(demo, "priya.nair"), q)  # pneumonia: Guideline QA covers it
    assert is_pointer(res.answer.answer) and res.answer.citedCaseIds == [] and res.intent == "treatment"
    assert res.guideline_question == q and "tuberculosis and community-acquired pneumonia" in res.answer.answer
    _, other = answer_readonly(demo, scan_of(demo, "maria.gonzalez"), "What dose of alteplase is appropriate?")
    assert is_pointer(other.answer.answer) and other.guideline_question is None  # stroke: nothing here covers it
    assert "no source in Casebook covers this question" in other.answer.answer
    # a scan with no comparable cases fails closed first, whatever is asked (issue 23's outside set)
    _, closed = answer_readonly(demo, scan_of(demo, "ewa.kowalska"), q)
    assert closed.answer.answer == NO_COMPARABLE_CASES


def test_doctor_question_targets_hold_on_both_splits(demo: Runtime) -> None:
    items = load_questions(QUESTIONS)
    results = run_eval(demo, items)
    for split in ("train", "test"):
        m = summarise([r for r in results if r.split == split])
        assert m["answer_rate"] >= TARGETS["answer_rate"], (split, m)
        assert m["handled_rate"] >= TARGETS["handled_rate"], (split, m)
        assert m["invalid_citations"] == 0 and m["numbers_not_in_evidence"] == 0, (split, m)


def test_question_set_shape() -> None:
    data = json.loads(QUESTIONS.read_text())
    items = data["items"]
    assert len(items) >= 240 and len({i["anatomy"] for i in items}) == 8
    assert len({(i["user"], i["scan"]) for i in items}) >= 15
    test = [i for i in items if i["split"] == "test"]
    assert abs(len(test) / len(items) - 0.3) < 0.01
    for intent in {i["intent"] for i in items} - {"absent_condition"}:
        styles = {i["style"] for i in items if i["intent"] == intent}
        assert len({i["question"] for i in items if i["intent"] == intent}) >= 4
        assert {"colloquial", "terse", "misspelt", "abbreviated"} <= styles or intent in {"treatment"}, intent


# -- chat history ---------------------------------------------------------------
def test_question_is_stored_at_submission_and_a_second_is_refused(fresh: Runtime) -> None:
    sid, doc = scan_of(fresh, "li.wei"), _doctor(fresh)
    pending = begin_exchange(fresh.db, sid, doc, "First question?", stale_after_s=60)
    msgs = history(fresh.db, sid, doc)
    assert [m["content"] for m in msgs] == ["First question?", PENDING_ANSWER] and msgs[1]["pending"]
    with pytest.raises(ConflictError) as err:
        ask_question(fresh, sid, "Second question?", doc)
    assert "Wait for the answer" in err.value.hint
    complete_exchange(fresh.db, pending, AskAnswer(answer="First answer.", citedCaseIds=[], confidence="low"))
    ask_question(fresh, sid, "What is the prognosis?", doc)
    msgs = history(fresh.db, sid, doc)
    assert [m["content"] for m in msgs][:3] == ["First question?", "First answer.", "What is the prognosis?"]
    assert not any(m["pending"] for m in msgs)


def test_an_abandoned_pending_answer_does_not_block_forever(fresh: Runtime) -> None:
    sid, doc = scan_of(fresh, "li.wei"), _doctor(fresh)
    begin_exchange(fresh.db, sid, doc, "Lost question?", stale_after_s=60)
    begin_exchange(fresh.db, sid, doc, "Next question?", stale_after_s=0)  # stale at once: allowed
    assert [m["content"] for m in history(fresh.db, sid, doc)][::2] == ["Lost question?", "Next question?"]


def test_streamed_question_is_in_history_before_the_answer(fresh: Runtime) -> None:
    sid, doc = scan_of(fresh, "li.wei"), _doctor(fresh)
    events = stream_answer(fresh, sid, "What is the prognosis?", doc)
    first = next(events)
    assert first.kind == "instant"
    assert history(fresh.db, sid, doc)[-1]["pending"]  # stored at submission, answer still pending
    list(events)
    last = history(fresh.db, sid, doc)[-1]
    assert not last["pending"] and last["citedCaseIds"]


def test_cli_ask_json_adds_intent(fresh: Runtime) -> None:
    root = fresh.settings.paths.data_dir.parent
    proc = run_cli(root, "ask", scan_of(fresh, "imran.khan"), "how many died?", "--extractive", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {"answer", "citedCaseIds", "confidence", "intent"} <= set(out) and out["intent"] == "count"


def test_the_model_is_given_the_computed_facts_without_dates(fresh: Runtime, llm_server: FakeLLMServer) -> None:
    rt = open_runtime(make_settings(fresh.settings.paths.data_dir.parent, llm=llm_server.llm_overrides("openai")))
    sid = scan_of(rt, "rahul.mehta")
    llm_server.reply = "Insufficient data to answer this question based on available cases."
    res = ask_question(rt, sid, "Is this getting worse compared with before?", _doctor(rt), make_llm(rt.settings))
    assert res.path == "extractive" and "2025-11-07" in res.answer.answer  # the doctor sees the dated answer
    sent = llm_server.requests[-1].text()
    assert "FACTS:" in sent  # each prior's signing date is sent as its interval before this scan
    assert re.search(r"Compared with the signed prior report signed \d+ days? before this scan", sent), sent
    assert "2025-11-07" not in sent and "2024-11-12" not in sent


def test_a_stream_left_early_still_answers_the_question(fresh: Runtime, llm_server: FakeLLMServer) -> None:
    rt = open_runtime(make_settings(fresh.settings.paths.data_dir.parent, llm=llm_server.llm_overrides("openai")))
    sid, doc = scan_of(rt, "li.wei"), _doctor(rt)
    events = stream_answer(rt, sid, "What is the prognosis?", doc, make_llm(rt.settings))
    assert next(events).kind == "instant" and history(rt.db, sid, doc)[-1]["pending"]
    events.close()  # what a page rerun does to the generator while the model writes
    last = history(rt.db, sid, doc)[-1]
    assert not last["pending"] and last["citedCaseIds"]  # the instant answer stands, the question is answered
    ask_question(rt, sid, "How severe were the similar cases?", doc)  # and the next question is accepted
    assert [m["role"] for m in history(rt.db, sid, doc)] == ["user", "assistant"] * 2


def test_chat_points_a_treatment_question_to_guideline_qa(fresh: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_app_support import page, texts, use_root, user_of

    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    at = page("scan_review", user_of(fresh, "dr.chen"), scan_of(fresh, "priya.nair")).run()
    at.chat_input[0].set_value("Which antibiotic should we start?").run()
    assert not at.exception
    assert OUT_OF_SCOPE.split(". ")[0] in texts(at)
    assert not [b for b in at.button if (b.key or "").startswith("chip-")], "no case is cited"
    link = [b for b in at.button if (b.key or "").startswith("to-guidelines-")]
    assert link and link[0].label == "Ask Guideline QA instead"
    link[0].click().run()
    assert at.session_state["guideline-question"] == "Which antibiotic should we start?"
