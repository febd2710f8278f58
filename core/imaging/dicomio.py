"""Reading, checking and decoding one DICOM file, before anything is written.

Every check raises :class:`ImageRejectedError` naming the file and the reason:
not DICOM, no pixel module, dimensions or decoded size over the limits (a
decompression bomb is refused from its header, before decoding), truncated
pixel data, a transfer syntax no installed decoder handles. Decoding goes
through pydicom's pixel backends, which use the pylibjpeg plug-ins for JPEG,
JPEG-LS, JPEG 2000 and RLE.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.config.imaging import ImagingSettings
from core.errors import ImageRejectedError

__all__ = ["DecodedImage", "decode_pixels", "read_dicom", "window_from"]

_PIXEL_MODULE = ("Rows", "Columns", "BitsAllocated", "SamplesPerPixel", "PhotometricInterpretation")


@dataclass(frozen=True)
class DecodedImage:
    """Frames ready for display: ``(frames, rows, cols)`` in modality units, or ``(frames, rows, cols, 3)`` uint8."""

    frames: np.ndarray
    window: tuple[float, float] | None

    @property
    def is_colour(self) -> bool:
        """True for RGB frames (no window/level)."""
        return self.frames.ndim == 4


def read_dicom(data: bytes, name: str, limits: ImagingSettings) -> Any:
    """Parse ``data`` as a DICOM Part 10 file and check its pixel module against ``limits``."""
    import pydicom
    from pydicom.errors import InvalidDicomError

    if len(data) > limits.max_file_mb * 1024 * 1024:
        raise ImageRejectedError(f"{name}: {len(data) / 1e6:.0f} MB is over the {limits.max_file_mb} MB file limit")
    try:
        ds = pydicom.dcmread(io.BytesIO(data))
    except InvalidDicomError as exc:
        raise ImageRejectedError(f"{name}: not a DICOM file ({exc})") from exc
    except (ValueError, EOFError, OSError, KeyError, TypeError) as exc:
        raise ImageRejectedError(f"{name}: the DICOM header cannot be read ({exc})") from exc
    _check_pixel_module(ds, name, limits, len(data))
    return ds


def _check_pixel_module(ds: Any, name: str, limits: ImagingSettings, file_bytes: int) -> None:
    if "PixelData" not in ds:
        raise ImageRejectedError(
            f"{name}: no pixel data (a {ds.get('Modality', 'non-image')} object without the Image Pixel module)",
            hint="Only images can be imported (no structured reports, plans or waveforms). Nothing was imported.",
        )
    missing = [k for k in _PIXEL_MODULE if ds.get(k) in (None, "")]
    if missing:
        raise ImageRejectedError(f"{name}: the Image Pixel module lacks {', '.join(missing)}")
    if getattr(ds, "file_meta", None) is None or "TransferSyntaxUID" not in ds.file_meta:
        raise ImageRejectedError(f"{name}: no transfer syntax in the file meta information")
    rows, cols = int(ds.Rows), int(ds.Columns)
    frames = int(ds.get("NumberOfFrames") or 1) if str(ds.get("NumberOfFrames", "1")).strip().isdigit() else -1
    if frames < 1:
        raise ImageRejectedError(f"{name}: invalid NumberOfFrames {ds.get('NumberOfFrames')!r}")
    if not (0 < rows <= limits.max_dimension and 0 < cols <= limits.max_dimension):
        raise ImageRejectedError(f"{name}: {rows}x{cols} pixels is outside 1..{limits.max_dimension} per side")
    expected = rows * cols * frames * int(ds.SamplesPerPixel) * math.ceil(int(ds.BitsAllocated) / 8)
    if expected > limits.max_decoded_mb * 1024 * 1024:
        raise ImageRejectedError(
            f"{name}: decodes to {expected / 1e6:.0f} MB ({rows}x{cols}x{frames} frames), over the "
            f"{limits.max_decoded_mb} MB limit (from a {file_bytes / 1e6:.1f} MB file): refused as a decompression bomb"
        )
    if not ds.file_meta.TransferSyntaxUID.is_compressed:
        have = len(ds.PixelData)
        if int(ds.BitsAllocated) == 1:
            expected = math.ceil(rows * cols * frames * int(ds.SamplesPerPixel) / 8)
        elif str(ds.PhotometricInterpretation) == "YBR_FULL_422":  # chroma subsampled: 2 samples per pixel
            expected = expected * 2 // 3
        if have < expected:
            raise ImageRejectedError(f"{name}: truncated pixel data ({have} of {expected} bytes)")


def window_from(ds: Any) -> tuple[float, float] | None:
    """The first stored Window Center/Width, if any and valid."""
    c, w = ds.get("WindowCenter"), ds.get("WindowWidth")
    if c is None or w is None:
        return None
    try:
        c0, w0 = float(_first(c)), float(_first(w))
    except (TypeError, ValueError, IndexError):
        return None
    return (c0, w0) if w0 >= 1 else None


def _first(value: Any) -> Any:
    """The first of a multi-valued element (pydicom's MultiValue), or the value itself."""
    from pydicom.multival import MultiValue

    return value[0] if isinstance(value, MultiValue | list | tuple) else value


def decode_pixels(ds: Any, name: str) -> DecodedImage:
    """Decode every frame; grey images get the modality LUT (rescale slope/intercept) applied."""
    from pydicom.pixels import apply_color_lut, apply_rescale

    ts = ds.file_meta.TransferSyntaxUID
    try:
        arr = ds.pixel_array
    except (NotImplementedError, RuntimeError) as exc:
        raise ImageRejectedError(
            f"{name}: pixel data in {ts.name} cannot be decoded by the installed decoders ({str(exc).splitlines()[0]})",
            hint="Convert the study to an uncompressed or JPEG/JPEG 2000/RLE transfer syntax, or install "
            "python-gdcm; nothing was imported.",
        ) from exc
    except (ValueError, TypeError, AttributeError, KeyError, IndexError) as exc:
        raise ImageRejectedError(f"{name}: the pixel data is damaged ({exc})") from exc
    frames_n = int(ds.get("NumberOfFrames") or 1)
    photometric = str(ds.PhotometricInterpretation)
    if photometric == "PALETTE COLOR":
        arr = apply_color_lut(arr, ds)
    colour = int(ds.SamplesPerPixel) == 3 or photometric == "PALETTE COLOR"
    if frames_n == 1:
        arr = arr[np.newaxis, ...]
    if colour:
        return DecodedImage(_to_uint8(arr), None)
    values = np.asarray(apply_rescale(arr, ds), dtype=np.float32)
    if photometric == "MONOCHROME1":  # stored inverted: flip so that higher is brighter, as for MONOCHROME2
        values = values.max() + values.min() - values
        return DecodedImage(_compact(values), None)
    return DecodedImage(_compact(values), window_from(ds))


def _to_uint8(arr: np.ndarray) -> np.ndarray:
    if arr.dtype == np.uint8:
        return np.ascontiguousarray(arr)
    top = float(np.iinfo(arr.dtype).max) if np.issubdtype(arr.dtype, np.integer) else float(arr.max() or 1.0)
    return np.clip(arr.astype(np.float32) * (255.0 / max(top, 1.0)), 0, 255).astype(np.uint8)


def _compact(values: np.ndarray) -> np.ndarray:
    """int16 when the values are whole numbers in range (CT, MR), else float32."""
    if values.size and np.all(np.mod(values, 1) == 0) and values.min() >= -32768 and values.max() <= 32767:
        return values.astype(np.int16)
    return values.astype(np.float32)
