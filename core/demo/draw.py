"""Drawing primitives and anatomy backgrounds for the demo images: DEMO DATA, NOT PATIENT IMAGES.

Grey anatomies are drawn in their modality's units (CT in Hounsfield units, the
mammogram in 12-bit detector values) so window presets behave as on real images;
photographs are RGB 0..255. Coordinates are normalised (-1..1, image centre 0) so
one drawing works at any size. :mod:`core.demo.looks` says which findings each
diagnosis draws.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["BACKGROUNDS", "FINDINGS", "Canvas", "grid"]

Canvas = dict[str, np.ndarray]  # "img" (float32, HxW or HxWx3), "x", "y", "body" (bool mask where findings may sit)


def grid(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Normalised x, y coordinates of an n x n image."""
    y, x = np.mgrid[-1 : 1 : n * 1j, -1 : 1 : n * 1j]
    return x.astype(np.float32), y.astype(np.float32)


def _ell(x: np.ndarray, y: np.ndarray, cx: float, cy: float, rx: float, ry: float, angle: float = 0.0) -> np.ndarray:
    c, s = np.cos(angle), np.sin(angle)
    dx, dy = x - cx, y - cy
    u, v = (c * dx + s * dy) / rx, (-s * dx + c * dy) / ry
    return u * u + v * v


def smooth_noise(rng: np.random.Generator, n: int, scale: int) -> np.ndarray:
    """Blobby noise in 0..1: a coarse random grid upsampled bicubically."""
    from PIL import Image

    coarse = (rng.random((scale, scale)) * 255).astype(np.uint8)
    return np.asarray(Image.fromarray(coarse).resize((n, n), Image.Resampling.BICUBIC), dtype=np.float32) / 255.0


def _paint(c: Canvas, mask: np.ndarray, value: float | tuple[float, ...], alpha: float = 1.0) -> None:
    img = c["img"]
    val = np.asarray(value, np.float32)
    img[mask] = (1 - alpha) * img[mask] + alpha * val


# -- backgrounds: (x, y, z, rng) -> canvas ---------------------------------------------------------
def _chest(x: np.ndarray, y: np.ndarray, z: float, rng: np.random.Generator) -> Canvas:
    n = x.shape[0]
    hu = np.full(x.shape, -1000.0, np.float32)
    hu[_ell(x, y, 0, 0.02, 0.88, 0.62) <= 1] = -90
    hu[_ell(x, y, 0, 0.02, 0.82, 0.56) <= 1] = 40
    grow = 0.8 + 0.2 * np.sin(np.pi * z)
    lungs = np.zeros(x.shape, bool)
    for side in (-1, 1):
        lungs |= _ell(x, y, side * 0.38, -0.04, 0.3 * grow, 0.42 * grow) <= 1
    hu[lungs] = -860 + 40 * smooth_noise(rng, n, 24)[lungs]
    hu[(smooth_noise(rng, n, 40) > 0.8) & lungs] = -300  # vessels
    hu[_ell(x, y, 0.08, 0.12, 0.2, 0.18) <= 1] = 45  # heart
    hu[_ell(x, y, -0.08, 0.25, 0.07, 0.07) <= 1] = 180  # aorta with contrast
    hu[_ell(x, y, 0, 0.45, 0.1, 0.09) <= 1] = 700  # vertebra
    return {"img": hu, "x": x, "y": y, "body": lungs}


def _head(x: np.ndarray, y: np.ndarray, z: float, rng: np.random.Generator) -> Canvas:
    s = 0.8 + 0.2 * np.sin(np.pi * (0.15 + 0.7 * z))
    hu = np.full(x.shape, -1000.0, np.float32)
    hu[_ell(x, y, 0, 0, 0.72 * s, 0.9 * s) <= 1] = 1100
    brain = _ell(x, y, 0, 0, 0.66 * s, 0.84 * s) <= 1
    hu[brain] = 40
    hu[_ell(x, y, 0, 0, 0.5 * s, 0.66 * s) <= 1] = 30
    for side in (-1, 1):
        hu[_ell(x, y, side * 0.1, -0.05, 0.06 * s, 0.25 * s) <= 1] = 6
    hu += 4 * smooth_noise(rng, x.shape[0], 30)
    return {"img": hu, "x": x, "y": y, "body": brain}


def _abdomen(x: np.ndarray, y: np.ndarray, z: float, rng: np.random.Generator) -> Canvas:
    hu = np.full(x.shape, -1000.0, np.float32)
    hu[_ell(x, y, 0, 0, 0.9, 0.66) <= 1] = -100
    inside = _ell(x, y, 0, 0, 0.84, 0.6) <= 1
    hu[inside] = 35
    hu[_ell(x, y, -0.35, -0.1, 0.4 * (1.1 - z * 0.4), 0.35) <= 1] = 60  # liver
    hu[_ell(x, y, 0.5, -0.05, 0.15, 0.2) <= 1] = 50  # spleen
    for side in (-1, 1):
        hu[_ell(x, y, side * 0.3, 0.3, 0.1, 0.14) <= 1] = 160  # kidneys
    hu[_ell(x, y, 0.02, 0.2, 0.05, 0.05) <= 1] = 200
    hu[_ell(x, y, 0, 0.45, 0.1, 0.09) <= 1] = 700
    hu[(smooth_noise(rng, x.shape[0], 30) > 0.86) & (_ell(x, y, 0.15, 0.0, 0.3, 0.25) <= 1)] = -950  # bowel gas
    return {"img": hu, "x": x, "y": y, "body": inside}


