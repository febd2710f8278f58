"""Image encoders: pixels -> the 512-d vector the similar-case index expects.

``imaging.encoder`` picks one:

- ``radiomics`` (default): :class:`core.imaging.radiomics.RadiomicsEncoder`, intensity,
  texture and shape features computed from the pixels with scikit-image, projected to
  512-d; offline, no weights. The demo scans and historical cases are embedded with it
  too, so an imported scan has similar cases at once.
- ``local``: :class:`LocalModelEncoder`, a TorchScript or ONNX file the user
  supplies, with its preprocessing declared in settings (``python -m core cases reembed``
  re-embeds the historical cases from their images with it).
- ``none``: no embedding.

A scan's embedding is set only when the encoder's id equals the case index's
encoder (:func:`index_encoder_id`: ``search.encoder_id``, or with ``auto`` the
configured encoder's own id); otherwise the similar-case search answers with the
contract's fixed "No comparable cases" result and the reason "no imaging
embedding", and the import says why. No encoder here ever reads text.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np

from core.errors import ConfigError, EmbeddingError
from core.imaging.render import auto_window, to_unit
from core.settings import Settings
from core.store.models import EMBEDDING_DIM, validate_embedding

__all__ = ["ImageEncoder", "LocalModelEncoder", "embed_series", "index_encoder_id", "make_image_encoder"]


@runtime_checkable
class ImageEncoder(Protocol):
    """Turns one image (rows x cols grey, or rows x cols x 3 RGB) into a unit 512-d vector."""

    encoder_id: str

    def encode(self, image: np.ndarray) -> np.ndarray:
        """A float32 vector of length 512."""
        ...


def _grey_unit(image: np.ndarray) -> np.ndarray:
    """``image`` as grey values in 0..1 (grey images auto-windowed, colour averaged)."""
    arr = np.asarray(image, dtype=np.float32)
    if arr.ndim == 3:
        return arr.mean(axis=2) / 255.0
    return to_unit(arr, *auto_window(arr))


def _resize(grey: np.ndarray, size: int) -> np.ndarray:
    from PIL import Image

    img = Image.fromarray((grey * 255).astype(np.uint8)).resize((size, size), Image.Resampling.BILINEAR)
    return np.asarray(img, dtype=np.float32) / 255.0


def _unit(vec: np.ndarray) -> np.ndarray:
    vec = np.asarray(vec, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vec))
    if not np.isfinite(norm) or norm == 0:
        raise EmbeddingError("The image encoder returned an all-zero or non-finite vector")
    return validate_embedding(vec / norm)


class LocalModelEncoder:
    """A TorchScript (``.pt``/``.ts``) or ONNX (``.onnx``) model file; never downloaded.

    Preprocessing (settings): grey 0..1 (auto window), resized to ``input_size``
    squared, ``(x - mean) / std``, repeated to ``channels``; input shape
    ``(1, channels, size, size)`` float32; the output is flattened and must have 512 values.
    """

    def __init__(self, path: Path, *, size: int, channels: int, mean: float, std: float, version: str) -> None:
        if not path.is_file():
            raise ConfigError(f"Image encoder file {path} does not exist", hint="Set imaging.encoder_model_path.")
        self.path, self.size, self.channels, self.mean, self.std = path, size, channels, mean, std
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
        self.encoder_id = f"local:{path.name}:{digest}@{version}"
        self._run = self._load()

    def _load(self) -> Any:
        if self.path.suffix == ".onnx":
            try:
                import onnxruntime as ort
            except ImportError as exc:
                raise ConfigError(
                    "An ONNX image encoder needs onnxruntime", hint="pip install onnxruntime (CPU) into the venv."
                ) from exc
            session = ort.InferenceSession(str(self.path), providers=["CPUExecutionProvider"])
            name = session.get_inputs()[0].name
            return lambda x: session.run(None, {name: x})[0]
        import torch

        model = torch.jit.load(str(self.path), map_location="cpu").eval()

        def run(x: np.ndarray) -> np.ndarray:
            with torch.inference_mode():
                return model(torch.from_numpy(x)).cpu().numpy()

        return run

    def encode(self, image: np.ndarray) -> np.ndarray:
        """Run the model on one preprocessed image."""
        x = (_resize(_grey_unit(image), self.size) - self.mean) / self.std
        x = np.repeat(x[np.newaxis, np.newaxis], self.channels, axis=1).astype(np.float32)
        out = np.asarray(self._run(x), dtype=np.float32).reshape(-1)
        if out.shape[0] != EMBEDDING_DIM:
            raise EmbeddingError(f"The image encoder returned {out.shape[0]} values, expected {EMBEDDING_DIM}")
        return _unit(out)


def make_image_encoder(settings: Settings) -> ImageEncoder | None:
    """The encoder ``imaging.encoder`` names (``None`` for ``none``)."""
    s = settings.imaging
    if s.encoder == "none":
        return None
    if s.encoder == "radiomics":
        from core.imaging.radiomics import RadiomicsEncoder

        return RadiomicsEncoder()
    if s.encoder_model_path is None:
        raise ConfigError("imaging.encoder is 'local' but imaging.encoder_model_path is empty")
    return LocalModelEncoder(
        settings.paths.resolve(s.encoder_model_path),
        size=s.encoder_input_size,
        channels=s.encoder_channels,
        mean=s.encoder_mean,
        std=s.encoder_std,
        version=s.encoder_version,
    )


_IDS: dict[str, str] = {}


def index_encoder_id(settings: Settings) -> str:
    """The encoder id the case index is built for: ``search.encoder_id``, or the configured encoder's with ``auto``."""
    if settings.search.encoder_id != "auto":
        return settings.search.encoder_id
    key = settings.imaging.model_dump_json() + str(settings.paths.resolve(settings.paths.data_dir))
    if key not in _IDS:  # a local model is loaded once per process to read its id
        enc = make_image_encoder(settings)
        _IDS[key] = enc.encoder_id if enc is not None else "none"
    return _IDS[key]


def embed_series(encoder: ImageEncoder | None, settings: Settings, scans: list[Any]) -> str:
    """Embed each series' middle image; set a scan's embedding when the encoder matches the index.

    ``scans`` holds ``(Scan, [series out], patient)`` from the importer. Returns a
    sentence for the user saying what happened and why.
    """
    if encoder is None:
        return (
            "No image encoder is configured (imaging.encoder = none): the scans have no embedding, so "
            "similar-case search answers 'No comparable cases' for them."
        )
    target = index_encoder_id(settings)
    matches = encoder.encoder_id == target
    for scan, series, _person in scans:
        for out in series:
            if out.middle is None:
                continue
            vec = encoder.encode(np.asarray(out.middle))
            out.row.embedding, out.row.encoder_id = vec, encoder.encoder_id
            if matches and scan.embedding is None:
                scan.embedding = vec
    if matches:
        return f"Embedded with {encoder.encoder_id}, the case index's encoder: similar cases are available."
    return (
        f"Embedded with {encoder.encoder_id}, kept with the series; the case index was built with "
        f"{target}, so the scans get no embedding and similar-case search answers "
        "'No comparable cases' for them."
    )
