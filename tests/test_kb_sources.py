"""Files, folders, zips and DailyMed-style zips of zips, including zip bombs and broken archives."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from core.config.kb import KBSettings
from core.kb.parse.sources import iter_sources

DATA = Path(__file__).parent / "data" / "kb"
LABEL = (DATA / "spl_metformin.xml").read_bytes()


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


@pytest.fixture
def dailymed(tmp_path: Path) -> Path:
    """A DailyMed bulk archive: an outer zip of per-label zips holding the XML and an image."""
    inner = {
        f"prescription/2024{i:02d}_label{i}.zip": _zip({f"label{i}.xml": LABEL, f"image{i}.jpg": b"\xff\xd8jpeg"})
        for i in range(3)
    }
    inner["prescription/broken.zip"] = b"PK\x03\x04 not really a zip"
    path = tmp_path / "dm_spl_release_human_rx_part1.zip"
    path.write_bytes(_zip(inner))
    return path


def test_zip_of_zips_streams_xml_members_only(dailymed: Path, tmp_path: Path) -> None:
    before = {p for p in tmp_path.rglob("*")}
    items = list(iter_sources([dailymed], (".xml",), KBSettings()))
    good = [i for i in items if i.data is not None]
    assert [i.name.rsplit("!", 1)[-1] for i in good] == ["label0.xml", "label1.xml", "label2.xml"]
    assert all(i.data == LABEL for i in good)
    assert [i.error for i in items if i.error] == [f"{dailymed}!prescription/broken.zip: not a readable zip archive "
                                                   "(File is not a zip file)"]  # fmt: skip
    assert {p for p in tmp_path.rglob("*")} == before  # nothing extracted to disk


def test_folder_recurses_and_explicit_files_always_yield(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "a.xml").write_bytes(LABEL)
    (tmp_path / "notes.txt").write_text("skip me inside folders")
    (tmp_path / "b.zip").write_bytes(_zip({"b.xml": LABEL}))
    names = [i.name for i in iter_sources([tmp_path], (".xml",), KBSettings())]
    assert names == [f"{tmp_path / 'b.zip'}!b.xml", str(tmp_path / "sub" / "a.xml")]
    explicit = list(iter_sources([tmp_path / "notes.txt", tmp_path / "missing.xml"], (".xml",), KBSettings()))
    assert explicit[0].data == b"skip me inside folders"
    assert explicit[1].error is not None and "no such file" in explicit[1].error


def test_zip_bomb_and_oversize_members_are_refused(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.zip"
    bomb.write_bytes(_zip({"bomb.xml": b"<a>" + b"0" * 5_000_000 + b"</a>", "ok.xml": LABEL}))
    items = list(iter_sources([bomb], (".xml",), KBSettings(max_zip_ratio=50)))
    assert items[0].error is not None and "zip bomb" in items[0].error
    assert items[1].data == LABEL
    items = list(iter_sources([bomb], (".xml",), KBSettings(max_zip_member_mb=1, max_zip_ratio=1e6)))
    assert items[0].error is not None and "member limit" in items[0].error


def test_nesting_depth_and_garbage_archives(tmp_path: Path) -> None:
    deep = tmp_path / "deep.zip"
    deep.write_bytes(_zip({"l2.zip": _zip({"l3.zip": _zip({"x.xml": LABEL})})}))
    items = list(iter_sources([deep], (".xml",), KBSettings(max_zip_depth=2)))
    assert len(items) == 1 and items[0].error is not None and "nested deeper" in items[0].error
    garbage = tmp_path / "garbage.zip"
    garbage.write_bytes(bytes(range(256)) * 10)
    items = list(iter_sources([garbage], (".xml",), KBSettings()))
    assert items[0].error is not None and "not a readable zip" in items[0].error


def test_oversize_file_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.xml"
    big.write_bytes(b" " * 2_100_000)
    (item,) = iter_sources([big], (".xml",), KBSettings(max_file_mb=2))
    assert item.data is None and item.error is not None and "file limit" in item.error


def test_dailymed_archive_parses_every_label(tmp_path: Path) -> None:
    from core.kb.index.ingest import parse_files
    from core.kb.parse.tokens import E5TokenCounter

    inner = {}
    for i in range(4):
        label = LABEL.replace(b"11111111-2222-4333-8444-555555555555", f"set-{i}".encode())
        inner[f"prescription/{i}.zip"] = _zip({f"{i}.xml": label, f"{i}.jpg": b"\xff\xd8"})
    inner["prescription/bad.zip"] = _zip({"bad.xml": (DATA / "xxe.xml").read_bytes()})
    archive = tmp_path / "dm.zip"
    archive.write_bytes(_zip(inner))
    docs, errors = parse_files([archive], "spl", "druglabels", KBSettings(progress=False), E5TokenCounter())
    assert sorted(d.doc_id for d in docs) == [f"spl:set-{i}" for i in range(4)]
    assert len(errors) == 1 and errors[0].source.endswith("bad.zip!bad.xml") and "ENTITY" in errors[0].error
