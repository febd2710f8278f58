"""DICOM import: grouping, patients across imports, all-or-nothing, hostile files, decode errors, photographs."""

from __future__ import annotations

import datetime as dt
import io
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pydicom
import pytest
from PIL import Image
from pydicom.uid import RLELossless
from sqlalchemy import select

from core.cli import main
from core.contracts import EmptyReason
from core.errors import ImageRejectedError, NotFoundError
from core.imaging.importer import AWAITING_READING, import_images
from core.imaging.store import ImageStore
from core.runtime import Runtime, open_runtime
from core.store.models import ImageIdentityMap, ImageInstance, ImageSeries, Scan, User
from tests.backends import PgCluster
from tests.conftest import make_settings
from tests.imaging_support import audit_outcomes, copy_packaged, counts, edited, packaged


@pytest.fixture()
def rt(tmp_path: Path) -> Iterator[Runtime]:
    """An empty database with one patient, small limits and no image encoder."""
    imaging = {"encoder": "none", "max_file_mb": 2, "max_decoded_mb": 8, "max_dimension": 4096}
    runtime = open_runtime(make_settings(tmp_path, imaging=imaging))
    with runtime.db.session() as s:
        s.add(User(username="pat.one", display_name="Demo Patient One", role="patient"))
    yield runtime
    runtime.db.dispose()


def _import(rt: Runtime, *paths: Path, **kw: Any) -> Any:
    return import_images(rt.settings, rt.db, list(paths), **kw)


def test_grouping_by_patient_study_and_series(rt: Runtime, tmp_path: Path) -> None:
    folder = copy_packaged(tmp_path / "in", "CT_small.dcm", "rtdose.dcm", "MR_small.dcm")
    summary = _import(rt, folder, anatomy="abdomen")
    assert len(summary.scans) == 3 and summary.files == 3
    with rt.db.read_only() as s:
        series = s.scalars(select(ImageSeries)).all()
        scans = s.scalars(select(Scan)).all()
        frames = {
            sr.modality: s.scalars(select(ImageInstance.frames).where(ImageInstance.series_id == sr.id)).all()
            for sr in series
        }
    assert frames == {"CT": [1], "RTDOSE": [15], "MR": [1]}
    assert len({sc.patient_id for sc in scans}) == 3  # three different original patients
    assert all(sc.ai_diagnosis == AWAITING_READING and sc.embedding is None for sc in scans)
    assert "no embedding" in summary.embedding_note
    # no scan embedding: similar-case search gives the contract's fixed empty answer with its reason
    result = rt.case_search.similar_cases(summary.scans[0].scan_id)
    assert result.cases == [] and result.empty_reason == EmptyReason.NO_EMBEDDING
    assert audit_outcomes(rt) == ["ok"]


def test_same_patient_maps_to_one_pseudonym_with_one_date_offset(rt: Runtime, tmp_path: Path) -> None:
    first = _import(rt, packaged("CT_small.dcm"), anatomy="lung").scans[0]
    # a later study of the same patient: new UIDs, a study date 30 days later
    later = edited(
        "CT_small.dcm",
        tmp_path / "later.dcm",
        StudyInstanceUID="1.2.826.0.1.3680043.8.498.1",
        SeriesInstanceUID="1.2.826.0.1.3680043.8.498.2",
        SOPInstanceUID="1.2.826.0.1.3680043.8.498.3",
        StudyDate="20040218",
    )
    second = _import(rt, later, anatomy="lung").scans[0]
    with rt.db.read_only() as s:
        a, b = s.get(Scan, first.scan_id), s.get(Scan, second.scan_id)
        assert a is not None and b is not None
        assert a.patient_id == b.patient_id
        assert s.scalar(select(ImageIdentityMap.patient_user_id)) == a.patient_id
        original = pydicom.dcmread(packaged("CT_small.dcm"))
        assert a.created_at.date() != dt.datetime.strptime(original.StudyDate, "%Y%m%d").date()  # shifted
        assert (b.created_at - a.created_at).days == 30  # the interval survives the shift
    with pytest.raises(ImageRejectedError, match="imported before"):
        _import(rt, packaged("CT_small.dcm"), anatomy="lung")


