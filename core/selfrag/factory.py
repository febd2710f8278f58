"""Build the pipeline's parts from settings; anything passed in is used as is (tests pass small real ones).

Corpus retrievers register here by name (:func:`register_corpus`), so a
PubMed-style corpus attached later plugs in through the same
:class:`~core.kb.protocols.Retriever` protocol as the knowledge bases.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from core.errors import ConfigError
from core.llm.budget import feature_budget
from core.selfrag.critic import Critic, JudgeCritic, LLMReflectionCritic
from core.selfrag.generate import Generator, LLMGenerator
from core.selfrag.pipeline import SelfRagPipeline
from core.selfrag.retrieval import KBRetriever

if TYPE_CHECKING:
    from core.kb.protocols import Retriever
    from core.llm.base import LLM
    from core.selfrag.native import ReflectionModel
    from core.settings import Settings

__all__ = ["build_pipeline", "load_reflection_model", "make_retriever", "register_corpus"]

CorpusFactory = Callable[["Settings"], "Retriever"]
_CORPORA: dict[str, CorpusFactory] = {}


def register_corpus(name: str, factory: CorpusFactory) -> None:
    """Make ``selfrag.corpus = name`` search ``factory(settings)`` (its knowledge base ``name``, in ``selfrag.search_mode``)."""
    _CORPORA[name] = factory


def make_retriever(settings: Settings) -> KBRetriever:
    """The retriever ``selfrag.corpus`` names (see its description); the knowledge bases otherwise.

    ``auto`` picks every ingested corpus when there is one; a name registered
    with :func:`register_corpus` wins over ingested ones; ``A+B`` is fused by RRF.
    """
    s = settings.selfrag
    if s.corpus:
        from core.kb.corpus.layout import corpus_names
        from core.kb.corpus.serve import CorpusSearch

        ingested = corpus_names(settings.paths.resolve(settings.paths.index_dir))
        if s.corpus == "auto":
            if ingested:
                return KBRetriever(CorpusSearch(settings), [f"corpus:{'+'.join(ingested)}"], "dense")
        elif s.corpus in _CORPORA:
            return KBRetriever(_CORPORA[s.corpus](settings), [s.corpus], s.search_mode)
        elif set(s.corpus.split("+")) <= set(ingested):
            return KBRetriever(CorpusSearch(settings), [f"corpus:{s.corpus}"], "dense")
        else:
            known = ", ".join(sorted(_CORPORA)) or "none registered"
            raise ConfigError(
                f"Unknown selfrag.corpus {s.corpus!r} (known: {known}; ingested: {', '.join(ingested) or 'none'})"
            )
    from core.kb import HybridRetriever

    return KBRetriever(HybridRetriever(settings), s.kbs, s.search_mode)


def load_reflection_model(settings: Settings) -> ReflectionModel:
    """The reflection-token model in ``selfrag.native_model_path``."""
    from core.selfrag.native import ReflectionModel

    path = settings.selfrag.native_model_path
    if path is None:
        raise ConfigError("selfrag.native_model_path is required for the native critic or generator")
    return ReflectionModel(settings.paths.resolve(path), settings.selfrag, settings.llm.seed)


def _llm(settings: Settings, llm: LLM | None) -> LLM:
    if llm is not None:
        return llm
    from core.llm.factory import make_llm

    made = make_llm(settings)
    if made is None:
        raise ConfigError(
            "Self-reflective RAG needs a language model; llm.backend is 'extractive'",
            hint="Set llm.backend (llamacpp is the local default) or selfrag.critic/generator to native.",
        )
    return made


def build_pipeline(
    settings: Settings,
    *,
    llm: LLM | None = None,
    retriever: KBRetriever | None = None,
    critic: Critic | None = None,
    generator: Generator | None = None,
) -> SelfRagPipeline:
    """A pipeline with every part not passed in built from ``settings``."""
    s = settings.selfrag
    native: ReflectionModel | None = None
    if (critic is None and s.critic != "native") or (generator is None and s.generator == "llm"):
        llm = _llm(settings, llm)  # one model for critic and generator
    if critic is None:
        if s.critic == "native":
            from core.selfrag.native import NativeCritic

            native = load_reflection_model(settings)
            critic = NativeCritic(native)
        elif s.critic == "native-llm":
            critic = LLMReflectionCritic(_llm(settings, llm), s)
        else:
            critic = JudgeCritic(_llm(settings, llm), s)
    if generator is None:
        if s.generator == "native":
            generator = native or load_reflection_model(settings)
        else:
            generator = LLMGenerator(
                _llm(settings, llm), chat=s.generator_chat, budget_s=feature_budget(settings, "selfrag")
            )
    return SelfRagPipeline(s, critic, generator, retriever if retriever is not None else make_retriever(settings))
