"""Settings group for Self-reflective RAG (registered in :mod:`core.settings` as `` reflection critic, adaptive retrieval, reranking, regeneration.:selfrag``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["SelfRagSettings"]


class SelfRagSettings(BaseModel):
    """Self-reflective RAG"""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    enabled: bool = Field(True, description="Whether this feature is offered in the app and CLI.")
