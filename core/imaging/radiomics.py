"""The default image encoder: hand-crafted radiomics features from the pixels, no weights.

Every image (a CT slice in Hounsfield units, an MR or X-ray frame, an RGB photograph)
goes through the same steps, so demo scans, imported DICOM and historical cases
share one embedding space:

1. grey levels (colour averaged), resized to 128x128 by area averaging, scaled to
   0..1 between the 1st and 99th percentile (a linear rescale or a window change
   that keeps those two percentiles moves nothing);
2. six feature groups (:data:`GROUPS`), all invariant to mirror flips:
   intensity (histogram and moments), GLCM texture (scikit-image
   ``graycomatrix``/``graycoprops``, averaged over four angles), LBP texture
   (rotation-invariant uniform patterns), the radial power spectrum (structure
   size), shape (``regionprops`` of bright and dark regions: count, size,
   eccentricity, solidity, holes, i.e. rings) and colour (zero for grey images);
3. each feature standardised by fixed reference constants (``radiomics_reference.json``,
   written by ``python -m core.imaging.radiomics_fit`` from the synthetic demo renderings
   and recorded in the encoder id by its sha256), weighted per group;
4. projected to 512-d by a fixed orthonormal matrix (seeded), so the cosine of two
   embeddings is the cosine of their weighted feature vectors, and L2-normalised.

Step 4 is invertible on its span: :meth:`RadiomicsEncoder.drivers` recovers the
weighted features from two stored embeddings and says which groups make them close.
Nothing here reads a label, a report or any text.

Library choice: pyradiomics has no wheel for this Python and its sdist does not
build here; SimpleITK has the filters but no GLCM/LBP in its Python wheel's
convenience API; scikit-image (0.26, BSD, actively released) has GLCM, LBP and
regionprops and is pinned in requirements.txt.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

import numpy as np

from core.errors import EmbeddingError
from core.store.models import EMBEDDING_DIM

__all__ = ["GROUPS", "RadiomicsEncoder", "feature_names", "raw_features"]

SIZE = 128
REFERENCE = Path(__file__).with_name("radiomics_reference.json")
_GLCM_PROPS = ("contrast", "dissimilarity", "homogeneity", "energy", "correlation", "ASM")
_DISTANCES = (1, 2, 4)
_BANDS = 8
# group -> (what a doctor reads, weight); weights chosen so that no one group dominates the cosine
GROUPS: dict[str, tuple[str, float]] = {
    "intensity": ("intensity", 1.0),
    "glcm": ("texture", 1.0),
    "lbp": ("fine texture", 0.8),
    "spectrum": ("structure size", 0.8),
    "shape": ("shape (size, roundness, rings)", 1.2),
    "colour": ("colour", 0.8),
}


def _grey_and_rgb(image: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    arr = np.asarray(image, dtype=np.float32)
    if arr.ndim == 3 and arr.shape[2] in (3, 4):
        rgb = arr[..., :3]
        return rgb.mean(axis=2), rgb
    if arr.ndim != 2:
        raise EmbeddingError(f"The image encoder needs one 2-D image, got shape {arr.shape}")
    return arr, None


def _resize(arr: np.ndarray) -> np.ndarray:
    from skimage.transform import downscale_local_mean, resize

    if arr.shape[:2] == (SIZE, SIZE):
        return arr.astype(np.float32)
    fy, fx = arr.shape[0] / SIZE, arr.shape[1] / SIZE
    if fy == fx and fy.is_integer():  # an exact multiple: area averaging (a 256 image reads like a 128 one)
        f = int(fy)
        return downscale_local_mean(arr, (f, f, *([1] * (arr.ndim - 2)))).astype(np.float32)
    aa = min(arr.shape[0], arr.shape[1]) > SIZE
    return resize(arr, (SIZE, SIZE, *arr.shape[2:]), order=1, anti_aliasing=aa, preserve_range=True).astype(np.float32)


def _unit(grey: np.ndarray) -> np.ndarray:
    lo, hi = np.percentile(grey, (1, 99))
    if not np.isfinite(lo) or hi - lo < 1e-6:
        return np.zeros_like(grey)
    return np.clip((grey - lo) / (hi - lo), 0.0, 1.0)


def _intensity(u: np.ndarray) -> list[float]:
    hist = np.histogram(u, bins=16, range=(0.0, 1.0))[0] / u.size
    m, s = float(u.mean()), float(u.std()) + 1e-6
    z = (u - m) / s
    pct = np.percentile(u, (10, 25, 50, 75, 90))
    return [*np.sqrt(hist), m, s, float((z**3).mean()), float(np.log1p((z**4).mean())), *pct]


def _glcm(u: np.ndarray) -> list[float]:
    from skimage.feature import graycomatrix, graycoprops

    q = np.minimum((u * 16).astype(np.uint8), 15)
    mat = graycomatrix(q, _DISTANCES, (0, np.pi / 4, np.pi / 2, 3 * np.pi / 4), levels=16, symmetric=True, normed=True)
    out: list[float] = []
    for prop in _GLCM_PROPS:
        vals = graycoprops(mat, prop).mean(axis=1)  # per distance, mean over angles (flip-invariant)
        out += [float(np.log1p(v)) if prop == "contrast" else float(v) for v in vals]
    return out


def _lbp(u: np.ndarray) -> list[float]:
    from skimage.feature import local_binary_pattern

    out: list[float] = []
    q = (u * 255).astype(np.uint8)
    for p, r in ((8, 1),):  # (16, 2) added little and cost 2x the time
        codes = local_binary_pattern(q, p, r, method="uniform")
        out += list(np.sqrt(np.bincount(codes.astype(np.int64).ravel(), minlength=p + 2)[: p + 2] / codes.size))
    return out


@lru_cache(maxsize=1)
def _radius_bands() -> np.ndarray:
    f = np.fft.fftfreq(SIZE)
    r = np.sqrt(f[:, None] ** 2 + f[None, :] ** 2)
    edges = np.geomspace(1 / SIZE, 0.5, _BANDS + 1)
    return np.digitize(r, edges) - 1  # -1 is the DC term, dropped


def _spectrum(u: np.ndarray) -> list[float]:
    power = np.abs(np.fft.fft2(u - u.mean())) ** 2
    bands = _radius_bands()
    energy = np.array([power[bands == b].sum() for b in range(_BANDS)])
    return list(np.log1p(energy / (energy.sum() + 1e-9) * 100))


def _regions(mask: np.ndarray) -> list[float]:
    from skimage.measure import label, regionprops

    lab = label(mask)
    sizes = np.bincount(lab.ravel())[1:]
    kept = np.flatnonzero(sizes >= 6) + 1
    if len(kept) == 0:
        return [0.0] * 7
    top = kept[np.argsort(-sizes[kept - 1])[:3]]
    props = regionprops(np.where(np.isin(lab, top), lab, 0))  # the three largest only: regionprops is the cost
    props.sort(key=lambda p: -p.area)
    big = props[0]
    return [
        float(np.log1p(len(kept))),
        float(np.sqrt(big.area / mask.size)),
        float(big.eccentricity),
        float(big.solidity),
        float(min(big.perimeter**2 / (4 * np.pi * big.area), 10.0)),
        float(sum(1 for p in props if p.euler_number <= 0)),  # regions with a hole: rings
        float(np.sqrt(sizes[kept - 1].sum() / mask.size)),
    ]


def _shape(u: np.ndarray) -> list[float]:
    from scipy.ndimage import gaussian_filter

    smooth = gaussian_filter(u, 1.0)
    local = smooth - gaussian_filter(u, 6.0, truncate=2.0)  # bright/dark relative to the surroundings
    s = float(local.std()) + 1e-6
    return [*_regions(local > 2 * s), *_regions(local < -2 * s)]


def _colour(rgb: np.ndarray | None) -> list[float]:
    if rgb is None:
        return [0.0] * 9
    unit = np.clip(rgb / 255.0, 0.0, 1.0)
    total = unit.sum(axis=2) + 1e-6
    chroma = unit / total[..., None]  # brightness-free colour
    out = [float(chroma[..., c].mean()) for c in range(3)] + [float(chroma[..., c].std()) for c in range(3)]
    return out + [float(unit[..., c].std()) for c in range(3)]


_EXTRACTORS = (("intensity", _intensity), ("glcm", _glcm), ("lbp", _lbp), ("spectrum", _spectrum), ("shape", _shape))


def raw_features(image: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """Unstandardised features of one image and the group of each (same order every time)."""
    grey, rgb = _grey_and_rgb(image)
    if not np.isfinite(grey).all():
        raise EmbeddingError("The image holds non-finite values")
    u = _unit(_resize(grey))
    values: list[float] = []
    groups: list[str] = []
    for name, fn in _EXTRACTORS:
        part = fn(u)
        values += part
        groups += [name] * len(part)
    col = _colour(None if rgb is None else _resize(rgb))
    return np.array(values + col, dtype=np.float64), groups + ["colour"] * len(col)


@lru_cache(maxsize=1)
def feature_names() -> list[str]:
    """The group of every feature position."""
    return raw_features(np.zeros((8, 8), np.float32) + np.eye(8, dtype=np.float32))[1]


@lru_cache(maxsize=1)
def _reference() -> tuple[np.ndarray, np.ndarray, str]:
    data = REFERENCE.read_bytes()
    ref = json.loads(data)
    mean, std = np.array(ref["mean"]), np.array(ref["std"])
    if len(mean) != len(feature_names()):
        raise EmbeddingError(
            f"{REFERENCE.name} holds {len(mean)} features, the encoder computes {len(feature_names())}",
            hint="Run `python -m core.imaging.radiomics_fit` after changing the features.",
        )
    return mean, np.maximum(std, 1e-6), hashlib.sha256(data).hexdigest()[:8]


class RadiomicsEncoder:
    """Radiomics features (scikit-image) standardised, weighted and projected to 512-d; no weights to download."""

    VERSION = "1"

    def __init__(self, seed: int = 512) -> None:
        self._mean, self._std, digest = _reference()
        groups = np.array(feature_names())
        self._weights = np.zeros(len(groups))
        for g, (_label, w) in GROUPS.items():
            idx = groups == g
            self._weights[idx] = w / np.sqrt(max(int(idx.sum()), 1))
        self._groups = groups
        gauss = np.random.default_rng(seed).standard_normal((EMBEDDING_DIM, len(groups)))
        self._proj = np.linalg.qr(gauss)[0]  # 512 x D, orthonormal columns: cosines are kept
        self.encoder_id = f"radiomics-skimage-v{self.VERSION}(features={len(groups)},ref={digest},seed={seed})"

    def weighted(self, image: np.ndarray) -> np.ndarray:
        """The standardised, weighted feature vector (before projection)."""
        raw, _ = raw_features(image)
        z = np.clip((raw - self._mean) / self._std, -6, 6)
        return z * self._weights

    def encode(self, image: np.ndarray) -> np.ndarray:
        """A unit float32 512-d vector from the pixels of ``image``."""
        vec = self._proj @ self.weighted(image)
        norm = float(np.linalg.norm(vec))
        if not np.isfinite(norm) or norm == 0:
            raise EmbeddingError("The image encoder returned an all-zero vector (a blank image?)")
        return (vec / norm).astype(np.float32)

    def drivers(self, a: np.ndarray, b: np.ndarray, top: int = 2) -> list[tuple[str, float]]:
        """(group label, share of the cosine) for the groups that make embeddings ``a`` and ``b`` close.

        Works from the stored 512-d vectors: the projection's transpose recovers the
        unit weighted features, whose per-group products sum to the cosine.
        """
        fa, fb = self._proj.T @ np.asarray(a, np.float64), self._proj.T @ np.asarray(b, np.float64)
        parts = {g: float((fa * fb)[self._groups == g].sum()) for g in GROUPS}
        positive = {g: v for g, v in parts.items() if v > 0}
        total = sum(positive.values())
        if total <= 0:
            return []
        ranked = sorted(positive.items(), key=lambda kv: -kv[1])[:top]
        return [(GROUPS[g][0], v / total) for g, v in ranked]
