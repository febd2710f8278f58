"""Settings group for de-identified egress (registered in :mod:`core.settings` as ``privacy``)."""

from __future__ import annotations

from pydantic import Field

from core.config.common import Group

__all__ = ["PrivacySettings"]


class PrivacySettings(Group):
    """What may leave the process for an external language model."""

    names_refresh_s: float = Field(
        30.0,
        ge=0,
        description="Seconds the egress filter reuses the user table's names before reading them again "
        "(0 reads them for every request). A user added since is scrubbed at the next read.",
    )
    max_age_sent: int = Field(
        89,
        ge=1,
        le=120,
        description="Ages above this leave the process as `<max>+` (an age over 89 identifies a person).",
    )