def _spine(x: np.ndarray, y: np.ndarray, z: float, rng: np.random.Generator) -> Canvas:
    hu = np.full(x.shape, 40.0, np.float32)
    hu[np.abs(x - 0.45) < 0.12] = 10  # canal
    bodies = np.zeros(x.shape, bool)
    for cy in np.linspace(-0.85, 0.85, 7):
        b = (np.abs(x + 0.05) < 0.3) & (np.abs(y - cy) < 0.1)
        hu[b] = 320
        bodies |= b
        hu[(np.abs(x + 0.05) < 0.3) & (np.abs(y - cy - 0.13) < 0.025)] = 90  # disc
    hu += 15 * smooth_noise(rng, x.shape[0], 20)
    return {"img": hu, "x": x, "y": y, "body": bodies}


def _breast(x: np.ndarray, y: np.ndarray, z: float, rng: np.random.Generator) -> Canvas:
    img = np.full(x.shape, 0.0, np.float32)
    breast = _ell(x, y, -1.0, 0, 1.6, 0.95) <= 1
    img[breast] = 900 + 1400 * smooth_noise(rng, x.shape[0], 18)[breast]
    return {"img": img, "x": x, "y": y, "body": breast & (_ell(x, y, -1.0, 0, 1.3, 0.8) <= 1)}


def _fundus(x: np.ndarray, y: np.ndarray, z: float, rng: np.random.Generator) -> Canvas:
    r = np.sqrt(x**2 + y**2)
    img = np.zeros((*x.shape, 3), np.float32)
    disc = r < 0.92
    img[disc] = np.stack([200 - 70 * r, 80 - 30 * r, 30 + 0 * r], axis=-1)[disc]
    img[_ell(x, y, 0.35, 0.0, 0.11, 0.13) <= 1] = (250, 220, 140)  # optic disc
    vessels = (np.abs(np.sin(7 * np.arctan2(y, x - 0.35) + 3 * smooth_noise(rng, x.shape[0], 6))) < 0.12) & disc
    img[vessels & (r > 0.15)] = (140, 30, 25)
    return {"img": img, "x": x, "y": y, "body": disc & (r < 0.8)}


def _skin(x: np.ndarray, y: np.ndarray, z: float, rng: np.random.Generator) -> Canvas:
    img = np.empty((*x.shape, 3), np.float32)
    img[:] = (224, 172, 140)
    img += (30 * (smooth_noise(rng, x.shape[0], 32) - 0.5))[..., None]
    return {"img": img, "x": x, "y": y, "body": np.sqrt(x**2 + y**2) < 0.7}


def _slide(x: np.ndarray, y: np.ndarray, z: float, rng: np.random.Generator) -> Canvas:
    img = np.empty((*x.shape, 3), np.float32)
    img[:] = (235, 180, 205)
    img += (40 * (smooth_noise(rng, x.shape[0], 32) - 0.5))[..., None]
    return {"img": img, "x": x, "y": y, "body": np.ones(x.shape, bool)}


BACKGROUNDS: dict[str, Callable[[np.ndarray, np.ndarray, float, np.random.Generator], Canvas]] = {
    "lung": _chest,
    "brain": _head,
    "abdomen": _abdomen,
    "spine": _spine,
    "breast": _breast,
    "eye": _fundus,
    "skin": _skin,
    "pathology": _slide,
}


# -- findings: (canvas, rng, size scale, params) -> None ------------------------------------------
def _spot(c: Canvas, rng: np.random.Generator) -> tuple[float, float]:
    """A random point inside the canvas's body mask."""
    ys, xs = np.nonzero(c["body"])
    if len(xs) == 0:
        return 0.0, 0.0
    i = int(rng.integers(len(xs)))
    return float(c["x"][ys[i], xs[i]]), float(c["y"][ys[i], xs[i]])


def blob(
    c: Canvas,
    rng: np.random.Generator,
    k: float,
    *,
    r: float,
    val: float | tuple[float, ...],
    spic: float = 0.0,
    ecc: float = 1.0,
    alpha: float = 1.0,
) -> None:
    """A mass or nodule: an ellipse of radius ``r`` whose border carries ``spic`` spiculation."""
    cx, cy = _spot(c, rng)
    x, y = c["x"], c["y"]
    rr = r * k * rng.uniform(0.8, 1.2)
    theta = np.arctan2(y - cy, x - cx)
    border = 1 + spic * np.maximum(0, np.sin(rng.integers(5, 11) * theta + rng.uniform(0, 6))) ** 3
    d = np.sqrt(_ell(x, y, cx, cy, rr, rr * ecc, rng.uniform(0, np.pi)))
    _paint(c, d <= border, val, alpha)


