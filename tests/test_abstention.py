"""One abstention shape: Ask AI, Guideline QA and Self-RAG all say "no answer" as core.contracts.Abstention.

Each feature's user-facing reason is pinned as it was before the shapes were merged.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select

from core.answer.service import ask_question
from core.contracts import Abstention, AskAnswer
from core.guideline.types import QAAbstention
from core.llm.factory import make_llm
from core.runtime import Runtime
from core.selfrag.factory import build_pipeline
from core.selfrag.retrieval import KBRetriever, StaticRetriever
from core.selfrag.types import Passage
from core.store.models import User
from tests.conftest import make_settings, scan_of
from tests.llm_server import FakeLLMServer
from tests.test_guideline_pipeline import qa_with


def test_ask_ai_abstains_with_the_shared_shape(fresh: Runtime) -> None:
    with fresh.db.read_only() as s:
        doctor = int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)
    res = ask_question(fresh, scan_of(fresh, "rahul.mehta"), "How should this be treated?", doctor)
    assert res.path == "fixed" and isinstance(res.answer, AskAnswer)
    assert res.abstention == Abstention(reason="treatment and management are out of scope", stage="router")
    assert res.reason == res.abstention.reason  # what the page and the audit row show, unchanged


def test_guideline_qa_abstains_with_the_shared_shape(tmp_path: Path) -> None:
    result = qa_with(make_settings(tmp_path), llm=None).answer("What is the capital of France?")
    assert isinstance(result, QAAbstention) and isinstance(result, Abstention)
    assert (result.answer, result.stage, result.route) == ("ABSTAIN", "router", "out_of_domain")
    assert result.model_dump(mode="json")["reason"] == result.reason and result.detail == ""


def test_selfrag_abstains_with_the_shared_shape(tmp_path: Path, llm_server: FakeLLMServer) -> None:
    llm_server.reply = "It depends on the patient."  # no option letter, no option text
    settings = make_settings(tmp_path, llm=llm_server.llm_overrides("openai"))
    retriever = KBRetriever(StaticRetriever([Passage("d", "a passage")]), ["static"], "hybrid")
    trace = build_pipeline(settings, llm=make_llm(settings), retriever=retriever).run(
        "Which drug?", {"A": "Isoniazid", "B": "Ceftriaxone"}, mode="no-retrieval"
    )
    assert trace.abstention == Abstention(
        reason="unparseable", stage="extraction", detail="no option letter or option text found in the answer"
    )
    assert trace.to_json()["abstention"] == {
        "reason": "unparseable",
        "stage": "extraction",
        "detail": "no option letter or option text found in the answer",
    }
