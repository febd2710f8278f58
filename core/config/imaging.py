"""Settings group for medical images (registered in :mod:`core.settings` as ``imaging``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from core.config.common import Group

__all__ = ["ImagingSettings"]


class ImagingSettings(Group):
    """Image store, DICOM import limits, de-identification and the image encoder."""

    store_root: Path | None = Field(
        None,
        description="Root of the content-addressed image store; empty means `<data_dir>/images`. "
        "May be a mounted object store; with PostgreSQL every app replica must see the same root.",
    )
    max_file_mb: int = Field(200, ge=1, description="Largest single file `import-dicom` accepts, in MB.")
    max_study_mb: int = Field(
        2000, ge=1, description="Largest import (all files, zip members uncompressed), in MB; larger is refused."
    )
    max_files: int = Field(5000, ge=1, description="Most files one import may hold.")
    max_dimension: int = Field(8192, ge=16, description="Largest rows or columns an image may declare.")
    max_decoded_mb: int = Field(
        1024,
        ge=1,
        description="Largest decoded pixel size of one file (rows x columns x frames x samples x bytes), in MB: "
        "a small compressed file declaring more is refused as a decompression bomb before decoding.",
    )
    retain_longitudinal_dates: bool = Field(
        True,
        description="PS3.15 Annex E 'Retain Longitudinal Temporal Information with Modified Dates' option: "
        "dates are shifted by one secret offset per patient (intervals kept). Off: every date and time is removed.",
    )
    birth_date: Literal["remove", "year"] = Field(
        "remove",
        description="The patient's birth date in stored DICOM files: `remove` (emptied, the Annex E Basic Profile) "
        "or `year` (the original year kept as YYYY0101, for age-dependent reading).",
    )
    burned_in_ocr: Literal["redact", "refuse", "off"] = Field(
        "redact",
        description="DICOM pixels without BurnedInAnnotation=YES are read by OCR (tesseract): text found is blacked "
        "out in every frame (`redact`) or the file is refused (`refuse`); `off` trusts the flag alone.",
    )
    ocr_frames: int = Field(3, ge=1, le=1000, description="Frames of a multi-frame file read by OCR, evenly spaced.")
    thumbnail_px: int = Field(160, ge=32, le=512, description="Longest side of thumbnails, in pixels.")
    render_cache_entries: int = Field(
        512, ge=0, description="Rendered slices (per series, slice, window and size) kept in memory per process."
    )
    viewer_max_mb: float = Field(
        96.0,
        gt=0,
        description="Most pixel data, in MB, one series sends to the browser viewer at once (every frame, so "
        "scrolling never waits); a larger series is thinned to every k-th frame and says so.",
    )
    encoder: Literal["radiomics", "none", "local"] = Field(
        "radiomics",
        description="Image encoder for imported scans, demo scans and historical cases. `radiomics`: intensity, "
        "texture (GLCM, LBP) and shape features computed from the pixels with scikit-image, projected to 512-d "
        "(offline, no weights; docs/SIMILARITY.md); `none`: no embedding; `local`: the TorchScript or ONNX file in "
        "`encoder_model_path`. A scan gets the vector only when the encoder id is the case index's "
        "(`search.encoder_id`).",
    )
    encoder_model_path: Path | None = Field(
        None, description="TorchScript (.pt/.ts) or ONNX (.onnx) image encoder file; never downloaded."
    )
    encoder_version: str = Field("1", description="Version of the local encoder, recorded with every embedding.")
    encoder_input_size: int = Field(224, ge=8, description="Square input side the local encoder expects.")
    encoder_channels: Literal[1, 3] = Field(3, description="Input channels of the local encoder (grey is repeated).")
    encoder_mean: float = Field(0.5, description="Mean subtracted from 0..1 pixels before the local encoder.")
    encoder_std: float = Field(0.5, gt=0, description="Divisor applied after the mean.")