def ring(
    c: Canvas,
    rng: np.random.Generator,
    k: float,
    *,
    r: float,
    wall: float,
    val: float | tuple[float, ...],
    core: float | tuple[float, ...],
    halo: float | tuple[float, ...] | None = None,
    irregular: float = 0.0,
) -> None:
    """A ring-enhancing lesion or cavity: a wall of ``val`` around a ``core``, an optional halo (oedema)."""
    cx, cy = _spot(c, rng)
    x, y = c["x"], c["y"]
    rr = r * k * rng.uniform(0.85, 1.15)
    wobble = 1 + irregular * (smooth_noise(rng, x.shape[0], 10) - 0.5)
    d = np.sqrt(_ell(x, y, cx, cy, rr, rr * rng.uniform(0.8, 1.0), rng.uniform(0, np.pi))) * wobble
    if halo is not None:
        _paint(c, d <= 1.9, halo, 0.8)
    _paint(c, d <= 1.0, val)
    _paint(c, d <= 1.0 - wall / max(rr, 1e-3), core)


def patch(
    c: Canvas,
    rng: np.random.Generator,
    k: float,
    *,
    r: float,
    val: float | tuple[float, ...],
    bronchograms: bool = False,
    alpha: float = 1.0,
) -> None:
    """An irregular area (consolidation, infiltrate, stranding), optionally with air bronchograms."""
    cx, cy = _spot(c, rng)
    x, y = c["x"], c["y"]
    rr = r * k * rng.uniform(0.8, 1.2)
    d = np.sqrt(_ell(x, y, cx, cy, rr, rr * rng.uniform(0.6, 1.0), rng.uniform(0, np.pi)))
    area = (d + 0.6 * (smooth_noise(rng, x.shape[0], 12) - 0.5)) <= 1.0
    _paint(c, area & c["body"], val, alpha)
    if bronchograms:
        lines = np.abs(np.sin(9 * (x - cx) + 4 * (y - cy) + 2 * smooth_noise(rng, x.shape[0], 8))) < 0.1
        _paint(c, area & lines & (d < 0.8), -900.0)


def dots(
    c: Canvas,
    rng: np.random.Generator,
    k: float,
    *,
    n: int,
    r: float,
    val: float | tuple[float, ...],
    spread: float = 1.0,
) -> None:
    """A cluster of ``n`` small round dots (calcifications, nodules, drusen, nuclei)."""
    cx, cy = _spot(c, rng)
    for _ in range(max(1, round(n * k))):
        px, py = cx + rng.normal(0, 0.12 * spread), cy + rng.normal(0, 0.12 * spread)
        _paint(c, _ell(c["x"], c["y"], px, py, r, r * rng.uniform(0.7, 1.3)) <= 1, val)


def rim(
    c: Canvas,
    rng: np.random.Generator,
    k: float,
    *,
    width: float,
    val: float | tuple[float, ...],
    side: str = "lateral",
) -> None:
    """A crescent along the edge of the body mask (pneumothorax air, effusion fluid, subdural blood)."""
    from scipy.ndimage import distance_transform_edt

    body = c["body"]
    depth = distance_transform_edt(body) / body.shape[0] * 2  # normalised units
    x, y = c["x"], c["y"]
    sign = rng.choice([-1, 1])
    where = (x * sign > 0.05) if side == "lateral" else (y > 0.05)
    _paint(c, body & where & (depth < width * k), val)


def reticulation(c: Canvas, rng: np.random.Generator, k: float, *, amount: float, val: float) -> None:
    """A net of fine lines and small cysts at the edge of the body mask (fibrosis)."""
    from scipy.ndimage import distance_transform_edt

    body = c["body"]
    depth = distance_transform_edt(body) / body.shape[0] * 2
    net = np.abs(np.sin(40 * c["x"]) * np.sin(40 * c["y"] + 3 * smooth_noise(rng, body.shape[0], 10))) < 0.25
    _paint(c, body & (depth < amount * k) & net, val)


def shrink(c: Canvas, rng: np.random.Generator, k: float, *, level: float, val: float) -> None:
    """One vertebral body loses height (compression or collapse): its upper part becomes ``val``."""
    x, y = c["x"], c["y"]
    cy = float(np.linspace(-0.85, 0.85, 7)[int(rng.integers(2, 5))])
    loss = min(0.18, level * k)
    _paint(c, (np.abs(x + 0.05) < 0.3) & (y > cy - 0.1) & (y < cy - 0.1 + loss), val)


def shade(c: Canvas, rng: np.random.Generator, k: float, *, delta: float) -> None:
    """Shift every value inside the body mask by ``delta`` (emphysema darkens the lungs)."""
    c["img"][c["body"]] += delta


FINDINGS: dict[str, Callable[..., None]] = {
    "blob": blob,
    "ring": ring,
    "patch": patch,
    "dots": dots,
    "rim": rim,
    "reticulation": reticulation,
    "shrink": shrink,
    "shade": shade,
}
