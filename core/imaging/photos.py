"""Photographs (skin, eye, slides) as PNG or JPEG: decoded with Pillow, metadata stripped.

A photograph carries no patient identity the importer can read, so it needs
``--patient`` and ``--anatomy``. Its pixels are re-encoded as a plain PNG: EXIF
(camera serial, GPS position, time) and every other text chunk are dropped.
Pillow's decompression-bomb guard is set from ``imaging.max_decoded_mb``.
"""

from __future__ import annotations

import io
import warnings

import numpy as np

from core.config.imaging import ImagingSettings
from core.errors import ImageRejectedError

__all__ = ["is_photo", "read_photo"]

_MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff")


def is_photo(data: bytes) -> bool:
    """Whether ``data`` starts like a PNG or JPEG file."""
    return data.startswith(_MAGIC)


def read_photo(data: bytes, name: str, limits: ImagingSettings) -> tuple[np.ndarray, bytes]:
    """``(frames of shape (1, rows, cols, 3) uint8, clean PNG bytes)``; raises :class:`ImageRejectedError`."""
    from PIL import Image

    max_pixels = limits.max_decoded_mb * 1024 * 1024 // 3
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as img:
                w, h = img.size
                if w > limits.max_dimension or h > limits.max_dimension or w * h > max_pixels:
                    raise ImageRejectedError(f"{name}: {w}x{h} pixels is over the image limits")
                rgb = img.convert("RGB")
                rgb.load()
    except ImageRejectedError:
        raise
    except (OSError, ValueError, Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRejectedError(f"{name}: the image cannot be decoded ({exc})") from exc
    arr = np.asarray(rgb, dtype=np.uint8)[np.newaxis, ...]
    out = io.BytesIO()
    Image.fromarray(arr[0]).save(out, format="PNG")
    return arr, out.getvalue()
