"""Settings group for the reading workflow (registered in :mod:`core.settings` as ``reports``)."""

from __future__ import annotations

from pydantic import Field

from core.config.common import Group

__all__ = ["ReportSettings"]

# findings a radiologist communicates at once (our own short list, in the spirit of the ACR's
# critical-results practice); matched case-insensitively as substrings of the AI reading
DEFAULT_CRITICAL = (
    "tension pneumothorax",
    "pneumothorax",
    "intracranial haemorrhage",
    "intracranial hemorrhage",
    "ischemic stroke",
    "ischaemic stroke",
    "pulmonary embolism",
    "aortic dissection",
    "free air",
)


class ReportSettings(Group):
    """The worklist, structured reports, critical results and signing."""

    critical_findings: list[str] = Field(
        default_factory=lambda: list(DEFAULT_CRITICAL),
        description="AI readings that name one of these findings (case-insensitive substring) are critical: "
        "first on the worklist, and a report of them needs a critical-result communication record before signing.",
    )
