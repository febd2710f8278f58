"""Sub-commands for the case memory bank: seed-demo, scans, similar, bundle, import-cases, reembed, index."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sqlalchemy import select

from core.cli import emit, settings_from_args

__all__ = ["register"]


def _runtime(args: argparse.Namespace):  # type: ignore[no-untyped-def]
    from core.runtime import open_runtime

    return open_runtime(settings_from_args(args))


def _seed(args: argparse.Namespace) -> int:
    from core.demo.seed import seed_demo

    rt = _runtime(args)
    summary = seed_demo(rt.settings, rt.db, progress=lambda m: print(m, file=sys.stderr))
    if summary.seeded:
        rt.case_search.refresh()
    emit(summary.__dict__, args.json)
    return 0


def _scans(args: argparse.Namespace) -> int:
    from core.runtime import Runtime
    from core.store.models import Scan, User

    rt = Runtime(settings_from_args(args))  # the database only: listing scans needs no case search (FAISS)
    with rt.db.read_only() as s:
        rows = s.execute(
            select(
                Scan.id,
                User.username,
                Scan.anatomy,
                Scan.region,
                Scan.ai_diagnosis,
                Scan.ai_confidence,
                Scan.created_at,
            )
            .join(User, User.id == Scan.patient_id)
            .order_by(User.username, Scan.created_at)
        ).all()
    out = [
        {
            "scan_id": r[0],
            "patient": r[1],
            "anatomy": r[2],
            "region": r[3],
            "diagnosis": r[4],
            "confidence": r[5],
            "created_at": r[6].isoformat(),
        }
        for r in rows
    ]
    if args.json:
        emit(out, True)
    else:
        for o in out:
            print(f"{o['scan_id']}  {o['patient']:<16} {o['anatomy']:<9} {o['diagnosis']} ({o['confidence']:.2f})")
    return 0


def _similar(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    result = rt.case_search.similar_cases(args.scan_id, args.top_k)
    if args.json:
        emit(result.model_dump(mode="json"), True)
    else:
        if result.notice:
            print(result.notice)
        for c in result.cases:
            print(f"{c.caseId}  {c.similarity:.3f}  {c.diagnosis} [{c.severity}] -> {c.outcome}")
    return 0


def _bundle(args: argparse.Namespace) -> int:
    from core.cases import build_context_bundle

    result = build_context_bundle(_runtime(args), args.scan_id)
    emit(result.model_dump(mode="json"), True)
    return 0


def _import(args: argparse.Namespace) -> int:
    from core.cases.importer import import_cases

    rt = _runtime(args)
    summaries = [import_cases(rt.db, Path(p), max_mb=rt.settings.store.import_max_mb) for p in args.paths]
    rt.case_search.refresh()
    emit([s.__dict__ for s in summaries], args.json)
    return 0


def _index(args: argparse.Namespace) -> int:
    rt = _runtime(args)
    index = rt.case_search.rebuild() if args.action == "rebuild" else rt.case_search.index
    m = index.manifest
    emit(
        {k: m[k] for k in ("version", "count", "dim", "encoder_id", "table_checksum", "built_at", "faiss_version")}
        | {"hnsw_groups": [k for k, g in m["groups"].items() if g["hnsw"]]},
        args.json,
    )
    return 0


def _reembed(args: argparse.Namespace) -> int:
    from core.cases.reembed import reembed
    from core.imaging.encoders import make_image_encoder

    rt = _runtime(args)
    encoder = make_image_encoder(rt.settings)
    if encoder is None:
        print("imaging.encoder is none: nothing to embed with", file=sys.stderr)
        return 2
    summary = reembed(rt.settings, rt.db, encoder, progress=lambda m: print(m, file=sys.stderr))
    rt.case_search.refresh()
    emit(summary.__dict__, args.json)
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the case commands to the top-level parser."""
    p = sub.add_parser("seed-demo", help="Fill an empty database with the deterministic demo data.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_seed)

    p = sub.add_parser("scans", help="List scans (ids, patient, anatomy, diagnosis).")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_scans)

    p = sub.add_parser("similar", help="Similar historical cases for a scan.")
    p.add_argument("scan_id")
    p.add_argument("--top-k", type=int, default=None, help="Cases to return (default: search.top_k).")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_similar)

    p = sub.add_parser("bundle", help="The context bundle for a scan (always JSON).")
    p.add_argument("scan_id")
    p.add_argument("--json", action="store_true", help="Accepted for symmetry; output is always JSON.")
    p.set_defaults(func=_bundle)

    p = sub.add_parser("import-cases", help="Import historical cases from CSV, Parquet or JSONL (all-or-nothing).")
    p.add_argument("paths", nargs="+")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_import)

    p = sub.add_parser("reembed", help="Re-embed every case and scan from its image with imaging.encoder.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_reembed)

    p = sub.add_parser("index", help="Show or rebuild the similar-case index.")
    p.add_argument("action", choices=["status", "rebuild"])
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_index)
