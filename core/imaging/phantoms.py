"""Synthetic demo renderings, drawn by our own code: DEMO DATA, NOT PATIENT IMAGES.

Each anatomy gets a simple geometric phantom in the units its modality uses
(CT volumes in Hounsfield units, so the window presets behave as on real CT;
photographs as RGB). Every image carries the words "SYNTHETIC DEMO" in its
pixels. ``variant`` (0 or 1) adds a finding-like shape so that neighbours differ.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["PHANTOMS", "Phantom", "synthetic"]

SIZE = 256
LABEL = "SYNTHETIC DEMO"


@dataclass(frozen=True)
class Phantom:
    """A rendered demo image: frames, modality, default window and a label that says what it is."""

    frames: np.ndarray
    modality: str
    window: tuple[float, float] | None
    label: str


def _grid(n: int = SIZE) -> tuple[np.ndarray, np.ndarray]:
    y, x = np.mgrid[-1 : 1 : n * 1j, -1 : 1 : n * 1j]
    return x.astype(np.float32), y.astype(np.float32)


def _ell(x: np.ndarray, y: np.ndarray, cx: float, cy: float, rx: float, ry: float) -> np.ndarray:
    return ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1.0


def _stamp(img: np.ndarray, value: float | tuple[int, int, int]) -> np.ndarray:
    """Write LABEL into the top-left corner of ``img`` (grey or RGB) with ``value``."""
    from PIL import Image, ImageDraw

    mask = Image.new("L", (img.shape[1], img.shape[0]), 0)
    ImageDraw.Draw(mask).text((6, 4), LABEL, fill=255)
    on = np.asarray(mask) > 127
    img[on] = value
    return img


def _smooth_noise(rng: np.random.Generator, n: int, scale: int) -> np.ndarray:
    """Blobby noise in 0..1: coarse random grid upsampled bilinearly."""
    from PIL import Image

    coarse = (rng.random((scale, scale)) * 255).astype(np.uint8)
    return np.asarray(Image.fromarray(coarse).resize((n, n), Image.Resampling.BICUBIC), dtype=np.float32) / 255.0


def _chest(variant: int, rng: np.random.Generator, slices: int = 16) -> np.ndarray:
    x, y = _grid()
    vol = []
    for k in range(slices):
        z = k / (slices - 1)
        hu = np.full(x.shape, -1000.0, np.float32)
        hu[_ell(x, y, 0, 0.02, 0.88, 0.62)] = -90  # subcutaneous fat
        hu[_ell(x, y, 0, 0.02, 0.82, 0.56)] = 40  # muscle and mediastinum
        grow = 0.75 + 0.25 * np.sin(np.pi * z)
        lungs = np.zeros(x.shape, bool)
        for side in (-1, 1):
            lungs |= _ell(x, y, side * 0.38, -0.04, 0.3 * grow, 0.42 * grow)
        hu[lungs] = -860 + 40 * _smooth_noise(rng, SIZE, 24)[lungs]
        vessels = (_smooth_noise(rng, SIZE, 40) > 0.8) & lungs
        hu[vessels] = -200
        hu[_ell(x, y, 0.08, 0.12, 0.2 * (1.2 - z * 0.4), 0.18)] = 45  # heart
        hu[_ell(x, y, -0.08, 0.25, 0.07, 0.07)] = 180  # aorta with contrast
        hu[_ell(x, y, 0, 0.45, 0.1, 0.09)] = 900  # vertebral cortex
        hu[_ell(x, y, 0, 0.45, 0.075, 0.065)] = 300  # vertebral body
        for a in np.linspace(0.15, np.pi - 0.15, 7):
            hu[_ell(x, y, 0.8 * np.cos(a) * (1 if k % 2 else -1), 0.02 + 0.56 * np.sin(a), 0.04, 0.03)] = 700
        if variant == 1 and 4 <= k <= 9:  # a round nodule in the right lung
            hu[_ell(x, y, -0.4, -0.15, 0.06, 0.06)] = 35
        if variant == 2 and k >= 8:  # lower-lobe consolidation
            patch = _ell(x, y, 0.4, 0.15, 0.2, 0.15) & (hu < -500)
            hu[patch] = -50
        vol.append(_stamp(hu + rng.normal(0, 12, hu.shape).astype(np.float32), 1500))
    return np.stack(vol).astype(np.int16)


def _head(variant: int, rng: np.random.Generator, slices: int = 16) -> np.ndarray:
    x, y = _grid()
    vol = []
    for k in range(slices):
        z = k / (slices - 1)
        s = 0.7 + 0.3 * np.sin(np.pi * (0.15 + 0.7 * z))
        hu = np.full(x.shape, -1000.0, np.float32)
        hu[_ell(x, y, 0, 0, 0.72 * s, 0.9 * s)] = 1100  # skull
        hu[_ell(x, y, 0, 0, 0.66 * s, 0.84 * s)] = 40  # grey matter
        hu[_ell(x, y, 0, 0, 0.5 * s, 0.66 * s)] = 30  # white matter
        for side in (-1, 1):
            hu[_ell(x, y, side * 0.1, -0.05, 0.06 * s, 0.25 * s)] = 6  # ventricles
        if variant == 1:
            hu[_ell(x, y, 0.35 * s, 0.2, 0.12, 0.1)] = 70  # hyperdense haemorrhage
        if variant == 2:
            hu[_ell(x, y, -0.3 * s, 0.1, 0.2, 0.25) & (hu > 20) & (hu < 50)] = 18  # hypodense infarct
        vol.append(_stamp(hu + rng.normal(0, 3, hu.shape).astype(np.float32), 1500))
    return np.stack(vol).astype(np.int16)


def _abdomen(variant: int, rng: np.random.Generator, slices: int = 16) -> np.ndarray:
    x, y = _grid()
    vol = []
    for k in range(slices):
        z = k / (slices - 1)
        hu = np.full(x.shape, -1000.0, np.float32)
        hu[_ell(x, y, 0, 0, 0.9, 0.66)] = -100
        hu[_ell(x, y, 0, 0, 0.84, 0.6)] = 35
        hu[_ell(x, y, -0.35, -0.1, 0.4 * (1.1 - z * 0.6), 0.35)] = 60  # liver (patient's right)
        hu[_ell(x, y, 0.5, -0.05, 0.15, 0.2 * (1 - z * 0.5))] = 50  # spleen
        for side in (-1, 1):
            hu[_ell(x, y, side * 0.3, 0.3, 0.1, 0.14)] = 160  # kidneys (contrast)
        hu[_ell(x, y, 0.02, 0.2, 0.05, 0.05)] = 200  # aorta
        hu[_ell(x, y, 0, 0.45, 0.1, 0.09)] = 900
        hu[_ell(x, y, 0, 0.45, 0.075, 0.065)] = 300
        gas = (_smooth_noise(rng, SIZE, 30) > 0.85) & _ell(x, y, 0.15, 0.0, 0.3, 0.25)
        hu[gas] = -950
        if variant == 1:
            hu[_ell(x, y, -0.4, -0.15, 0.09, 0.08)] = 10  # hypodense liver lesion
        vol.append(_stamp(hu + rng.normal(0, 10, hu.shape).astype(np.float32), 1500))
    return np.stack(vol).astype(np.int16)


def _spine(variant: int, rng: np.random.Generator, slices: int = 12) -> np.ndarray:
    x, y = _grid()
    vol = []
    for k in range(slices):
        off = (k - slices / 2) / slices * 0.2
        hu = np.full(x.shape, 40.0, np.float32)
        hu[np.abs(x - 0.55 - off) < 0.12] = 10  # spinal canal
        for i, cy in enumerate(np.linspace(-0.85, 0.85, 7)):
            h = 0.1 if not (variant == 1 and i == 4) else 0.06  # a compressed vertebra
            hu[(np.abs(x + 0.05) < 0.3) & (np.abs(y - cy) < h)] = 320
            hu[(np.abs(x + 0.05) < 0.3) & (np.abs(y - cy - 0.13) < 0.025)] = 90  # disc
        vol.append(_stamp(hu + rng.normal(0, 10, hu.shape).astype(np.float32), 1500))
    return np.stack(vol).astype(np.int16)


def _mammogram(variant: int, rng: np.random.Generator) -> np.ndarray:
    x, y = _grid()
    img = np.zeros(x.shape, np.float32)
    breast = _ell(x, y, -1.0, 0, 1.6, 0.95)
    img[breast] = 900 + 1400 * _smooth_noise(rng, SIZE, 18)[breast]
    if variant == 1:
        img[_ell(x, y, 0.0, -0.2, 0.1, 0.09)] = 3400  # dense mass
        for _ in range(6):
            img[_ell(x, y, 0.05 + rng.normal(0, 0.04), -0.2 + rng.normal(0, 0.04), 0.012, 0.012)] = 4000
    return _stamp(img, 4095)[np.newaxis].astype(np.int16)


def _rgb(base: tuple[int, int, int], rng: np.random.Generator, texture: float) -> np.ndarray:
    img = np.empty((SIZE, SIZE, 3), np.float32)
    img[:] = base
    return img + (texture * (_smooth_noise(rng, SIZE, 32) - 0.5))[..., np.newaxis]


def _fundus(variant: int, rng: np.random.Generator) -> np.ndarray:
    from PIL import Image, ImageDraw

    x, y = _grid()
    r = np.sqrt(x**2 + y**2)
    img = np.zeros((SIZE, SIZE, 3), np.float32)
    disc = r < 0.92
    img[disc] = np.stack([200 - 70 * r, 80 - 30 * r, 30 + 0 * r], axis=-1)[disc]
    img[_ell(x, y, 0.35, 0.0, 0.11, 0.13)] = (250, 220, 140)  # optic disc
    canvas = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(canvas)
    for a in np.linspace(0, 2 * np.pi, 9)[:-1]:
        pts = [(0.675 * SIZE, 0.5 * SIZE)]
        for step in range(1, 6):
            ang = a + 0.25 * np.sin(step + a * 3)
            pts.append((pts[-1][0] + 18 * np.cos(ang), pts[-1][1] + 18 * np.sin(ang)))
        draw.line(pts, fill=(120, 20, 20), width=3)
    out = np.asarray(canvas, dtype=np.float32).copy()
    if variant == 1:  # exudates and dot haemorrhages
        for _ in range(14):
            cx, cy = rng.uniform(-0.5, 0.3), rng.uniform(-0.5, 0.5)
            out[_ell(x, y, cx, cy, 0.02, 0.02)] = (240, 230, 120) if rng.random() < 0.5 else (110, 10, 10)
    return _stamp(out, (255, 255, 255))[np.newaxis].clip(0, 255).astype(np.uint8)


def _skin(variant: int, rng: np.random.Generator) -> np.ndarray:
    x, y = _grid()
    img = _rgb((224, 172, 140), rng, 30)
    edge = 0.35 + 0.12 * (_smooth_noise(rng, SIZE, 8) - 0.5) * (3 if variant else 1)
    lesion = np.sqrt((x / 1.1) ** 2 + y**2) < edge
    shade = 0.6 + 0.4 * _smooth_noise(rng, SIZE, 12)
    colour = np.array((110, 70, 45) if not variant else (70, 40, 35), np.float32)
    img[lesion] = colour * shade[lesion][:, np.newaxis]
    return _stamp(img, (255, 255, 255))[np.newaxis].clip(0, 255).astype(np.uint8)


def _slide(variant: int, rng: np.random.Generator) -> np.ndarray:
    x, y = _grid()
    img = _rgb((235, 170, 200), rng, 50)
    n = 160 if variant else 90
    for _ in range(n):
        cx, cy, rr = rng.uniform(-1, 1), rng.uniform(-1, 1), rng.uniform(0.015, 0.03 if not variant else 0.045)
        img[_ell(x, y, cx, cy, rr, rr * rng.uniform(0.7, 1.3))] = (95, 50, 140)
    return _stamp(img, (0, 0, 0))[np.newaxis].clip(0, 255).astype(np.uint8)


_CT = "Synthetic demo CT volume (geometric phantom drawn by Casebook; not a patient image)"
_PHOTO = "Synthetic demo {} (drawn by Casebook; not a patient image)"
PHANTOMS: dict[str, tuple[Callable[[int, np.random.Generator], np.ndarray], str, tuple[float, float] | None, str]] = {
    "lung": (_chest, "CT", (-600.0, 1500.0), _CT),
    "brain": (_head, "CT", (40.0, 80.0), _CT),
    "abdomen": (_abdomen, "CT", (40.0, 400.0), _CT),
    "spine": (_spine, "CT", (400.0, 1800.0), _CT),
    "breast": (_mammogram, "MG", None, _PHOTO.format("mammogram")),
    "eye": (_fundus, "OP", None, _PHOTO.format("fundus photograph")),
    "skin": (_skin, "XC", None, _PHOTO.format("dermoscopy photograph")),
    "pathology": (_slide, "SM", None, _PHOTO.format("stained slide")),
}


def synthetic(anatomy: str, variant: int, seed: int = 20261125) -> Phantom:
    """The demo rendering of ``anatomy`` (variant 0, 1 or 2), identical for identical arguments."""
    draw, modality, window, label = PHANTOMS[anatomy]
    frames = draw(variant, np.random.default_rng([seed, variant, len(anatomy)]))
    return Phantom(frames, modality, window, label)
