"""The one place that builds Casebook's parts: database, case search, model, embedder, indexes, pipelines.

    >>> rt = open_runtime(load_settings())
    >>> rt.guideline_qa.answer("What is the adult dose of isoniazid?")
    >>> rt.selfrag.run("Which drug ...?", {"A": "...", "B": "..."})

Every part is a lazy, cached property, built on first use and shared by every
feature that needs it: Guideline QA, Ask AI and Self-RAG use one language
model, one embedder and one set of open indexes (``tests/test_runtime.py``).
Pages keep one runtime per settings in ``st.cache_resource`` and build nothing
themselves; the CLI builds one per command. Nothing is created at import time.

:func:`open_runtime` owns the API-key lookup: a remote backend's key comes from
``secrets`` (the app passes Streamlit's) when set there, else the backend reads
the environment variable its ``llm.<backend>.api_key_env`` names.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar, overload

from core.settings import Settings, load_settings

if TYPE_CHECKING:
    from core.answer.guard_inputs import GuardLists
    from core.answer.kit import AskKit
    from core.cases.search import CaseSearch
    from core.embed import Embedder
    from core.guideline.pipeline import GuidelineQA
    from core.kb.base import KnowledgeBase
    from core.kb.corpus.serve import CorpusSearch
    from core.kb.lexicon import DrugLexicon
    from core.kb.protocols import Retriever
    from core.llm.base import LLM
    from core.selfrag.pipeline import SelfRagPipeline
    from core.store.db import Database

__all__ = ["REMOTE_BACKENDS", "Runtime", "api_keys_from", "open_runtime"]

T = TypeVar("T")
REMOTE_BACKENDS = ("groq", "openai")  # backends that take an API key, in the order drafts offer them


class _Part(Generic[T]):
    """A lazy part of :class:`Runtime`: built once under the runtime's lock, then the same object every time."""

    def __init__(self, build: Callable[[Runtime], T]) -> None:
        self.build = build
        self.name = build.__name__
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, obj: None, owner: type) -> _Part[T]: ...
    @overload
    def __get__(self, obj: Runtime, owner: type) -> T: ...
    def __get__(self, obj: Runtime | None, owner: type) -> _Part[T] | T:
        if obj is None:
            return self
        return obj._part(self.name, self.build)


