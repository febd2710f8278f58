"""How each demo diagnosis looks, and where diagnoses are meant to look alike: DEMO DATA.

Every diagnosis draws one of its *looks* (a weighted list of findings from
:mod:`core.demo.draw`) with per-case random position, size and shape. Looks are
shared on purpose, so that different diagnoses can look the same, as in practice
(docs/SIMILARITY.md, "Intended confusion"):

- **consolidation**: pneumonia (mostly), tuberculosis, lung adenocarcinoma (lepidic
  or obstructive pattern) and a pulmonary-embolism infarct;
- **ring-enhancing lesion**: glioblastoma, brain abscess and tumefactive multiple sclerosis;
- **a mass**: invasive ductal carcinoma, fibroadenoma and simple cyst (round or oval,
  circumscribed or spiculated; each diagnosis leans one way);
- also: cavity (TB, adenocarcinoma), small nodule (benign nodule, TB granuloma,
  adenocarcinoma), collapsed vertebra (fracture, metastasis), inflammatory stranding
  (appendicitis, cholecystitis, pancreatitis), retinal dots (diabetic retinopathy, AMD),
  pigmented lesion (melanoma, naevus, seborrhoeic keratosis), glands (the three
  adenocarcinoma/adenoma slides), lymphoid sheets (lymphoma, reactive node).

Severity scales the finding (low 0.8x ... critical 1.3x). Nothing here is used by
the encoder: it sees only the pixels these recipes draw.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

import numpy as np

from core.demo.draw import BACKGROUNDS, FINDINGS, grid

__all__ = ["LOOKS", "NOISE", "render_case", "render_scan"]

Finding = tuple[str, Mapping[str, object]]
Look = tuple[float, tuple[Finding, ...]]

POOL = 16
SCALE = {"low": 0.8, "moderate": 1.0, "high": 1.15, "critical": 1.3}
# white noise per anatomy, in the image's units, at 128 x 128
NOISE = {
    "lung": 15.0,
    "brain": 3.0,
    "abdomen": 10.0,
    "spine": 10.0,
    "breast": 60.0,
    "eye": 6.0,
    "skin": 6.0,
    "pathology": 8.0,
}


def dict_with(finding: Finding, **changes: object) -> Finding:
    """``finding`` with some parameters changed (a variant of a shared look)."""
    return finding[0], {**finding[1], **changes}


# shared looks (the confusion structure)
_CONSOLIDATION = ("patch", {"r": 0.22, "val": -40.0, "bronchograms": True})
_CAVITY = ("ring", {"r": 0.09, "wall": 0.03, "val": 30.0, "core": -1000.0})
_NODULE = ("blob", {"r": 0.045, "val": 30.0})
_SPICULATED = ("blob", {"r": 0.08, "val": 40.0, "spic": 0.6})
_RING_LESION = ("ring", {"r": 0.12, "wall": 0.035, "val": 75.0, "core": 12.0, "halo": 20.0})
_ROUND_MASS = ("blob", {"r": 0.11, "val": 2900.0, "ecc": 0.95})
_OVAL_MASS = ("blob", {"r": 0.12, "val": 2800.0, "ecc": 0.65})
_SPIC_MASS = ("blob", {"r": 0.1, "val": 3200.0, "spic": 0.7})
_CALCS = ("dots", {"n": 14, "r": 0.012, "val": 4000.0, "spread": 0.5})
_COLLAPSE = ("shrink", {"level": 0.08, "val": 40.0})
_STRANDING = ("patch", {"r": 0.25, "val": 5.0, "alpha": 0.6})
_RED_DOTS = ("dots", {"n": 12, "r": 0.02, "val": (110.0, 10.0, 10.0), "spread": 2.0})
_YELLOW_DOTS = ("dots", {"n": 10, "r": 0.022, "val": (240.0, 230.0, 120.0), "spread": 1.2})
_PIGMENT = ("blob", {"r": 0.3, "val": (95.0, 60.0, 40.0), "spic": 0.15, "ecc": 0.85})
_GLANDS = ("ring", {"r": 0.08, "wall": 0.025, "val": (120.0, 60.0, 150.0), "core": (245.0, 230.0, 240.0)})
_SHEET = ("dots", {"n": 60, "r": 0.03, "val": (80.0, 40.0, 130.0), "spread": 3.0})

LOOKS: dict[str, tuple[Look, ...]] = {
    # lung
    "COPD with emphysema": (
        (1.0, (("shade", {"delta": -80.0}), ("dots", {"n": 6, "r": 0.06, "val": -1000.0, "spread": 2.0}))),
    ),
    "Community-acquired pneumonia": (
        (0.85, (_CONSOLIDATION,)),
        (0.15, (_CONSOLIDATION, ("rim", {"width": 0.08, "val": 15.0, "side": "posterior"}))),
    ),
    "Pulmonary tuberculosis": (
        (0.4, (_CAVITY,)),
        (0.35, (_CONSOLIDATION,)),
        (0.25, (("dots", {"n": 8, "r": 0.02, "val": 30.0}),)),
    ),
    "Lung adenocarcinoma": ((0.5, (_SPICULATED,)), (0.25, (_CONSOLIDATION,)), (0.15, (_CAVITY,)), (0.1, (_NODULE,))),
    "Pulmonary embolism": (
        (0.6, (("blob", {"r": 0.03, "val": -700.0}),)),
        (0.4, (("patch", {"r": 0.14, "val": -60.0}),)),
    ),
    "Benign pulmonary nodule": ((0.8, (_NODULE,)), (0.2, (("blob", {"r": 0.035, "val": 400.0}),))),
    "Pleural effusion": (
        (0.85, (("rim", {"width": 0.14, "val": 15.0, "side": "posterior"}),)),
        (0.15, (("rim", {"width": 0.1, "val": 15.0, "side": "posterior"}), _CONSOLIDATION)),
    ),
    "Idiopathic pulmonary fibrosis": ((1.0, (("reticulation", {"amount": 0.2, "val": -300.0}),)),),
    "Tension pneumothorax": ((1.0, (("rim", {"width": 0.2, "val": -1000.0}),)),),
    "Spontaneous pneumothorax": ((1.0, (("rim", {"width": 0.07, "val": -1000.0}),)),),
    # brain
    "Ischemic stroke": ((1.0, (("patch", {"r": 0.25, "val": 15.0}),)),),
    "Glioblastoma": (
        (0.75, (dict_with(_RING_LESION, r=0.15, irregular=0.6),)),
        (0.25, (("blob", {"r": 0.12, "val": 70.0}), ("patch", {"r": 0.25, "val": 22.0, "alpha": 0.6}))),
    ),
    "Brain abscess": ((0.85, (_RING_LESION,)), (0.15, (_RING_LESION, dict_with(_RING_LESION, r=0.06)))),
    "Meningioma": ((1.0, (("rim", {"width": 0.12, "val": 70.0}),)),),
    "Multiple sclerosis": (
        (0.8, (("dots", {"n": 7, "r": 0.035, "val": 15.0, "spread": 1.5}),)),
        (0.2, (dict_with(_RING_LESION, r=0.08),)),
    ),
    "Subdural haematoma": ((1.0, (("rim", {"width": 0.06, "val": 65.0}),)),),
    # spine
    "Lumbar disc herniation": ((1.0, (("blob", {"r": 0.06, "val": 90.0}),)),),
    "Cervical spondylotic myelopathy": ((1.0, (("dots", {"n": 4, "r": 0.05, "val": 90.0, "spread": 2.5}),)),),
    "Vertebral compression fracture": ((1.0, (_COLLAPSE,)),),
    "Spinal metastasis": (
        (0.5, (_COLLAPSE, ("blob", {"r": 0.07, "val": 60.0}))),
        (0.5, (("blob", {"r": 0.08, "val": 60.0}),)),
    ),
    # breast
    "Invasive ductal carcinoma": ((0.55, (_SPIC_MASS,)), (0.25, (_SPIC_MASS, _CALCS)), (0.2, (_OVAL_MASS,))),
    "Fibroadenoma": ((0.75, (_OVAL_MASS,)), (0.25, (_ROUND_MASS,))),
    "Simple breast cyst": ((0.8, (_ROUND_MASS,)), (0.2, (_OVAL_MASS,))),
    "Ductal carcinoma in situ": ((0.85, (_CALCS,)), (0.15, (_CALCS, dict_with(_SPIC_MASS, r=0.06)))),
    # abdomen
    "Acute appendicitis": ((1.0, (("blob", {"r": 0.05, "val": 45.0, "ecc": 0.4}), _STRANDING)),),
    "Acute cholecystitis": (
        (0.6, (("ring", {"r": 0.1, "wall": 0.03, "val": 60.0, "core": 10.0}), _STRANDING)),
        (
            0.4,
            (
                ("ring", {"r": 0.1, "wall": 0.03, "val": 60.0, "core": 10.0}),
                ("dots", {"n": 3, "r": 0.02, "val": 600.0, "spread": 0.3}),
            ),
        ),
    ),
    "Hepatocellular carcinoma": (
        (0.8, (("blob", {"r": 0.1, "val": 95.0}),)),
        (0.2, (("blob", {"r": 0.1, "val": 30.0}),)),
    ),
    "Acute pancreatitis": ((1.0, (_STRANDING, ("patch", {"r": 0.12, "val": 10.0}))),),
    "Renal calculus": ((1.0, (("dots", {"n": 1, "r": 0.03, "val": 900.0}), ("blob", {"r": 0.05, "val": 5.0}))),),
    "Small bowel obstruction": ((1.0, (("dots", {"n": 5, "r": 0.07, "val": 10.0, "spread": 2.0}),)),),
    # eye
    "Diabetic retinopathy": ((1.0, (_RED_DOTS, _YELLOW_DOTS)),),
    "Age-related macular degeneration": (
        (0.7, (dict_with(_YELLOW_DOTS, spread=0.6),)),
        (0.3, (dict_with(_YELLOW_DOTS, spread=0.6), dict_with(_RED_DOTS, n=5))),
    ),
    "Glaucomatous optic neuropathy": ((1.0, (("blob", {"r": 0.09, "val": (250.0, 240.0, 200.0)}),)),),
    "Retinal detachment": ((1.0, (("patch", {"r": 0.35, "val": (170.0, 150.0, 140.0), "alpha": 0.8}),)),),
    # skin
    "Melanoma": (
        (
            0.75,
            (
                dict_with(_PIGMENT, spic=0.5, val=(60.0, 35.0, 30.0)),
                ("dots", {"n": 5, "r": 0.05, "val": (40.0, 40.0, 70.0)}),
            ),
        ),
        (0.25, (_PIGMENT,)),
    ),
    "Benign melanocytic naevus": ((0.8, (dict_with(_PIGMENT, r=0.22, spic=0.0),)), (0.2, (_PIGMENT,))),
    "Seborrhoeic keratosis": (
        (
            0.7,
            (
                dict_with(_PIGMENT, val=(150.0, 110.0, 70.0)),
                ("dots", {"n": 6, "r": 0.02, "val": (245.0, 240.0, 220.0)}),
            ),
        ),
        (0.3, (_PIGMENT,)),
    ),
    "Basal cell carcinoma": (
        (
            1.0,
            (
                ("blob", {"r": 0.22, "val": (235.0, 185.0, 185.0)}),
                ("dots", {"n": 6, "r": 0.01, "val": (180.0, 30.0, 40.0), "spread": 0.8}),
            ),
        ),
    ),
    # pathology
    "Prostate adenocarcinoma": (
        (1.0, (dict_with(_GLANDS, r=0.05), dict_with(_GLANDS, r=0.05), dict_with(_GLANDS, r=0.05))),
    ),
    "Colorectal adenocarcinoma": (
        (0.7, (_GLANDS, _GLANDS, ("dots", {"n": 10, "r": 0.012, "val": (200.0, 120.0, 160.0)}))),
        (0.3, (_GLANDS, _GLANDS)),
    ),
    "Tubular adenoma": ((1.0, (_GLANDS, _GLANDS)),),
    "Diffuse large B-cell lymphoma": ((1.0, (_SHEET,)),),
    "Reactive lymphadenopathy": (
        (0.7, (dict_with(_SHEET, n=25, spread=1.0), dict_with(_SHEET, n=25, spread=1.0))),
        (0.3, (_SHEET,)),
    ),
}


def _pick(diagnosis: str, rng: np.random.Generator) -> tuple[Finding, ...]:
    looks = LOOKS[diagnosis]
    w = np.array([lk[0] for lk in looks])
    return looks[int(rng.choice(len(looks), p=w / w.sum()))][1]


@lru_cache(maxsize=256)
def _background(anatomy: str, n: int, z: float, pool: int, which: int) -> dict[str, np.ndarray]:
    x, y = grid(n)
    return BACKGROUNDS[anatomy](x, y, z, np.random.default_rng([pool, which, len(anatomy)]))


def _draw(anatomy: str, findings: tuple[Finding, ...], k: float, n: int, z: float, seed: list[int]) -> np.ndarray:
    # one of POOL backgrounds per anatomy (drawing a fresh one per case was most of the seeding time)
    base = _background(anatomy, n, z, seed[0], seed[-1] % POOL)
    canvas = {**base, "img": base["img"].copy()}
    rng = np.random.default_rng([*seed, 2])
    for name, params in findings:
        FINDINGS[name](canvas, rng, k, **params)
    img = canvas["img"]
    noise = np.random.default_rng([*seed, 3]).normal(0, NOISE[anatomy] * n / 128, img.shape[:2]).astype(np.float32)
    return img + (noise[..., None] if img.ndim == 3 else noise)


LABEL = "SYNTHETIC DEMO"


@lru_cache(maxsize=4)
def _label_mask(n: int) -> np.ndarray:
    from PIL import Image, ImageDraw

    mask = Image.new("L", (n, n), 0)
    ImageDraw.Draw(mask).text((3, n - 13), LABEL, fill=255)  # bottom-left corner, outside every body outline
    return np.asarray(mask) > 127


def _finish(anatomy: str, img: np.ndarray) -> np.ndarray:
    """Clip to the modality's range and burn LABEL into the pixels (a screenshot says what it is too)."""
    on = _label_mask(img.shape[0])
    if img.ndim == 3:
        img[on] = 255
        return np.clip(img, 0, 255).astype(np.uint8)
    img[on] = 4095 if anatomy == "breast" else 1500
    return np.clip(img, -1024, 4095).astype(np.int16)


