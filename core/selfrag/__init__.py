"""Self-reflective biomedical RAG: reflection tokens, adaptive retrieval, critic reranking, regeneration.

    >>> from core.runtime import Runtime
    >>> trace = Runtime(load_settings()).selfrag.run("Which drug ...?", {"A": "...", "B": "..."})
    >>> trace.letter, trace.decision.p_retrieve, [d.score for d in trace.documents]

See docs/SELFRAG.md for the stages, the critic positions and the benchmark.
"""

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
