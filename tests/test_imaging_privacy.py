"""De-identification end to end: pydicom's packaged real DICOM files go in, no original identifier comes out.

After ``import_images`` the test searches the database, every file in the image
store, the logs, the context bundles and the payloads a loopback LLM received
for every original identifying value of every imported file.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pydicom
import pytest
import torch
from sqlalchemy import select

from core.answer.service import ask_question
from core.cases import build_context_bundle
from core.imaging.deid import IDENTIFYING
from core.imaging.encoders import LocalModelEncoder
from core.imaging.importer import import_images
from core.imaging.store import ImageStore
from core.llm.factory import make_llm
from core.runtime import Runtime, open_runtime
from core.store.models import ImageSeries, User
from tests.conftest import make_settings
from tests.imaging_support import copy_packaged, packaged
from tests.llm_server import FakeLLMServer

# Real files from the pydicom wheel: CT, MR, multi-frame RT dose, JPEG 2000 CT, US cine, SEG, colour.
FILES = (
    "CT_small.dcm",
    "MR_small.dcm",
    "693_J2KI.dcm",
    "rtdose.dcm",
    "examples_overlay.dcm",
    "examples_ybr_color.dcm",
    "examples_jpeg2k.dcm",
    "liver_1frame.dcm",
    "JPEG2000.dcm",
    "SC_rgb_jpeg_dcmtk.dcm",
)
# Kept by the Basic Profile, not identifying: in MR_small the "institution" is the vendor's name.
EQUIPMENT = {"Manufacturer", "ManufacturerModelName", "SoftwareVersions"}


def _strong(value: str) -> bool:
    """A value specific enough that finding it anywhere means it leaked (not '----' or '000000000')."""
    v = value.strip()
    return (len(v) >= 4 and any(c.isalpha() for c in v)) or (len(v) >= 8 and bool(set(v) - set("0.-^ ")))


def original_values(names: tuple[str, ...]) -> set[str]:
    """Every identifying value (and name component) of the original files."""
    found: set[str] = set()
    for name in names:
        ds = pydicom.dcmread(packaged(name))
        for source in (ds, ds.file_meta):
            for kw in IDENTIFYING:
                value = source.get(kw)
                if value is None:
                    continue
                text = str(value).strip()
                found.add(text)
                found.update(p.strip() for p in text.split("^"))
    return {v for v in found if _strong(v)}


def tiny_encoder(path: Path) -> Path:
    """A randomly initialised TorchScript image encoder: (1, 3, 32, 32) -> (1, 512)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.AdaptiveAvgPool2d(4), torch.nn.Flatten(), torch.nn.Linear(48, 512))
    torch.jit.script(model).save(str(path))
    return path


def _dump(rt: Runtime) -> list[str]:
    con = sqlite3.connect(rt.settings.database_url.removeprefix("sqlite:///"))
    try:
        return list(con.iterdump())
    finally:
        con.close()


@pytest.mark.slow
def test_packaged_dicom_leaves_no_identifier_anywhere(
    fresh: Runtime, tmp_path: Path, llm_server: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    model = tiny_encoder(tmp_path / "enc.pt")
    imaging = {"encoder": "local", "encoder_model_path": model, "encoder_input_size": 32}
    enc_id = LocalModelEncoder(model, size=32, channels=3, mean=0.5, std=0.5, version="1").encoder_id
    settings = make_settings(
        fresh.settings.paths.data_dir.parent,
        imaging=imaging,
        search={"encoder_id": enc_id},  # the index is rebuilt for this encoder: imported scans get neighbours
        # a random tiny encoder finds no truly similar case: let every neighbour through so the LLM is called
        safety={"min_scan_confidence": 0.0, "min_similarity": 0.0},
        llm=llm_server.llm_overrides("openai"),
    )
    rt = open_runtime(settings)
    secrets = original_values(FILES)
    assert {"CompressedSamples^CT1", "Lastname", "1.3.6.1.4.1.5962.1.2.1.20040119072730.12322"} <= secrets
    caplog.set_level(logging.DEBUG)
    before = set(_dump(rt))  # the demo data may hold an invented "James": search only what the import added

    summary = import_images(rt.settings, rt.db, [copy_packaged(tmp_path / "in", *FILES)], anatomy="abdomen")
    assert summary.files == len(FILES) and len(summary.scans) >= 6
    assert all(s.images >= 1 for s in summary.scans)

    # the context bundle and the LLM payload of an imported scan
    with rt.db.read_only() as s:
        doctor = s.scalar(select(User.id).where(User.username == "dr.chen"))
        embedded = s.scalars(select(ImageSeries.scan_id).where(ImageSeries.encoder_id == enc_id)).all()
    assert set(embedded) == {sc.scan_id for sc in summary.scans}
    bundles = [build_context_bundle(rt, sc.scan_id) for sc in summary.scans]
    assert all(b.bundle is not None for b in bundles), [b.empty_reason for b in bundles]
    answer = ask_question(
        rt, summary.scans[0].scan_id, "What do similar cases show?", int(doctor or 0), make_llm(rt.settings)
    )
    assert llm_server.requests, f"the LLM was not called (path {answer.path})"

    haystacks = {
        "logs": caplog.text,
        "bundles": "\n".join(b.model_dump_json() for b in bundles),
        "llm payloads": "\n".join(r.text() for r in llm_server.requests),
        "answer": answer.answer.model_dump_json(),
    }
    haystacks["database"] = "\n".join(line for line in _dump(rt) if line not in before)
    assert "image_identity_map" in haystacks["database"] and "image_instances" in haystacks["database"]
    store = ImageStore.from_settings(rt.settings)
    stored = list((store.root / "objects").rglob("*.dcm"))
    assert len(stored) >= len(FILES) - 1  # MR_small variants may share content
    for path in stored:
        ds = pydicom.dcmread(path)
        assert ds.PatientIdentityRemoved == "YES"
        assert not [e for e in ds if e.tag.is_private], "private tags survived"
        header = [str(e.value) for e in ds.iterall() if e.keyword not in EQUIPMENT | {"PixelData"}]
        header += [str(e.value) for e in ds.file_meta]
        haystacks[f"store {path.name}"] = "\n".join(header)
        raw = path.read_bytes()
        if "PixelData" in ds:  # pixel bytes can spell a short value by chance (8-bit value 49 eight times: '11111111')
            raw = raw.replace(ds.PixelData, b"")
        leaked = [v for v in secrets if len(v) >= 8 and v.encode() in raw]
        assert not leaked, f"{leaked} in the bytes of {path.name}"
    leaks = {where: sorted(v for v in secrets if v in text) for where, text in haystacks.items()}
    assert not any(leaks.values()), {k: v for k, v in leaks.items() if v}