class Runtime:
    """Settings and every shared part of one process, each built on first use.

    Construction builds nothing (the CLI's knowledge-base commands never open
    the database); :func:`open_runtime` opens the database and the case search
    at once, as the app and the case commands want. A part whose build raises
    (a model file missing) is tried again on the next access.
    """

    def __init__(self, settings: Settings, *, api_keys: Mapping[str, str] | None = None) -> None:
        self.settings = settings
        self._keys = dict(api_keys or {})  # remote backend -> API key (else the backend reads the environment)
        self._parts: dict[str, Any] = {}
        self._lock = threading.RLock()  # re-entrant: a pipeline's build asks for the model and the indexes

    def _part(self, name: str, build: Callable[[Runtime], T]) -> T:
        try:
            return self._parts[name]
        except KeyError:
            pass
        with self._lock:
            if name not in self._parts:
                self._parts[name] = build(self)
            return self._parts[name]

    def built(self, name: str) -> bool:
        """Whether part ``name`` has been built already (a page shows a spinner only while it builds)."""
        return name in self._parts

    @_Part
    def db(self) -> Database:
        """The database, migrated to the newest schema."""
        from core.store.db import Database

        s = self.settings
        db = Database(
            s.database_url,
            echo=s.store.echo_sql,
            busy_timeout_s=s.store.sqlite_busy_timeout_s,
            key_file=s.record_key_path,
        )
        db.migrate()
        return db

    @_Part
    def case_search(self) -> CaseSearch:
        """Similar-case search: FAISS over the case table, or pgvector on PostgreSQL (docs/POSTGRES.md)."""
        if self.db.engine.dialect.name == "postgresql":
            from core.cases.pgvector_search import PgVectorSearch

            return PgVectorSearch(self.settings, self.db)
        from core.cases.search import CaseSearch

        return CaseSearch(self.settings, self.db)

    @_Part
    def llm(self) -> LLM | None:
        """The configured language model (``None`` for the extractive backend); raises if it cannot be built."""
        from core.llm.factory import make_llm

        return make_llm(self.settings, api_key=self._keys.get(self.settings.llm.backend))

    @property
    def remote_backend(self) -> str | None:
        """The remote backend other than ``llm.backend`` with a key set (secrets or environment), if any.

        Report drafts offer it when the local model cannot finish in time here.
        """
        for backend in REMOTE_BACKENDS:
            env = _key_env(self.settings, backend)
            if backend != self.settings.llm.backend and (self._keys.get(backend) or os.environ.get(env)):
                return backend
        return None

    @_Part
    def remote_llm(self) -> LLM | None:
        """The :attr:`remote_backend` model (names are removed before any request leaves), or ``None``."""
        from core.llm.factory import make_llm

        backend = self.remote_backend
        if backend is None:
            return None
        llm = self.settings.llm.model_copy(update={"backend": backend})
        return make_llm(self.settings.model_copy(update={"llm": llm}), api_key=self._keys.get(backend))

    @property
    def embedder(self) -> Embedder:
        """The passage and query embedder ``embed`` selects: the knowledge bases', loaded on first use."""
        return self.kb.embedder

    @_Part
    def kb(self) -> KnowledgeBase:
        """The knowledge bases (guidelines, drug labels, document spaces); the embedder loads on the first search."""
        from core.kb.base import KnowledgeBase

        return KnowledgeBase(self.settings)

    @_Part
    def corpora(self) -> CorpusSearch:
        """The ingested corpora (opened on first search), for Guideline QA's mixed route and Self-RAG."""
        from core.kb.corpus.serve import CorpusSearch

        return CorpusSearch(self.settings)

    @_Part
    def lexicon(self) -> DrugLexicon:
        """The drug-label knowledge base's names (read once, as Guideline QA always did)."""
        return self.kb.drug_lexicon()

    @_Part
    def guard_lists(self) -> GuardLists:
        """The names and drug names the answer guard refuses (the drugs from the shared knowledge bases)."""
        from core.answer.guard_inputs import GuardLists

        return GuardLists(self.settings, self.kb)

    @_Part
    def ask_kit(self) -> AskKit:
        """What Ask AI and drafts receive: the database, case search, guard lists, settings, a condition lexicon
        built from the case store's own diagnoses, and the question reader (the shipped intent model over the
        shared embedder, which loads on the first question)."""
        from sqlalchemy import select

        from core.answer.intent_model import WORD_KIND_PATH, IntentModel
        from core.answer.kit import AskKit
        from core.answer.lexicon import ConditionLexicon
        from core.answer.outcome_concepts import OUTCOME_MODEL_PATH, OutcomeReader
        from core.answer.reader import QuestionReader
        from core.store.models import HistoricalCase

        with self.db.read_only() as s:
            diagnoses = tuple(s.scalars(select(HistoricalCase.diagnosis).distinct().order_by(HistoricalCase.diagnosis)))
        lexicon = ConditionLexicon(diagnoses)
        embed, model_id = (lambda texts: self.embedder.embed_queries(texts)), (lambda: self.embedder.model_id)
        outcomes = OutcomeReader(IntentModel.load(OUTCOME_MODEL_PATH), embed, model_id, self.settings.ask.outcome_read_min)
        reader = QuestionReader(
            lexicon,
            embed=lambda texts: self.embedder.embed_queries(texts),
            embed_model_id=lambda: self.embedder.model_id,
            model=IntentModel.load(),
            fallback_below=self.settings.ask.read_as_below,
            word_kind=IntentModel.load(WORD_KIND_PATH),
            outcomes=outcomes,
        )
        return AskKit(self.settings, self.db, self.case_search, self.guard_lists, lexicon, reader)

    @_Part
    def guideline_retriever(self) -> Retriever:
        """The knowledge bases, with ``guideline.mixed_corpora`` attached when that names any."""
        if not self.settings.guideline.mixed_corpora:
            return self.kb
        from core.kb.corpus.serve import WithCorpora

        return WithCorpora(self.kb, self.corpora)

    @_Part
    def guideline_qa(self) -> GuidelineQA:
        """Guideline QA over the shared indexes; the shared model writes when ``guideline.writer`` is ``llm``."""
        from core.guideline.pipeline import GuidelineQA
        from core.guideline.request_guard import RequestGuard

        cfg = self.settings.guideline
        llm = self.llm if cfg.writer == "llm" else None
        guard = RequestGuard(
            lambda texts: self.embedder.embed_queries(texts), lambda: self.embedder.model_id,
            self.settings.paths.resolve(cfg.request_guard_exemplars), cfg.request_guard_threshold, cfg.request_guard_c,
        ) if cfg.request_guard else None  # fmt: skip
        return GuidelineQA(self.settings, self.guideline_retriever, self.lexicon, llm=llm, guard=guard)

    @_Part
    def selfrag(self) -> SelfRagPipeline:
        """The self-reflective pipeline: the shared model as critic and generator, the shared indexes or corpora."""
        from core.selfrag.factory import build_pipeline, make_retriever, needs_llm

        s = self.settings
        llm = self.llm if needs_llm(s.selfrag) else None
        return build_pipeline(s, llm=llm, retriever=make_retriever(s, self.kb, self.corpora))


def _key_env(settings: Settings, backend: str) -> str:
    """The environment variable (and secret) name holding ``backend``'s API key."""
    return str(getattr(settings.llm, backend).api_key_env)


def api_keys_from(settings: Settings, secrets: Mapping[str, Any] | None) -> dict[str, str]:
    """The remote backends' API keys found in ``secrets`` (each under its ``llm.<backend>.api_key_env`` name)."""
    keys: dict[str, str] = {}
    if secrets is None:
        return keys
    for backend in REMOTE_BACKENDS:
        try:
            key = secrets.get(_key_env(settings, backend))
        except FileNotFoundError:  # Streamlit's secrets without a secrets file
            return {}
        if key:
            keys[backend] = str(key)
    return keys


def open_runtime(settings: Settings | None = None, secrets: Mapping[str, Any] | None = None) -> Runtime:
    """A runtime with its database open (migrated) and case search ready; ``secrets`` may hold API keys."""
    s = settings or load_settings()
    rt = Runtime(s, api_keys=api_keys_from(s, secrets))
    rt.case_search  # noqa: B018 - opened now, as before: its constructor pins the FAISS and BLAS threads
    return rt
