"""``python -m core pacs search|import|sync|export|resend|queue``: the PACS from the command line.

Every sub-command but ``search`` and ``queue`` acts for a doctor named with
``--doctor USERNAME`` (only doctors import and export). ``search`` prints the
PACS's own identifying values to the terminal of the person who asked; nothing of
them is logged or stored.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict

from core.cli import emit, settings_from_args
from core.store.models import ANATOMIES

__all__ = ["register"]


def _progress() -> object:
    last = [-1]

    def say(fraction: float, message: str) -> None:
        pct = int(fraction * 100)
        if pct // 10 != last[0] // 10 or fraction >= 1.0:
            print(f"[{pct:3d}%] {message}", file=sys.stderr)
            last[0] = pct

    return say


def _query(args: argparse.Namespace) -> object:
    from core.pacs.client import StudyQuery

    return StudyQuery(args.patient_name, args.patient_id, args.date_from, args.date_to, args.modality, args.accession)


def _search(args: argparse.Namespace) -> int:
    from core.pacs.client import make_client

    settings = settings_from_args(args)
    hits = make_client(settings.pacs).search_studies(_query(args))  # type: ignore[arg-type]
    emit(
        [asdict(h) for h in hits] if args.json else [f"{h.date} {h.modalities:6} {h.study_uid}" for h in hits],
        args.json,
    )
    return 0


def _import(args: argparse.Namespace) -> int:
    from core.pacs.client import make_client
    from core.pacs.imports import doctor_id, import_studies
    from core.runtime import open_runtime

    rt = open_runtime(settings_from_args(args))
    actor = doctor_id(rt.db, args.doctor)
    out = import_studies(
        rt.settings, rt.db, make_client(rt.settings.pacs), args.study_uids, actor_id=actor, anatomy=args.anatomy,
        confirm_burned_in=args.confirm_burned_in, progress=_progress(),  # type: ignore[arg-type]
    )  # fmt: skip
    emit([asdict(o) for o in out], args.json)
    return 0 if all(o.status != "refused" for o in out) else 2


def _sync(args: argparse.Namespace) -> int:
    from core.pacs.client import make_client
    from core.pacs.imports import doctor_id, sync
    from core.runtime import open_runtime

    rt = open_runtime(settings_from_args(args))
    actor = doctor_id(rt.db, args.doctor)
    out = sync(
        rt.settings, rt.db, make_client(rt.settings.pacs), _query(args), actor_id=actor,  # type: ignore[arg-type]
        anatomy=args.anatomy, progress=_progress(),  # type: ignore[arg-type]
    )  # fmt: skip
    emit([asdict(o) for o in out], args.json)
    return 0 if all(o.status != "refused" for o in out) else 2


def _export(args: argparse.Namespace) -> int:
    from core.pacs.export import export_report
    from core.pacs.imports import doctor_id
    from core.runtime import open_runtime

    rt = open_runtime(settings_from_args(args))
    targets = tuple(args.to or ("sr", "fhir"))
    out = export_report(rt.settings, rt.db, args.report_id, actor_id=doctor_id(rt.db, args.doctor), targets=targets)
    emit([asdict(o) for o in out], args.json)
    return 0


def _resend(args: argparse.Namespace) -> int:
    from core.pacs.export import resend_queued
    from core.pacs.imports import doctor_id
    from core.runtime import open_runtime

    rt = open_runtime(settings_from_args(args))
    out = resend_queued(rt.settings, rt.db, actor_id=doctor_id(rt.db, args.doctor))
    emit([asdict(o) for o in out], args.json)
    return 0 if all(o.status != "queued" for o in out) else 2


def _queue(args: argparse.Namespace) -> int:
    from core.pacs.export import queued_exports
    from core.runtime import open_runtime

    rt = open_runtime(settings_from_args(args))
    rows = [{"report_id": r, "target": t, "attempts": n, "last_error": e} for r, t, n, e in queued_exports(rt.db)]
    emit(rows, args.json)
    return 0


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--patient-name", default="", help="Patient name (a prefix; * is a wildcard).")
    p.add_argument("--patient-id", default="", help="Patient id at the PACS.")
    p.add_argument("--date-from", default="", help="First study date, YYYYMMDD.")
    p.add_argument("--date-to", default="", help="Last study date, YYYYMMDD.")
    p.add_argument("--modality", default="", help="Modality in the study (CT, MR, CR...).")
    p.add_argument("--accession", default="", help="Accession number.")


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``pacs`` and its sub-commands."""
    pacs = sub.add_parser("pacs", help="The hospital PACS (DICOMweb): search, import, sync, export reports.")
    cmds = pacs.add_subparsers(dest="pacs_command", required=True)
    p = cmds.add_parser("search", help="List the PACS's studies matching the filters (shown, never stored).")
    _filters(p)
    p.add_argument("--json", action="store_true", help="Print JSON.")
    p.set_defaults(func=_search)
    for name, func, helptext in (
        (
            "import",
            _import,
            "Import studies by Study Instance UID, de-identified; studies imported before are skipped.",
        ),
        ("sync", _sync, "Import every study matching the filters that is not imported yet (safe to re-run)."),
    ):
        p = cmds.add_parser(name, help=helptext)
        if name == "import":
            p.add_argument("study_uids", nargs="+", help="Study Instance UIDs (from `pacs search`).")
            p.add_argument("--confirm-burned-in", action="store_true", help="Accept burned-in annotation (checked).")
        else:
            _filters(p)
        p.add_argument("--doctor", required=True, help="Username of the doctor importing.")
        p.add_argument("--anatomy", default=None, choices=ANATOMIES, help="Anatomy when the headers do not say it.")
        p.add_argument("--json", action="store_true", help="Print JSON.")
        p.set_defaults(func=func)
    p = cmds.add_parser("export", help="Send a signed report (or amendment) as DICOM SR (STOW-RS) and FHIR.")
    p.add_argument("report_id", type=int, help="The signed report version's id.")
    p.add_argument("--doctor", required=True, help="Username of the doctor exporting.")
    p.add_argument("--to", action="append", choices=("sr", "fhir"), help="Only this target (repeatable).")
    p.add_argument("--json", action="store_true", help="Print JSON.")
    p.set_defaults(func=_export)
    p = cmds.add_parser("resend", help="Send every queued (failed) export again.")
    p.add_argument("--doctor", required=True, help="Username of the doctor sending.")
    p.add_argument("--json", action="store_true", help="Print JSON.")
    p.set_defaults(func=_resend)
    p = cmds.add_parser("queue", help="List the exports waiting to be sent.")
    p.add_argument("--json", action="store_true", help="Print JSON.")
    p.set_defaults(func=_queue)