def test_patient_option_and_missing_anatomy(rt: Runtime, tmp_path: Path) -> None:
    with pytest.raises(ImageRejectedError, match="anatomy"):
        _import(rt, packaged("CT_small.dcm"))
    with pytest.raises(NotFoundError):
        _import(rt, packaged("CT_small.dcm"), anatomy="lung", patient="nobody")
    folder = copy_packaged(tmp_path / "two", "CT_small.dcm", "MR_small.dcm")
    with pytest.raises(ImageRejectedError, match="2 different patients"):
        _import(rt, folder, anatomy="brain", patient="pat.one")
    # the header's body part decides when it maps to an anatomy (examples_overlay says ABDOMEN)
    scan = _import(rt, packaged("examples_overlay.dcm"), patient="pat.one").scans[0]
    assert scan.anatomy == "abdomen"


def _bomb(path: Path, side: int = 4096) -> Path:
    """A real RLE file of ~270 kB that decodes to side*side bytes (16 MB at 4096)."""
    ds = pydicom.dcmread(packaged("CT_small.dcm"))
    ds.Rows = ds.Columns = side
    ds.BitsAllocated, ds.BitsStored, ds.HighBit, ds.PixelRepresentation = 8, 8, 7, 0
    ds.compress(RLELossless, np.zeros((side, side), dtype=np.uint8))
    ds.save_as(path)
    return path


def _hostile(tmp_path: Path, kind: str) -> tuple[Path, str]:
    good = packaged("CT_small.dcm")
    if kind == "text":
        p = tmp_path / "notes.dcm"
        p.write_text("not an image at all")
        return p, "not a DICOM file"
    if kind == "magic":
        data = bytearray(good.read_bytes())
        data[128:132] = b"XXXX"
        p = tmp_path / "badmagic.dcm"
        p.write_bytes(bytes(data))
        return p, "not a DICOM file"
    if kind == "truncated":
        return packaged("MR_truncated.dcm"), "truncated pixel data"
    if kind == "no-pixels":
        return packaged("rtplan.dcm"), "no pixel data"
    if kind == "huge":
        return edited("CT_small.dcm", tmp_path / "huge.dcm", Rows=60000), "outside 1..4096"
    if kind == "bomb":
        return _bomb(tmp_path / "bomb.dcm"), "decompression bomb"
    if kind == "undecodable":
        return packaged("JPEG-lossy.dcm"), "cannot be decoded"
    if kind == "burned-in":
        return edited("CT_small.dcm", tmp_path / "burned.dcm", BurnedInAnnotation="YES"), "burned-in"
    if kind == "too-big":
        p = tmp_path / "big.dcm"
        p.write_bytes(good.read_bytes() + b"\0" * 3_000_000)
        return p, "over the 2 MB file limit"
    raise AssertionError(kind)


HOSTILE = ["text", "magic", "truncated", "no-pixels", "huge", "bomb", "undecodable", "burned-in", "too-big"]


@pytest.mark.parametrize("kind", HOSTILE)
def test_hostile_file_rejects_the_whole_import(rt: Runtime, tmp_path: Path, kind: str) -> None:
    folder = copy_packaged(tmp_path / "study", "CT_small.dcm", "MR_small.dcm")
    bad, message = _hostile(tmp_path, kind)
    (folder / f"zz_{bad.name}").write_bytes(bad.read_bytes())  # last: the good files were already processed
    before = counts(rt)
    with pytest.raises(ImageRejectedError, match=message) as info:
        _import(rt, folder, anatomy="abdomen")
    assert info.value.hint
    assert counts(rt) == before, "something was half-imported"
    assert audit_outcomes(rt) == ["rejected"]


def test_bomb_file_is_small_and_refused_before_decoding(tmp_path: Path) -> None:
    bomb = _bomb(tmp_path / "bomb.dcm")
    assert bomb.stat().st_size * 50 < 4096 * 4096  # RLE of zeros: 2 bytes per 128 pixels
    assert len(pydicom.dcmread(bomb).pixel_array.tobytes()) == 4096 * 4096


def test_burned_in_is_accepted_when_a_doctor_confirms(rt: Runtime, tmp_path: Path) -> None:
    path, _ = _hostile(tmp_path, "burned-in")
    assert _import(rt, path, anatomy="lung", confirm_burned_in=True).scans


