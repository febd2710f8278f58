"""Imaging benchmark: slice-change latency of the viewer and import time per image.

    python bench/imaging_bench.py slices --n 40     # 512x512 slices: new slice, new window, cached
    python bench/imaging_bench.py import --n 40     # import-dicom of n 512x512 slices (uncompressed, JPEG 2000)
    python bench/imaging_bench.py browser --n 24  # the viewer in headless Chromium (issue 28 item 4)
    python bench/imaging_bench.py all

Slice change is what the viewer does when the slider moves: read one frame of the
memory-mapped ``.npy`` from the image store, window it, encode a PNG (the
Streamlit transport to the browser is not included). Import time covers the
whole pipeline (read, check, decode, de-identify, stage, content-address,
commit) per file, with the image encoder off and with the default demo encoder.
The source slices are the real 512x512 head CT that ships in pydicom's wheel
(693_J2KI.dcm), copied with new UIDs; files are written to a temporary folder.
Results print as JSON with the load average (the machine is shared; compare
ratios within one run).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from any folder

from core.imaging.importer import import_images
from core.imaging.render import PRESETS, Renderer
from core.imaging.store import ImageStore
from core.runtime import open_runtime
from core.settings import load_settings


def _ms(values: list[float]) -> dict[str, float]:
    s = sorted(values)
    return {
        "p50_ms": round(statistics.median(s) * 1000, 2),
        "p95_ms": round(s[min(len(s) - 1, int(0.95 * len(s)))] * 1000, 2),
        "max_ms": round(s[-1] * 1000, 2),
    }


def _source_slice() -> np.ndarray:
    import pydicom
    from pydicom.data import get_testdata_file

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        path = get_testdata_file("693_J2KI.dcm")
    ds = pydicom.dcmread(str(path))
    return np.asarray(ds.pixel_array, dtype=np.int16) * int(ds.get("RescaleSlope", 1)) + int(ds.get("RescaleIntercept", 0))


def bench_slices(n: int) -> dict[str, Any]:
    """Slice-change latency over an n x 512 x 512 volume (the real slice, shifted per slice so each differs)."""
    base = _source_slice()
    volume = np.stack([np.roll(base, k * 3, axis=0) for k in range(n)]).astype(np.int16)
    with tempfile.TemporaryDirectory() as tmp:
        store = ImageStore(Path(tmp))
        staged = store.stage()
        digest = staged.add_frames(volume)
        staged.publish()
        r = Renderer(store, max_entries=4096)
        lung, bone = PRESETS["lung"], PRESETS["bone"]
        r.png(digest, 0, lung, size=512)  # first touch of the file (open + mmap), as the first paint pays it
        new_slice, new_window, cached = [], [], []
        for i in range(1, n):
            t = time.perf_counter()
            r.png(digest, i, lung, size=512)
            new_slice.append(time.perf_counter() - t)
        for i in range(n):
            t = time.perf_counter()
            r.png(digest, i, bone, size=512)
            new_window.append(time.perf_counter() - t)
        for i in range(n):
            t = time.perf_counter()
            r.png(digest, i, lung, size=512)
            cached.append(time.perf_counter() - t)
    return {
        "slices": n,
        "shape": [512, 512],
        "new_slice": _ms(new_slice),
        "new_window": _ms(new_window),
        "cached": _ms(cached),
        "target_ms": 300,
    }


def _write_series(folder: Path, n: int, compressed: bool) -> None:
    import pydicom
    from pydicom.data import get_testdata_file
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        src = pydicom.dcmread(str(get_testdata_file("693_J2KI.dcm")))
    if not compressed:
        src.decompress()
        src.file_meta.TransferSyntaxUID = ExplicitVRLittleEndian
    study, series = generate_uid(), generate_uid()
    stored = src.pixel_array.copy() if not compressed else None
    for k in range(n):
        if stored is not None:  # each slice differs (as in a real series), so each renders to a new image
            src.PixelData = np.roll(stored, k * 3, axis=0).tobytes()
        src.StudyInstanceUID, src.SeriesInstanceUID = study, series
        src.SOPInstanceUID = src.file_meta.MediaStorageSOPInstanceUID = generate_uid()
        src.InstanceNumber = k + 1
        src.save_as(folder / f"slice{k:04d}.dcm")


def bench_import(n: int) -> dict[str, Any]:
    """Seconds per image for import-dicom of n 512x512 slices, per transfer syntax and encoder."""
    out: dict[str, Any] = {"images": n}
    for compressed in (False, True):
        for encoder in ("none", "demo"):
            with tempfile.TemporaryDirectory() as tmp:
                root = Path(tmp)
                (root / "in").mkdir()
                _write_series(root / "in", n, compressed)
                settings = load_settings(
                    "test", paths={"data_dir": root / "data", "index_dir": root / "idx"}, imaging={"encoder": encoder}
                )
                rt = open_runtime(settings)
                t = time.perf_counter()
                summary = import_images(rt.settings, rt.db, [root / "in"], anatomy="brain")
                elapsed = time.perf_counter() - t
                rt.db.dispose()
                assert summary.scans[0].images == n
                key = f"{'jpeg2000' if compressed else 'uncompressed'}_{encoder}_encoder"
                out[key] = {"total_s": round(elapsed, 3), "per_image_ms": round(elapsed / n * 1000, 1)}
    return out


_FRAME_READY = "() => document.body.dataset.ready"
_RENDERED = "n => window.casebookViewer.stats.renders > n && window.casebookViewer.stats.lastPaint >= window.casebookViewer.stats.lastRender"


def _viewer_frame(page: Any) -> Any:
    """The viewer component's frame (Playwright ``Frame``), once it shows its images."""
    page.locator(".st-key-viewer iframe").first.wait_for()
    frame = page.locator(".st-key-viewer iframe").first.element_handle().content_frame()
    frame.wait_for_function(_FRAME_READY)
    return frame


