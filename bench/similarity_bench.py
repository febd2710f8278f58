"""What similar-case search finds now that embeddings come from pixels (issue 25; docs/SIMILARITY.md).

    python bench/similarity_bench.py                 # the seeded demo data under paths.data_dir
    python bench/similarity_bench.py --root /tmp/x   # a data folder seeded elsewhere (data/, indexes/)

1. **Demo data**: every historical case in turn is the query (leave-one-out, searched as
   the product searches: same anatomy, same region when it holds 5 others); the share
   with at least one other diagnosis in the top 5, same-diagnosis precision@5, the
   most frequent confusions; then the demo scans through the product's own search.
2. **Real DICOM shipped in pydicom's wheel**: each file with pixels is decoded and
   embedded (time), searched against the demo index as an abdomen scan would be
   (neighbours returned, time), and embedded again from its 8-bit display under two
   windows (the automatic one, and a narrower one that clips the lowest 10% of the range)
   and after a left-right and an up-down flip (cosine with the original embedding). The
   product always embeds the stored values, so the viewer's window never changes an
   embedding; the window columns show what a re-encoded screenshot would do.

Prints CPU flags and the load average beside the figures.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from any folder


def _machine() -> str:
    flags = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("flags"):
                have = set(line.split(":", 1)[1].split())
                flags = " ".join(f for f in ("avx2", "avx512f", "avx512_bf16", "amx_bf16") if f in have)
                break
    except OSError:
        pass
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, flags: {flags}, load {os.getloadavg()}"


def demo_part(rt: object) -> None:
    from core.demo.measure import case_matrix, lookalike_stats

    anatomy, region, diagnosis, vectors = case_matrix(rt.db)  # type: ignore[attr-defined]
    t = time.perf_counter()
    stats = lookalike_stats(anatomy, region, diagnosis, vectors)
    print(f"\n## Demo data: {stats.queries} cases as queries, top {stats.k} ({time.perf_counter() - t:.1f} s)")
    print(f"share with >= 1 other diagnosis in the top 5: {stats.mixed_share:.3f}")
    print(f"same-diagnosis precision@5: {stats.precision:.3f}")
    print("\n| diagnosis | precision@5 |\n|---|---:|")
    for d, p in stats.per_diagnosis.items():
        print(f"| {d} | {p:.2f} |")
    print("\nmost frequent look-alikes with another diagnosis (query -> neighbour: count):")
    for a, b, n in stats.confusions[:20]:
        print(f"- {a} -> {b}: {n}")
    from sqlalchemy import select

    from core.store.models import Scan, User

    with rt.db.read_only() as s:  # type: ignore[attr-defined]
        scans = s.execute(select(Scan.id, User.username, Scan.ai_diagnosis).join(User, User.id == Scan.patient_id)).all()
    print("\n| demo scan | AI reading | top-5 diagnoses (product search) |\n|---|---|---|")
    for sid, user, ai in scans:
        res = rt.case_search.similar_cases(sid, 5)  # type: ignore[attr-defined]
        got = ", ".join(c.diagnosis for c in res.cases) or f"({res.empty_reason})"
        print(f"| {user} | {ai} | {got} |")


def dicom_part(rt: object) -> None:
    from pydicom import dcmread
    from pydicom.data import get_testdata_file

    from core.imaging.dicomio import decode_pixels
    from core.imaging.encoders import make_image_encoder
    from core.imaging.render import apply_window, auto_window

    enc = make_image_encoder(rt.settings)  # type: ignore[attr-defined]
    assert enc is not None
    index = rt.case_search.index  # type: ignore[attr-defined]
    names = ["CT_small.dcm", "MR_small.dcm", "MR_small_RLE.dcm", "JPEG2000.dcm", "693_J2KI.dcm", "US1_J2KR.dcm",
             "examples_overlay.dcm", "liver_1frame.dcm", "rtdose.dcm", "SC_rgb.dcm", "examples_ybr_color.dcm",
             "OBXXXX1A.dcm", "emri_small.dcm"]
    print("\n## Real DICOM from pydicom's wheel, searched as abdomen scans against the demo index")
    print("| file | shape | embed ms | neighbours | search ms | cos, 8-bit display (auto window) | "
          "cos, narrower window (clips 10% low) | cos after LR flip | cos after UD flip |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for name in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                path = get_testdata_file(name)
            except Exception:  # a file missing from the wheel tries a download, which fails offline
                path = None
        if path is None:
            print(f"| {name} | not in the wheel | | | | | | | |")
            continue
        try:
            frames = decode_pixels(dcmread(str(path)), name).frames
        except Exception as exc:  # a file with no decodable pixels here
            print(f"| {name} | not decodable ({type(exc).__name__}) | | | | | | | |")
            continue
        img = np.asarray(frames[frames.shape[0] // 2], dtype=np.float32)
        t = time.perf_counter()
        vec = enc.encode(img)
        embed_ms = (time.perf_counter() - t) * 1000
        t = time.perf_counter()
        ids, _ = index.search(vec, "abdomen", None, 5, ef_search=rt.settings.search.hnsw_ef_search,  # type: ignore[attr-defined]
                              rerank=rt.settings.search.hnsw_rerank)  # type: ignore[attr-defined]
        search_ms = (time.perf_counter() - t) * 1000
        if img.ndim == 2:
            c0, w0 = auto_window(img)
            shown = [apply_window(img, c, w) for c, w in ((c0, w0), (c0 + 0.1 * w0, 0.8 * w0))]
            cos_w = [float(enc.encode(s.astype(np.float32)) @ vec) for s in shown]
        else:
            cos_w = [float("nan")] * 2  # colour: shown as acquired, no window
        lr = float(enc.encode(img[:, ::-1]) @ vec)
        ud = float(enc.encode(img[::-1]) @ vec)
        print(f"| {name} | {tuple(frames.shape)} | {embed_ms:.1f} | {len(ids)} | {search_ms:.2f} | {cos_w[0]:.3f} | {cos_w[1]:.3f} | "
              f"{lr:.3f} | {ud:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, help="folder holding data/ and indexes/ (default: the settings' paths)")
    args = ap.parse_args()
    from core.runtime import open_runtime
    from core.settings import load_settings

    paths = {"data_dir": args.root / "data", "index_dir": args.root / "indexes"} if args.root else {}
    rt = open_runtime(load_settings("default", paths=paths) if paths else load_settings())
    print(f"machine: {_machine()}")
    demo_part(rt)
    dicom_part(rt)
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