def test_zip_import_and_zip_with_a_bad_member(rt: Runtime, tmp_path: Path) -> None:
    archive = tmp_path / "study.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(packaged("rtdose.dcm"), "../../etc/rtdose.dcm")  # a traversal name is never used as a path
        zf.write(packaged("CT_small.dcm"), "a/CT_small.dcm")
    assert len(_import(rt, archive, anatomy="abdomen").scans) == 2
    bad = tmp_path / "bad.zip"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.write(packaged("MR_small.dcm"), "MR_small.dcm")
        zf.writestr("readme.txt", "hello")
    before = counts(rt)
    with pytest.raises(ImageRejectedError, match="not a DICOM file"):
        _import(rt, bad, anatomy="brain")
    assert counts(rt) == before


def test_zip_bomb_is_refused_from_its_directory(rt: Runtime, tmp_path: Path) -> None:
    archive = tmp_path / "zipbomb.zip"
    with zipfile.ZipFile(archive, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("huge.dcm", b"\0" * 5_000_000)
    with pytest.raises(ImageRejectedError, match="file limit"):
        _import(rt, archive, anatomy="brain")


def test_photograph_is_stripped_of_metadata(rt: Runtime, tmp_path: Path) -> None:
    img = Image.fromarray(np.full((40, 60, 3), 120, dtype=np.uint8))
    exif = Image.Exif()
    exif[0x010F] = "CameraMaker-Serial-12345"
    path = tmp_path / "lesion.jpg"
    img.save(path, exif=exif)
    with pytest.raises(ImageRejectedError, match="--patient"):
        _import(rt, path, anatomy="skin")
    summary = _import(rt, path, anatomy="skin", patient="pat.one")
    store = ImageStore.from_settings(rt.settings)
    pngs = list((store.root / "objects").rglob("*.png"))
    assert len(pngs) == 1 and b"CameraMaker" not in pngs[0].read_bytes()
    assert Image.open(io.BytesIO(pngs[0].read_bytes())).size == (60, 40)
    assert summary.scans[0].anatomy == "skin"


def test_stored_files_are_read_only_and_content_addressed(rt: Runtime) -> None:
    _import(rt, packaged("CT_small.dcm"), anatomy="lung")
    store = ImageStore.from_settings(rt.settings)
    import hashlib

    files = [p for p in (store.root / "objects").rglob("*") if p.is_file()]
    assert {p.suffix for p in files} == {".dcm", ".npy"}
    for p in files:
        assert hashlib.sha256(p.read_bytes()).hexdigest() == p.stem
        assert not p.stat().st_mode & 0o222


def test_cli_import_reports_errors_with_a_hint(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sets = ["--set", f"paths.data_dir={tmp_path / 'data'}", "--set", "imaging.encoder=none"]
    assert main([*sets, "import-dicom", str(packaged("CT_small.dcm")), "--anatomy", "lung", "--json"]) == 0
    assert '"anatomy": "lung"' in capsys.readouterr().out
    assert main([*sets, "import-dicom", str(packaged("rtplan.dcm")), "--anatomy", "lung"]) == 2
    err = capsys.readouterr().err
    assert "no pixel data" in err and "hint:" in err


@pytest.mark.postgres
def test_postgres_two_replicas_share_the_store(pg_cluster: PgCluster, tmp_path: Path) -> None:
    """On PostgreSQL, a study imported through one app replica opens from another (same store root)."""
    from core.imaging.query import series_for_scan

    url = pg_cluster.url_for(pg_cluster.create("img"))
    shared = {"store_root": tmp_path / "shared-store", "encoder": "none"}
    one = open_runtime(make_settings(tmp_path / "one", store={"url": url}, imaging=shared))
    two = open_runtime(make_settings(tmp_path / "two", store={"url": url}, imaging=shared))
    try:
        summary = _import(one, copy_packaged(tmp_path / "in", "rtdose.dcm", "CT_small.dcm"), anatomy="abdomen")
        bad = copy_packaged(tmp_path / "bad", "CT_small.dcm", "MR_truncated.dcm")
        before = counts(two)
        with pytest.raises(ImageRejectedError, match="truncated"):
            _import(two, bad, anatomy="abdomen")
        assert counts(two) == before
        for scan in summary.scans:
            views = series_for_scan(two.db, scan.scan_id)
            frames = ImageStore.from_settings(two.settings).load_frames(views[0].slices[0][0])
            assert frames.shape[0] == len(views[0].slices)
        assert audit_outcomes(two) == ["ok", "rejected"]
    finally:
        one.db.dispose()
        two.db.dispose()
