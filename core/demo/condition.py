"""The demo catalogue's vocabulary: anatomy regions, one diagnosis (:class:`Condition`), shared outcome phrases.

DEMO DATA, NOT FOR CLINICAL USE. Outcome wording is invented for this project.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ADMITTED", "CRITICAL", "RECOVERED", "REGIONS", "STABLE", "Condition", "outcomes"]

# The anatomy regions a scan or case may name, per anatomy.
REGIONS: dict[str, tuple[str, ...]] = {
    "lung": (
        "right_lung_apex",
        "right_lung_upper",
        "right_lung_middle",
        "right_lung_lower",
        "left_lung_apex",
        "left_lung_upper",
        "left_lung_lower",
        "bilateral_lungs",
    ),
    "brain": ("frontal_lobe", "parietal_lobe", "temporal_lobe", "occipital_lobe", "cerebellum", "brainstem"),
    "spine": ("cervical_spine", "thoracic_spine", "lumbar_spine", "sacrum"),
    "eye": ("right_retina", "left_retina", "right_optic_disc", "left_optic_disc"),
    "breast": (
        "left_breast_upper_outer",
        "left_breast_lower_inner",
        "right_breast_upper_outer",
        "right_breast_lower_inner",
    ),
    "abdomen": ("liver", "gallbladder", "pancreas", "right_kidney", "left_kidney", "appendix", "small_bowel"),
    "skin": ("face", "trunk", "upper_limb", "lower_limb"),
    "pathology": ("lymph_node_biopsy", "colon_biopsy", "prostate_biopsy", "skin_biopsy"),
}


@dataclass(frozen=True)
class Condition:
    """One diagnosis as it appears in the demo memory bank."""

    anatomy: str
    diagnosis: str
    findings: str
    regions: tuple[str, ...]
    severity_weights: tuple[float, float, float, float]  # low, moderate, high, critical
    outcomes: dict[str, tuple[str, ...]]  # severity -> possible outcomes
    age_range: tuple[int, int]
    weight: float  # relative frequency within its anatomy
    male_share: float = 0.5


def outcomes(
    low: tuple[str, ...], mod: tuple[str, ...], high: tuple[str, ...], crit: tuple[str, ...]
) -> dict[str, tuple[str, ...]]:
    """Possible outcomes per severity (low, moderate, high, critical), as :attr:`Condition.outcomes` holds them."""
    return {"low": low, "moderate": mod, "high": high, "critical": crit}


STABLE = ("Stable at 12-month follow-up", "Resolved on follow-up imaging")
RECOVERED = ("Full recovery", "Recovered with residual changes on imaging")
ADMITTED = ("Recovered after hospital admission", "Prolonged admission, recovered")
CRITICAL = (
    "Recovered after intensive care stay",
    "Long-term disability after intensive care",
    "Died during admission",
)
