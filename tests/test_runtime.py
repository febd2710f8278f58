"""The runtime builds each part once: Guideline QA, Ask AI and Self-RAG share one model, embedder and set of indexes.

Real parts throughout: the demo database and knowledge bases, the test embedder,
and a loopback OpenAI-compatible server whose API key comes from the secrets
the app passes (the key the Guideline QA page used to ignore).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import select

from core.answer.service import ask_question
from core.llm.base import LLM
from core.runtime import Runtime, api_keys_from, open_runtime
from core.selfrag.critic import JudgeCritic
from core.selfrag.generate import LLMGenerator
from core.selfrag.retrieval import KBRetriever
from core.store.models import User
from tests.conftest import make_settings, scan_of
from tests.llm_server import FakeLLMServer

KEY_ENV = "CASEBOOK_TEST_RUNTIME_KEY"


@pytest.fixture
def rt(demo_kb_root: Path, tmp_path: Path, llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """A runtime over a private copy of the demo database and knowledge bases (Ask AI writes its history)."""
    shutil.copytree(demo_kb_root / "data", tmp_path / "data")
    shutil.copytree(demo_kb_root / "indexes", tmp_path / "indexes", symlinks=True)
    monkeypatch.delenv(KEY_ENV, raising=False)  # the key can only come from the secrets
    llm = llm_server.llm_overrides("openai")
    llm["openai"]["api_key_env"] = KEY_ENV
    settings = make_settings(
        tmp_path,
        llm=llm,
        guideline={"writer": "llm"},
        selfrag={"corpus": ""},  # the knowledge bases, not ingested corpora
    )
    return open_runtime(settings, secrets={KEY_ENV: "from-secrets"})


def _keys(server: FakeLLMServer, start: int) -> set[str]:
    return {r.headers.get("authorization", "") for r in server.requests[start:]}


def test_guideline_qa_ask_ai_and_selfrag_share_one_model_embedder_and_indexes(
    rt: Runtime, llm_server: FakeLLMServer
) -> None:
    llm = rt.llm
    assert isinstance(llm, LLM) and rt.llm is llm

    # Guideline QA: the runtime's model (with the secret's key) and its knowledge bases
    qa = rt.guideline_qa
    assert qa.llm is llm and qa.retriever is rt.kb and rt.guideline_qa is qa
    before = len(llm_server.requests)
    qa.answer("What is the usual adult dose of isoniazid for tuberculosis?")
    assert len(llm_server.requests) > before and _keys(llm_server, before) == {"Bearer from-secrets"}

    # Self-RAG: the same model as critic and generator, the same knowledge-base object as retriever
    pipeline = rt.selfrag
    assert isinstance(pipeline.critic, JudgeCritic) and pipeline.critic.llm is llm
    assert isinstance(pipeline.generator, LLMGenerator) and pipeline.generator.llm is llm
    assert isinstance(pipeline.retriever, KBRetriever) and pipeline.retriever.search is rt.kb
    llm_server.reply = "A. because"
    before = len(llm_server.requests)
    trace = pipeline.run("Which drug treats tuberculosis?", {"A": "Isoniazid", "B": "Ceftriaxone"}, mode="always")
    assert trace.documents, "Self-RAG retrieved from the shared knowledge bases"
    assert _keys(llm_server, before) == {"Bearer from-secrets"}

    # one embedder and one set of open indexes behind both
    embedder = rt.embedder
    assert rt.kb.embedder is embedder
    guidelines = rt.kb.index("guidelines")
    qa.answer("Which antibiotics are recommended for outpatient community-acquired pneumonia?")
    pipeline.run("Which drug treats pneumonia?", {"A": "Amoxicillin", "B": "Isoniazid"}, mode="always")
    assert rt.kb.index("guidelines") is guidelines and rt.embedder is embedder

    # Ask AI: the page passes the runtime's model; its requests carry the same key
    with rt.db.read_only() as s:
        doctor = int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)
    before = len(llm_server.requests)
    ask_question(rt, scan_of(rt, "rahul.mehta"), "What do similar cases show?", doctor, rt.llm)
    assert len(llm_server.requests) > before and _keys(llm_server, before) == {"Bearer from-secrets"}
    assert rt.guard_lists.kb is rt.kb and rt.guard_lists.drugs()  # its guard reads the same indexes
    assert rt.kb.index("druglabels") is rt.kb.index("druglabels") and rt.embedder is embedder


def test_parts_are_lazy_and_built_once(tmp_path: Path) -> None:
    rt = Runtime(make_settings(tmp_path))
    assert not any(rt.built(name) for name in ("db", "case_search", "llm", "kb", "guideline_qa", "selfrag"))
    assert rt.llm is None  # the test preset's extractive backend
    assert rt.built("llm") and not rt.built("db")  # a knowledge-base command never opens the database
    assert rt.kb is rt.kb


def test_api_keys_and_the_remote_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_settings(tmp_path, llm={"backend": "groq"})
    groq, openai = settings.llm.groq.api_key_env, settings.llm.openai.api_key_env
    assert api_keys_from(settings, {groq: "k1", openai: ""}) == {"groq": "k1"}
    assert api_keys_from(settings, {}) == {} and api_keys_from(settings, None) == {}

    class NoSecretsFile(dict[str, str]):
        def get(self, key: str, default: object = None) -> str | None:  # type: ignore[override]
            raise FileNotFoundError("no secrets.toml")

    assert api_keys_from(settings, NoSecretsFile()) == {}

    monkeypatch.delenv(groq, raising=False)
    monkeypatch.delenv(openai, raising=False)
    local = make_settings(tmp_path, llm={"backend": "llamacpp"})
    assert Runtime(local).remote_backend is None and Runtime(local).remote_llm is None
    assert Runtime(local, api_keys={"openai": "k2"}).remote_backend == "openai"
    assert Runtime(settings, api_keys={"groq": "k1"}).remote_backend is None  # groq is the configured one
    monkeypatch.setenv(groq, "from-env")
    assert Runtime(local, api_keys={"openai": "k2"}).remote_backend == "groq"  # first in REMOTE_BACKENDS
