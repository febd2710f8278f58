"""Settings group for Guideline QA (registered in :mod:`core.settings` as `` routing, structural constraints, gates and abstention.:guideline``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["GuidelineQASettings"]


class GuidelineQASettings(BaseModel):
    """Guideline QA"""

    model_config = ConfigDict(extra="forbid", validate_default=True)

    enabled: bool = Field(True, description="Whether this feature is offered in the app and CLI.")
