"""``python -m core.imaging.radiomics_fit``: write the radiomics encoder's standardisation constants.

The constants are each feature's mean and standard deviation over a fixed,
seeded sample of the synthetic demo renderings (every demo diagnosis, every
severity). They are the only fitted numbers in the default encoder; their
sha256 is part of the encoder id, so changing them forces every embedding and
the case index to be rebuilt. Run it after changing a feature or the renderer.
"""

from __future__ import annotations

import json

import numpy as np

from core.imaging.radiomics import REFERENCE, raw_features

__all__ = ["fit_reference"]

PER_DIAGNOSIS = 24
SEED = 20261127


def fit_reference(per_diagnosis: int = PER_DIAGNOSIS) -> dict[str, list[float]]:
    """Mean and standard deviation of every feature over ``per_diagnosis`` renderings of each demo diagnosis."""
    from core.demo.catalog import CATALOG
    from core.demo.looks import render_case

    rows = []
    severities = ("low", "moderate", "high", "critical")
    for ci, cond in enumerate(CATALOG):
        for j in range(per_diagnosis):
            img = render_case(cond.anatomy, cond.diagnosis, severities[j % 4], [SEED, ci, j])
            rows.append(raw_features(img)[0])
    mat = np.stack(rows)
    return {
        "mean": [round(float(v), 6) for v in mat.mean(axis=0)],
        "std": [round(float(v), 6) for v in mat.std(axis=0)],
    }


def main() -> None:
    """Write :data:`core.imaging.radiomics.REFERENCE`."""
    ref = fit_reference()
    REFERENCE.write_text(
        json.dumps(
            {
                "about": "radiomics encoder standardisation (python -m core.imaging.radiomics_fit)",
                "per_diagnosis": PER_DIAGNOSIS,
                "seed": SEED,
                **ref,
            },
            indent=0,
        )
        + "\n"
    )
    print(f"wrote {REFERENCE} ({len(ref['mean'])} features)")


if __name__ == "__main__":
    main()