def _timed(frame: Any, act: Any) -> tuple[float, float]:
    """(input event -> the animation frame that shows the new image, in the page's clock; wall time seen by Python)."""
    before = frame.evaluate("window.casebookViewer.stats.renders")
    t = time.perf_counter()
    act()
    frame.wait_for_function(_RENDERED, arg=before, polling="raf")
    wall = time.perf_counter() - t
    stats = frame.evaluate("window.casebookViewer.stats")
    return (stats["lastPaint"] - stats["lastInput"]) / 1000, wall


def bench_browser(n: int, steps: int = 40) -> dict[str, Any]:
    """In headless Chromium: wheel slice changes, window presets and window drags on a 512x512 CT series.

    The viewer (Cornerstone3D in the browser) holds every frame, so each input is timed in the
    page's own clock from the input event to the animation frame after the new image rendered;
    the wall time seen by Playwright (its round trips included) is reported beside it.
    """
    import bcrypt
    from playwright.sync_api import expect, sync_playwright

    from core.store.models import User
    from tests.browser_support import to_scan_review
    from tests.test_app_support import (
        CHROMIUM,
        CHROMIUM_ARGS,
        free_port,
        log_in,
        start_server,
        stop_server,
        wait_healthy,
    )

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "in").mkdir()
        _write_series(root / "in", n, compressed=False)
        settings = load_settings("test", paths={"data_dir": root / "data", "index_dir": root / "indexes"})
        rt = open_runtime(settings)
        with rt.db.session() as s:
            pw = bcrypt.hashpw(b"bench-pass", bcrypt.gensalt(rounds=4)).decode()
            s.add(User(username="dr.bench", display_name="Bench Doctor", role="doctor", password_hash=pw))
        import_images(rt.settings, rt.db, [root / "in"], anatomy="brain")
        rt.db.dispose()
        port = free_port()
        proc = start_server(root, port, root / "streamlit.log")
        res: dict[str, list[tuple[float, float]]] = {"slice_wheel": [], "slice_key": [], "window_preset": [], "window_drag": []}
        try:
            wait_healthy(port, proc)
            expect.set_options(timeout=60_000)  # the first Scan Review builds the runtime on a busy machine
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1366, "height": 768})
                page.set_default_timeout(60_000)
                t_open = time.perf_counter()
                log_in(page, f"http://127.0.0.1:{port}", "dr.bench", "bench-pass")
                to_scan_review(page)  # a doctor lands on the worklist
                frame = _viewer_frame(page)
                first_paint = time.perf_counter() - t_open
                vp = frame.locator("[data-testid='viewport-current']")
                inner = vp.bounding_box()  # in the page's coordinates (Playwright adds the iframe's offset)
                assert inner is not None
                x, y = inner["x"] + inner["width"] / 2, inner["y"] + inner["height"] / 2
                page.mouse.move(x, y)
                frame.evaluate("document.querySelector(\"[data-testid='viewport-current']\").scrollIntoView()")
                frame.locator("[data-testid='reset']").click()
                vp.focus()
                _timed(frame, lambda: page.keyboard.press("Home"))  # from the first slice (not counted)
                page.mouse.move(x, y)
                for k in range(steps):  # down the series and back up: every step is a new slice
                    res["slice_wheel"].append(_timed(frame, lambda k=k: page.mouse.wheel(0, 100 if (k // (n - 1)) % 2 == 0 else -100)))
                vp.focus()
                _timed(frame, lambda: page.keyboard.press("Home"))
                for k in range(steps):
                    res["slice_key"].append(_timed(frame, lambda k=k: page.keyboard.press("ArrowDown" if (k // (n - 1)) % 2 == 0 else "ArrowUp")))
                for k in range(steps):  # lung, bone, lung, ...: every press is a new window
                    res["window_preset"].append(_timed(frame, lambda k=k: page.keyboard.press("1" if k % 2 else "3")))
                page.mouse.move(x, y)
                page.mouse.down()
                for k in range(steps):
                    res["window_drag"].append(_timed(frame, lambda k=k: page.mouse.move(x + (k % 20 + 1) * 4, y + (k % 20 + 1) * 2)))
                page.mouse.up()
                browser.close()
        finally:
            stop_server(proc)
    out: dict[str, Any] = {"slices": n, "shape": [512, 512], "steps": steps, "first_paint_s": round(first_paint, 2)}
    for name, pairs in res.items():
        out[name] = {"input_to_frame": _ms([a for a, _ in pairs]), "playwright_wall": _ms([b for _, b in pairs])}
    out["target_ms"] = 150
    return out


def _cpu_flags() -> dict[str, Any]:
    """The CPU model and the flags that decide the speed paths (printed beside every figure)."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    model = next((ln.split(":", 1)[1].strip() for ln in info.splitlines() if ln.startswith("model name")), "unknown")
    flags = next((ln.split(":", 1)[1].split() for ln in info.splitlines() if ln.startswith("flags")), [])
    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")
    return {"model": model, "flags": [f for f in wanted if f in flags]}


def main() -> None:
    """Run the chosen benchmark and print JSON."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["slices", "import", "browser", "all"])
    parser.add_argument("--n", type=int, default=40)
    args = parser.parse_args()
    result: dict[str, Any] = {"loadavg_before": os.getloadavg(), "cpus": os.cpu_count(), "cpu": _cpu_flags()}
    if args.what in ("slices", "all"):
        result["slice_change"] = bench_slices(args.n)
    if args.what in ("import", "all"):
        result["import"] = bench_import(args.n)
    if args.what in ("browser", "all"):
        result["browser"] = bench_browser(args.n)
    result["loadavg_after"] = os.getloadavg()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