def render_case(anatomy: str, diagnosis: str, severity: str | None, seed: list[int], n: int = 128) -> np.ndarray:
    """One demo image (``n`` x ``n``; RGB for photographs) of a case with ``diagnosis``: identical for identical seeds."""
    rng = np.random.default_rng([*seed, 0])
    findings = _pick(diagnosis, rng)
    return _finish(anatomy, _draw(anatomy, findings, SCALE.get(severity or "", 1.0), n, 0.5, seed))


def render_scan(
    anatomy: str, diagnosis: str, severity: str | None, seed: list[int], n: int = 128, slices: int = 16
) -> np.ndarray:
    """A demo study: ``slices`` frames (one frame for photographs), the finding fullest on the middle slices.

    Drawn at the cases' size (128): the same drawing at 256 and averaged down has softer edges, which
    the texture features read as a different image (scan-to-case cosines fell by about 0.05).
    """
    rng = np.random.default_rng([*seed, 0])
    findings = _pick(diagnosis, rng)
    k = SCALE.get(severity or "", 1.0)
    if anatomy in ("breast", "eye", "skin", "pathology"):
        return _finish(anatomy, _draw(anatomy, findings, k, n, 0.5, seed))[np.newaxis]
    frames = []
    mid = (slices - 1) / 2  # the two middle slices (the viewer's first slice and the embedded one) show it fully
    for i in range(slices):
        z = i / (slices - 1)
        fade = max(0.0, 1.0 - max(0.0, abs(i - mid) - 0.5) / 3.5)  # the finding spans the middle slices
        shown = findings if fade > 0 else ()
        frames.append(_finish(anatomy, _draw(anatomy, shown, k * max(fade, 0.3), n, z if fade < 1 else 0.5, seed)))
    return np.stack(frames)
