"""The demo case catalogue: diagnoses per anatomy with regions, severities and outcomes.

DEMO DATA, NOT FOR CLINICAL USE. Frequencies and outcome wording are plausible
inventions written for this project, not statistics from any source.
"""

from __future__ import annotations

from core.demo.catalog_body import CONDITIONS as _BODY
from core.demo.catalog_thorax_neuro import CONDITIONS as _THORAX_NEURO
from core.demo.condition import REGIONS, Condition

__all__ = ["CATALOG", "REGIONS", "Condition"]

# In this order (lung first) the seeded demo data stays as it always was.
CATALOG: tuple[Condition, ...] = (*_THORAX_NEURO, *_BODY)

