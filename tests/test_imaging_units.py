"""Imaging units: de-identification rules, window/level maths, rendering cache, anatomy mapping, encoders."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pydicom
import pytest
import torch
from PIL import Image

from core.errors import ConfigError, EmbeddingError, ImageRejectedError
from core.imaging.anatomy import anatomy_for
from core.imaging.deid import Deidentifier, burned_in, identity_hmac
from core.imaging.encoders import LocalModelEncoder, make_image_encoder
from core.imaging.radiomics import RadiomicsEncoder
from core.imaging.render import PRESETS, Renderer, apply_window, auto_window, render_png
from core.imaging.store import ImageStore
from tests.conftest import make_settings
from tests.imaging_support import packaged


def _ct() -> pydicom.Dataset:
    return pydicom.dcmread(packaged("CT_small.dcm"))


def test_uids_are_remapped_consistently_per_patient_seed() -> None:
    a, b, c = _ct(), _ct(), _ct()
    original = a.StudyInstanceUID
    Deidentifier("seed-1", retain_dates=True).apply(a, "a")
    Deidentifier("seed-1", retain_dates=True).apply(b, "b")
    Deidentifier("seed-2", retain_dates=True).apply(c, "c")
    assert a.StudyInstanceUID != original
    assert a.StudyInstanceUID == b.StudyInstanceUID and a.SOPInstanceUID == b.SOPInstanceUID
    assert a.StudyInstanceUID != c.StudyInstanceUID
    assert a.file_meta.MediaStorageSOPInstanceUID == a.SOPInstanceUID


def test_dates_shift_by_one_offset_and_identity_is_replaced() -> None:
    ds = _ct()
    study, content = (pydicom.valuerep.DA(ds.StudyDate), pydicom.valuerep.DA(ds.ContentDate))
    n_private = len([e for e in ds if e.tag.is_private])
    Deidentifier("seed-1", retain_dates=True).apply(ds, "f")
    new_study, new_content = pydicom.valuerep.DA(ds.StudyDate), pydicom.valuerep.DA(ds.ContentDate)
    assert new_study != study and (new_study - study) == (new_content - content)
    assert str(ds.PatientName) != "CompressedSamples^CT1" and ds.PatientID != "1CT1"
    assert n_private > 0 and not [e for e in ds if e.tag.is_private]
    assert ds.PatientIdentityRemoved == "YES" and ds.LongitudinalTemporalInformationModified == "MODIFIED"
    codes = [item.CodeValue for item in ds.DeidentificationMethodCodeSequence]
    assert codes == ["113100", "113107"]
    assert "StudyDescription" not in ds


def test_dates_removed_without_the_longitudinal_option() -> None:
    ds = _ct()
    Deidentifier("seed-1", retain_dates=False).apply(ds, "f")
    assert ds.StudyDate == "" and ds.ContentDate == ""
    assert ds.LongitudinalTemporalInformationModified == "REMOVED"
    assert [i.CodeValue for i in ds.DeidentificationMethodCodeSequence] == ["113100"]


def test_a_surviving_identifier_fails_closed() -> None:
    ds = _ct()
    # free text that neither dicognito nor the Annex E table touches (ContentDescription is not in Table E.1-1)
    ds.ContentDescription = "follow-up, patient CompressedSamples"
    with pytest.raises(ImageRejectedError, match="ContentDescription"):
        Deidentifier("seed-1", retain_dates=True).apply(ds, "f")


def test_identity_hash_is_keyed_and_burned_in_flag() -> None:
    ds = _ct()
    h1, h2 = identity_hmac(ds, b"k" * 32), identity_hmac(ds, b"j" * 32)
    assert h1 and h2 and h1 != h2 and "1CT1" not in h1
    anonymous = pydicom.Dataset()
    assert identity_hmac(anonymous, b"k" * 32) is None
    ds.BurnedInAnnotation = "YES"
    assert burned_in(ds) and not burned_in(_ct())


def test_anatomy_from_body_part_then_modality() -> None:
    ds = pydicom.Dataset()
    ds.BodyPartExamined, ds.Modality = "CHEST", "CT"
    assert anatomy_for(ds) == "lung"
    ds.BodyPartExamined = ""
    assert anatomy_for(ds) is None
    ds.Modality = "MG"
    assert anatomy_for(ds) == "breast"


def test_window_level_follows_the_dicom_linear_function() -> None:
    c, w = 40.0, 400.0
    lo, hi = c - 0.5 - (w - 1) / 2, c - 0.5 + (w - 1) / 2
    out = apply_window(np.array([lo - 1000, lo, c - 0.5, hi, hi + 1, 3000]), c, w)
    assert out.tolist() == [0, 0, 128, 255, 255, 255]
    mid = apply_window(np.array([c - 0.5 + (w - 1) / 4]), c, w)
    assert mid[0] == round(0.75 * 255)
    assert apply_window(np.array([-1.0, 5.0]), 0.0, 1.0).tolist() == [0, 255]  # width 1: a threshold
    lung, bone = PRESETS["lung"], PRESETS["bone"]
    assert (lung.center, lung.width) == (-600, 1500) and (bone.center, bone.width) == (400, 1800)


def test_auto_window_spans_the_data() -> None:
    x = np.linspace(-1000, 1000, 10_000).reshape(100, 100)
    c, w = auto_window(x)
    assert abs(c) < 1 and 1900 < w < 2001


def test_render_png_sizes_zoom_and_colour() -> None:
    grey = np.arange(64 * 32, dtype=np.int16).reshape(64, 32)
    img = Image.open(io.BytesIO(render_png(grey, PRESETS["abdomen"], size=128)))
    assert img.size == (64, 128) and img.mode == "L"
    zoomed = Image.open(io.BytesIO(render_png(grey, None, size=128, zoom=2.0)))
    assert zoomed.size == (64, 128)  # the centre half, scaled back up
    colour = Image.open(io.BytesIO(render_png(np.zeros((10, 20, 3), np.uint8), None, size=40)))
    assert colour.mode == "RGB" and colour.size == (40, 20)


def test_renderer_caches_per_frame_and_window(tmp_path: Path) -> None:
    store = ImageStore(tmp_path / "store")
    staged = store.stage()
    digest = staged.add_frames(np.random.default_rng(0).normal(0, 300, (3, 64, 64)).astype(np.int16))
    staged.publish()
    r = Renderer(store, max_entries=2)
    a = r.png(digest, 0, PRESETS["lung"], size=64)
    assert r.png(digest, 0, PRESETS["lung"], size=64) is a  # cached
    assert r.png(digest, 1, PRESETS["lung"], size=64) != a  # another slice
    r.png(digest, 2, PRESETS["bone"], size=64)
    assert r.png(digest, 0, PRESETS["lung"], size=64) is not a  # evicted (LRU of 2)
    assert r.frame(digest, 99).shape == (64, 64)  # clamped to the last slice


def test_radiomics_encoder_is_deterministic_and_reads_only_pixels(tmp_path: Path) -> None:
    img = np.random.default_rng(1).normal(0, 1, (50, 60)) + np.eye(50, 60) * 5
    enc = make_image_encoder(make_settings(tmp_path))
    assert isinstance(enc, RadiomicsEncoder) and enc.encoder_id.startswith("radiomics-skimage-v1(")
    v1, v2 = enc.encode(img), RadiomicsEncoder().encode(img.copy())
    assert v1.shape == (512,) and np.allclose(v1, v2) and abs(float(np.linalg.norm(v1)) - 1) < 1e-5
    assert np.allclose(enc.encode(img * 3.0 + 100.0), v1, atol=1e-5)  # a linear rescale (units, window) changes nothing
    assert float(enc.encode(img[:, ::-1]) @ v1) > 0.99 and float(enc.encode(img[::-1]) @ v1) > 0.99  # flips
    assert float(enc.encode(np.random.default_rng(2).normal(0, 1, (50, 60))) @ v1) < float(v1 @ v1)
    assert make_image_encoder(make_settings(tmp_path, imaging={"encoder": "none"})) is None


def test_local_torchscript_encoder(tmp_path: Path) -> None:
    torch.manual_seed(0)
    good = tmp_path / "enc.pt"
    torch.jit.script(
        torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(2), torch.nn.Flatten(), torch.nn.Linear(4, 512))
    ).save(str(good))
    settings = make_settings(
        tmp_path,
        imaging={
            "encoder": "local",
            "encoder_model_path": good,
            "encoder_channels": 1,
            "encoder_input_size": 16,
            "encoder_version": "7",
        },
    )
    enc = make_image_encoder(settings)
    assert (
        isinstance(enc, LocalModelEncoder)
        and enc.encoder_id.startswith("local:enc.pt:")
        and enc.encoder_id.endswith("@7")
    )
    a = enc.encode(np.random.default_rng(0).normal(0, 1, (40, 40)))
    b = enc.encode(np.random.default_rng(1).normal(0, 1, (40, 40)))
    assert a.shape == (512,) and not np.allclose(a, b)
    wrong = tmp_path / "wrong.pt"
    torch.jit.script(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(16 * 16, 10))).save(str(wrong))
    bad = LocalModelEncoder(wrong, size=16, channels=1, mean=0.0, std=1.0, version="1")
    with pytest.raises(EmbeddingError, match="10 values"):
        bad.encode(np.zeros((16, 16)) + np.eye(16))
    with pytest.raises(ConfigError):
        make_image_encoder(make_settings(tmp_path, imaging={"encoder": "local"}))
