"""Settings group for the knowledge bases (registered in :mod:`core.settings`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["KBSettings"]


class KBSettings(BaseModel):
    """Knowledge-base ingestion and hybrid retrieval."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    chunk_tokens: int = Field(240, ge=16, description="Guideline chunk size in embedding-model tokens.")
    chunk_overlap: int = Field(50, ge=0, description="Tokens shared by consecutive guideline chunks.")
    rrf_k: int = Field(60, ge=1, description="Reciprocal-rank-fusion constant k for dense + BM25 fusion.")
