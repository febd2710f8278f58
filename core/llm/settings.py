"""Settings group for language-model backends (registered in :mod:`core.settings`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["LLMSettings"]


class LLMSettings(BaseModel):
    """Which language model answers, and how long it may take."""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    backend: str = Field(
        "extractive",
        description="`extractive` (no model), `llamacpp` (local GGUF), `groq`, `openai` (any "
        "OpenAI-compatible server) or `transformers` (local Hugging Face folder).",
    )
    timeout_s: float = Field(
        60.0, gt=0, description="Seconds an LLM call may take before the extractive answer is used."
    )
