"""Self-reflective biomedical RAG: reflection tokens, adaptive retrieval, critic reranking, regeneration.

    >>> from core.runtime import Runtime
    >>> trace = Runtime(load_settings()).selfrag.run("Which drug ...?", {"A": "...", "B": "..."})
    >>> trace.letter, trace.decision.p_retrieve, [d.score for d in trace.documents]

See docs/SELFRAG.md for the stages, the critic positions and the benchmark.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.config.selfrag import SelfRagSettings
    from core.selfrag.critic import Critic, JudgeCritic, LLMReflectionCritic
    from core.selfrag.extract import extract_letter
    from core.selfrag.factory import build_pipeline, make_retriever, needs_llm
    from core.selfrag.generate import Generator, LLMGenerator
    from core.selfrag.pipeline import SelfRagPipeline
    from core.selfrag.retrieval import KBRetriever, QueryProcessor, StaticRetriever
    from core.selfrag.tokens import clean_answer
    from core.selfrag.types import CriticReading, Passage, SelfRagTrace

__all__ = [
    "Critic",
    "CriticReading",
    "Generator",
    "JudgeCritic",
    "KBRetriever",
    "LLMGenerator",
    "LLMReflectionCritic",
    "Passage",
    "QueryProcessor",
    "SelfRagPipeline",
    "SelfRagSettings",
    "SelfRagTrace",
    "StaticRetriever",
    "build_pipeline",
    "clean_answer",
    "extract_letter",
    "make_retriever",
    "needs_llm",
]


# names load on first use (PEP 562): `import core.selfrag` stays cheap for the CLI's start-up
_LAZY = {
    "SelfRagSettings": "core.config.selfrag",
    "Critic": "core.selfrag.critic",
    "JudgeCritic": "core.selfrag.critic",
    "LLMReflectionCritic": "core.selfrag.critic",
    "extract_letter": "core.selfrag.extract",
    "build_pipeline": "core.selfrag.factory",
    "make_retriever": "core.selfrag.factory",
    "needs_llm": "core.selfrag.factory",
    "Generator": "core.selfrag.generate",
    "LLMGenerator": "core.selfrag.generate",
    "SelfRagPipeline": "core.selfrag.pipeline",
    "KBRetriever": "core.selfrag.retrieval",
    "QueryProcessor": "core.selfrag.retrieval",
    "StaticRetriever": "core.selfrag.retrieval",
    "clean_answer": "core.selfrag.tokens",
    "CriticReading": "core.selfrag.types",
    "Passage": "core.selfrag.types",
    "SelfRagTrace": "core.selfrag.types",
}


__getattr__ = lazy_exports(__name__, _LAZY)
