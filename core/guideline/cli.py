"""Sub-commands ``qa`` and ``eval-guidelines``.

    python -m core qa "What is the adult dose of isoniazid?" --json [--extractive]
    python -m core eval-guidelines --json [--limit N] [--ids q01,q26] [--split test] [--extractive]
    python -m core eval-guidelines --calibrate [--plot docs/benchmarks/guideline_qa_threshold.png] --json

Both read the existing knowledge bases (build the demo ones with
``python -m core kb build``). ``eval-guidelines`` exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
from typing import Any

from core.cli import emit, settings_from_args
from core.errors import ConfigError

__all__ = ["register"]


def _qa_engine(args: argparse.Namespace) -> Any:
    from core.runtime import Runtime

    settings = settings_from_args(args)
    if not settings.guideline.enabled:
        raise ConfigError("Guideline QA is switched off (guideline.enabled = false)")
    if args.extractive:  # the writer setting is the only place the model enters Guideline QA
        settings = settings.model_copy(update={"guideline": settings.guideline.model_copy(update={"writer": "extractive"})})
    return Runtime(settings).guideline_qa


def _render(result: Any) -> str:
    """A readable answer: bullets with their snippets, or ABSTAIN and the reason."""
    if result.kind == "abstain":
        return f"ABSTAIN ({result.route}, {result.stage}): {result.reason}"
    lines = [f"route: {result.route}   confidence: {result.confidence:.2f}   backend: {result.backend}"]
    if result.statement:
        source = f" ({result.evidence[0].source})" if result.evidence else ""
        lines.append(f"{result.statement}{source}")
    lines += [f"!! {d.line()}" for d in result.disagreements]
    for b in result.bullets:
        quote = "" if b.evidence.text.strip() == b.text.strip() else f": {b.evidence.text}"  # a quoted bullet once
        demo = " [demo]" if b.evidence.demo else ""
        where = b.evidence.ref.line() if b.evidence.ref else b.evidence.source
        other = f" (evidence for {b.population}, not the asked group)" if b.other_population else ""
        lines += [f"- {b.text}{other}", f"    evidence ({b.evidence.score:.2f}, {where}{demo}){quote}"]
    if result.patient_summary:
        lines += ["", f"For patients: {result.patient_summary}"]
    return "\n".join(lines)


def doctor_spaces_of(rt: Any, name: str) -> tuple[tuple[str, ...], str]:
    """The document spaces the Guideline QA page searches for doctor ``name`` (username), own then shared, and the
    doctor's owner key.

    Raises :class:`~core.errors.InvalidInputError` for an unknown username or one that is not a doctor's.
    """
    from sqlalchemy import select

    from core.errors import InvalidInputError
    from core.kb.spaces import doctor_spaces, owner_key
    from core.store.models import User

    with rt.db.read_only() as s:
        user = s.scalars(select(User).where(User.username == name.strip().lower())).first()
        found = (user.id, str(user.role)) if user is not None else None
    if found is None or "doctor" not in found[1].lower():
        raise InvalidInputError(f"no doctor with username {name!r}", hint="Use a doctor's username, e.g. dr.chen.")
    return tuple(doctor_spaces(rt.settings, owner_key(found[0]))), owner_key(found[0])


def _qa(args: argparse.Namespace) -> int:
    from core.guideline.preferences import SourceChoice, choices_for

    qa = _qa_engine(args)
    spaces: tuple[str, ...] = ()
    choice = None
    if args.doctor:
        from core.runtime import Runtime

        spaces, owner = doctor_spaces_of(Runtime(qa.settings), args.doctor)
        store = choices_for(qa.settings)
        if args.sources is not None:  # saved for the doctor, as the page saves it
            ids = tuple(x.strip() for x in args.sources.split(",") if x.strip())
            store.put(owner, SourceChoice(doc_ids=ids, only=args.only_sources))
        choice = store.get(owner)
    result = qa.answer(args.question, spaces=spaces, only_spaces=args.only_mine and bool(spaces), choice=choice)
    emit(result.model_dump(mode="json") if args.json else _render(result), args.json)
    return 0


def _eval(args: argparse.Namespace) -> int:
    from core.guideline.evaluate import load_eval, run_eval

    qa = _qa_engine(args)
    items = load_eval(qa.settings.paths.resolve(qa.cfg.eval_path))
    if args.ids:
        wanted = set(args.ids.split(","))
        items = [i for i in items if i.id in wanted]
    if args.split:
        items = [i for i in items if i.split == args.split]
    items = items[: args.limit] if args.limit else items
    if args.calibrate:
        from pathlib import Path

        from core.guideline.fitting import collect_rows, fit_report, plot_sensitivity

        fitted = fit_report(collect_rows(qa, items), qa.cfg.calib_l2, qa.cfg.calib_false_pass_weight)
        if args.plot:
            plot_sensitivity(fitted, Path(args.plot))
        if not args.json:
            fitted = {kb: {k: v for k, v in f.items() if k != "curves"} for kb, f in fitted.items()}
        emit(fitted, args.json)
        return 0
    from core.kb.index.builder import kb_link
    from core.kb.spaces import SHARED_SPACE
    from core.kb.types import SPACE_PREFIX

    target = getattr(args, "spaces", "") or SHARED_SPACE  # where `kb ingest-realistic` put the documents
    root = qa.settings.paths.resolve(qa.settings.paths.index_dir)
    spaces = tuple(k for k in target.split(",") if (k == SHARED_SPACE or k.startswith(SPACE_PREFIX))
                   and kb_link(root, k).exists())  # fmt: skip
    report = run_eval(qa, items, spaces)
    payload = report.model_dump(mode="json")
    if not args.json:
        payload = {k: v for k, v in payload.items() if k != "outcomes"}
    emit(payload, args.json)
    return 0 if report.passed else 1


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``qa`` and ``eval-guidelines``."""
    p = sub.add_parser("qa", help="Answer a TB/CAP question from the guideline and drug-label KBs, or abstain.")
    p.add_argument("question")
    p.add_argument("--extractive", action="store_true", help="Compose from the evidence without the LLM.")
    p.add_argument("--json", action="store_true", help="Print the full result with its trace as JSON.")
    p.add_argument("--doctor", default="", help="Search this doctor's documents (username) beside the curated KBs, "
                   "as the Guideline QA page does for the signed-in doctor.")  # fmt: skip
    p.add_argument("--only-mine", action="store_true", help="With --doctor: search only the doctor's documents.")
    p.add_argument("--sources", default=None, help="With --doctor: save the doctor's choice of sources (doc ids, "
                   "comma-separated, preferred first; empty: all) before answering.")  # fmt: skip
    p.add_argument("--only-sources", action="store_true", help="With --sources: use only the chosen documents.")
    p.set_defaults(func=_qa)
    p = sub.add_parser("eval-guidelines", help="Run the Guideline QA evaluation set and check the targets.")
    p.add_argument("--limit", type=int, default=0, help="Only the first N items (0: all).")
    p.add_argument("--ids", default="", help="Only these comma-separated item ids.")
    p.add_argument("--extractive", action="store_true", help="Compose from the evidence without the LLM.")
    p.add_argument("--split", choices=["train", "test", "realistic"], default="",
                   help="Only the items of this split (realistic: needs `kb ingest-realistic`).")
    p.add_argument(
        "--calibrate", action="store_true",
        help="Fit the confidence model on the train split (k-fold checked), pick per-KB thresholds, report the test "
        "split, and print it.",
    )  # fmt: skip
    p.add_argument("--spaces", default="",
                   help="Document spaces searched for the realistic items (default: the shared space `user`, where "
                   "`kb ingest-realistic` puts them).")  # fmt: skip
    p.add_argument("--plot", default="", help="With --calibrate: write the threshold sensitivity chart (PNG) here.")
    p.add_argument("--json", action="store_true", help="Print the report (with per-item outcomes) as JSON.")
    p.set_defaults(func=_eval)
