"""Compose the pipeline from parts passed in; :mod:`core.runtime` builds the shared ones (model, indexes).

``selfrag.corpus`` picks the retriever (:func:`make_retriever`): the knowledge
bases, ingested corpora by name, or a ``package.module:ClassName`` import path
(:mod:`core.plugins`, the hook the model and embedder factories end with), so a
PubMed-style corpus attached later plugs in through the same
:class:`~core.kb.protocols.Retriever` protocol as the knowledge bases, without
a process-wide registry.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import ConfigError
from core.llm.budget import feature_budget
from core.plugins import build_from_import_path, is_import_path
from core.selfrag.critic import Critic, JudgeCritic, LLMReflectionCritic
from core.selfrag.generate import Generator, LLMGenerator
from core.selfrag.pipeline import SelfRagPipeline
from core.selfrag.retrieval import KBRetriever

if TYPE_CHECKING:
    from core.config.selfrag import SelfRagSettings
    from core.kb.protocols import Retriever
    from core.llm.base import LLM
    from core.selfrag.native import ReflectionModel
    from core.settings import Settings

__all__ = ["build_pipeline", "load_reflection_model", "make_retriever", "needs_llm"]

def make_retriever(settings: Settings, kb: Retriever, corpora: Retriever) -> KBRetriever:
    """The retriever ``selfrag.corpus`` names (see its description) over the runtime's ``kb`` or ``corpora``.

    ``auto`` picks every ingested corpus when there is one; ``package.module:ClassName``
    searches ``ClassName(settings)``, a :class:`~core.kb.protocols.Retriever` (its
    knowledge base named by the path, in ``selfrag.search_mode``); ``A+B`` fuses
    ingested corpora by RRF.
    """
    s = settings.selfrag
    if s.corpus:
        if is_import_path(s.corpus):
            from core.kb.protocols import Retriever

            named = build_from_import_path(s.corpus, "selfrag.corpus", Retriever, settings)  # type: ignore[type-abstract]
            return KBRetriever(named, [s.corpus], s.search_mode)
        from core.kb.corpus.layout import corpus_names

        ingested = corpus_names(settings.paths.resolve(settings.paths.index_dir))
        if s.corpus == "auto":
            if ingested:
                return KBRetriever(corpora, [f"corpus:{'+'.join(ingested)}"], "dense")
        elif set(s.corpus.split("+")) <= set(ingested):
            return KBRetriever(corpora, [f"corpus:{s.corpus}"], "dense")
        else:
            raise ConfigError(
                f"Unknown selfrag.corpus {s.corpus!r} (ingested: {', '.join(ingested) or 'none'})",
                hint="Name ingested corpora (A+B), `auto`, or a retriever class (package.module:ClassName).",
            )
    return KBRetriever(kb, s.kbs, s.search_mode)


def load_reflection_model(settings: Settings) -> ReflectionModel:
    """The reflection-token model in ``selfrag.native_model_path``."""
    from core.selfrag.native import ReflectionModel

    path = settings.selfrag.native_model_path
    if path is None:
        raise ConfigError("selfrag.native_model_path is required for the native critic or generator")
    return ReflectionModel(settings.paths.resolve(path), settings.selfrag, settings.llm.seed)


def needs_llm(cfg: SelfRagSettings) -> bool:
    """Whether the configured critic or generator reads a language model (the native ones do not)."""
    return cfg.critic != "native" or cfg.generator == "llm"


def _llm(llm: LLM | None) -> LLM:
    if llm is None:
        raise ConfigError(
            "Self-reflective RAG needs a language model; llm.backend is 'extractive'",
            hint="Set llm.backend (llamacpp is the local default) or selfrag.critic/generator to native.",
        )
    return llm


def build_pipeline(
    settings: Settings,
    *,
    llm: LLM | None,
    retriever: KBRetriever,
    critic: Critic | None = None,
    generator: Generator | None = None,
) -> SelfRagPipeline:
    """A pipeline over ``retriever`` whose critic and generator (unless passed in) ``selfrag`` picks.

    ``llm`` is the one model the LLM critic and generator share (the runtime's);
    the native reflection-token model is read from ``selfrag.native_model_path``.
    """
    s = settings.selfrag
    native: ReflectionModel | None = None
    if critic is None:
        if s.critic == "native":
            from core.selfrag.native import NativeCritic

            native = load_reflection_model(settings)
            critic = NativeCritic(native)
        elif s.critic == "native-llm":
            critic = LLMReflectionCritic(_llm(llm), s)
        else:
            critic = JudgeCritic(_llm(llm), s)
    if generator is None:
        if s.generator == "native":
            generator = native or load_reflection_model(settings)
        else:
            generator = LLMGenerator(_llm(llm), chat=s.generator_chat, budget_s=feature_budget(settings, "selfrag"))
    return SelfRagPipeline(s, critic, generator, retriever)
