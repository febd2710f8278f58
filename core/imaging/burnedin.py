"""Burned-in text (a name drawn into the pixels) found by OCR when the file does not declare it.

``BurnedInAnnotation`` is optional and often absent: pydicom's ``examples_ybr_color.dcm`` draws
its patient's name into every frame without it. Every DICOM import and the demo images therefore
pass :func:`scrub_burned_in` after decoding and before de-identification:

- up to ``imaging.ocr_frames`` frames, evenly spaced, are rendered to 8-bit grey, enlarged and
  read by tesseract twice (``pytesseract``; Debian's ``tesseract-ocr``, installed by ``make ocr-deps``);
- a word of 3+ letters or digits read with confidence >= 60 is text, and so is any word read at
  confidence >= 30 within 24 pixels of one (a name in a small font is often read badly: "PLA"
  came back as "mPa", 33%, just above "Gen", 96%); the boxes (padded) of every frame read are
  blacked out in all frames, since the annotation of a cine stays put;
- ``imaging.burned_in_ocr``: ``redact`` blacks the boxes out in every frame of both the display
  frames and the DICOM pixel data (written back uncompressed, ``BurnedInAnnotation`` set to NO);
  ``refuse`` raises :class:`ImageRejectedError`; ``off`` trusts the flag alone.

Without tesseract an import whose file lacks the flag is refused (fail closed) unless the setting
is ``off``.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from typing import Any

import numpy as np

from core.errors import ImageRejectedError

__all__ = ["TextBox", "find_text", "scrub_burned_in"]

_MIN_CONFIDENCE = 60.0
_PAD = 4


@dataclass(frozen=True)
class TextBox:
    """A word read in the pixels: its box (row, col, height, width, in frame pixels) and the word."""

    top: int
    left: int
    height: int
    width: int
    word: str


def _grey8(frame: np.ndarray) -> np.ndarray:
    """A frame as 8-bit grey, full range (colour frames averaged)."""
    values = frame.astype(np.float32)
    if values.ndim == 3:
        values = values.mean(axis=2)
    lo, hi = float(np.percentile(values, 1)), float(np.percentile(values, 99.5))
    scaled = np.clip((values - lo) / max(hi - lo, 1e-6), 0, 1) * 255
    return scaled.astype(np.uint8)


_PASSES = (("11", 2), ("6", 3))  # (tesseract page mode, enlargement): sparse text, then lines; each reads what the other misses


def find_text(frames: np.ndarray, max_frames: int) -> list[TextBox]:
    """Words read by OCR in up to ``max_frames`` evenly spaced frames of ``frames`` (n, rows, cols[, 3]).

    Words of 3+ letters or digits read with confidence >= 60, and words of 2+ read with confidence
    >= 30 near one of those (see the module docstring).
    """
    import pytesseract
    from PIL import Image

    n = frames.shape[0]
    picks = sorted({round(i * (n - 1) / max(max_frames - 1, 1)) for i in range(min(n, max_frames))})
    found: list[TextBox] = []
    for i in picks:
        grey = Image.fromarray(_grey8(frames[i]))
        words: list[tuple[TextBox, float]] = []
        for psm, scale in _PASSES:
            big = grey.resize((grey.width * scale, grey.height * scale), Image.Resampling.LANCZOS)
            data = pytesseract.image_to_data(big, output_type=pytesseract.Output.DICT, config=f"--psm {psm}")
            for word, conf, top, left, h, w in zip(data["text"], data["conf"], data["top"], data["left"],
                                                   data["height"], data["width"], strict=True):  # fmt: skip
                word = str(word).strip()
                if sum(ch.isalnum() for ch in word) >= 2 and float(conf) >= 30:
                    box = TextBox(top // scale, left // scale, -(-h // scale), -(-w // scale), word)
                    words.append((box, float(conf)))
        sure = [b for b, c in words if c >= _MIN_CONFIDENCE and sum(ch.isalnum() for ch in b.word) >= 3]
        found += [b for b, c in words if c >= _MIN_CONFIDENCE or any(_near(b, s) for s in sure)]
    return found


def _near(a: TextBox, b: TextBox, gap: int = 24) -> bool:
    """Whether two boxes lie within ``gap`` pixels of each other (an annotation's neighbouring word)."""
    return (a.top <= b.top + b.height + gap and b.top <= a.top + a.height + gap
            and a.left <= b.left + b.width + gap and b.left <= a.left + a.width + gap)  # fmt: skip


def _black_out(arr: np.ndarray, boxes: list[TextBox], frame_axis: bool) -> np.ndarray:
    out = arr.copy()
    for b in boxes:
        rows = slice(max(0, b.top - _PAD), b.top + b.height + _PAD)
        cols = slice(max(0, b.left - _PAD), b.left + b.width + _PAD)
        if frame_axis:
            out[:, rows, cols, ...] = out.min()
        else:
            out[rows, cols, ...] = out.min()
    return out


def scrub_burned_in(ds: Any, frames: np.ndarray, name: str, policy: str, max_frames: int) -> tuple[np.ndarray, int]:
    """``(frames to show, words found)`` after the OCR check of one decoded file (see the module docstring).

    With ``redact`` the text boxes are blacked out in ``frames`` and in ``ds``'s pixel data.
    """
    if policy == "off" or str(ds.get("BurnedInAnnotation") or "").upper() == "YES":
        return frames, 0  # a declared annotation is the import check's to refuse or confirm
    if shutil.which("tesseract") is None:
        raise ImageRejectedError(
            f"{name}: burned-in text cannot be checked: tesseract is not installed",
            hint="Install it (`make ocr-deps`, Debian package tesseract-ocr), or set imaging.burned_in_ocr to off "
            "if every file's BurnedInAnnotation flag is trustworthy. Nothing was imported.",
        )
    boxes = find_text(frames, max_frames)
    if not boxes:
        return frames, 0
    if policy == "refuse":
        raise ImageRejectedError(
            f"{name}: text is drawn into the pixels ({len(boxes)} word(s)) but the file does not declare it",
            hint="Remove the annotation at the modality or set imaging.burned_in_ocr to redact. Nothing was imported.",
        )
    _redact_dataset(ds, boxes)
    return _black_out(frames, boxes, frame_axis=True), len(boxes)


def _redact_dataset(ds: Any, boxes: list[TextBox]) -> None:
    """Black the boxes out in the stored pixel data too, written back uncompressed."""
    arr = ds.pixel_array
    frames_n = int(ds.get("NumberOfFrames") or 1)
    clean = _black_out(arr, boxes, frame_axis=frames_n > 1)
    colour = int(ds.SamplesPerPixel) == 3
    photometric = "RGB" if colour else str(ds.PhotometricInterpretation)
    ds.set_pixel_data(clean, photometric, int(ds.BitsStored) if not colour else 8, generate_instance_uid=False)
    ds.BurnedInAnnotation = "NO"
