"""Guideline QA on real and real-shaped documents (issue 24), per document.

    nice -n 5 .venv/bin/python bench/guideline_realdocs.py [--realdocs ../shared/realdocs] \
        [--questions /work/eval_inputs/guideline/guideline_outside_questions.json] [--split test] [--ask "..."]

Ingests, into the document space ``user.realdocs-eval`` (once; ``--reingest`` to redo), the two long
demo guidelines (rendered from assets/kb/realshaped) and the real documents read at run time from
``--realdocs`` (the CDC booklet and the FDA labels; never copied, never a test dependency). Then
answers the questions file's items (written by someone who never read the code) and reports per
document: answered, correct content (every expected key phrase in the answer's bullets), right
document and section, must-refuse handled, unattributed bullets, disagreements shown, and the
calibration (shown confidence against correctness by decile). ``--ask`` answers one question.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

SPACE = "user.realdocs-eval"


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9/.%]+", " ", text.lower()).strip()


def ingest(rt: Any, realdocs: Path, again: bool) -> None:
    """The long demo guidelines and the real documents into :data:`SPACE` (skipped when already there)."""
    from core.errors import IndexStateError, InvalidInputError
    from core.kb.demo.longguides import write_long_guidelines
    from core.kb.index.ingest import IngestReport
    from core.kb.spaces import DocumentSpaces

    kb = rt.kb
    try:
        have = list(kb.index(SPACE).store.docs())
    except (IndexStateError, InvalidInputError):
        have = []
    if have and not again:
        return
    settings = rt.settings
    assets = settings.paths.resolve(settings.paths.assets_dir) / settings.kb.demo_subdir / "realshaped"
    pdfs = write_long_guidelines(assets, settings.paths.resolve(settings.paths.data_dir) / "generated" / "realshaped")
    spaces = DocumentSpaces(kb)
    report = IngestReport(kb=SPACE)
    cdc = realdocs / "cdc_what_you_need_to_know_about_tb.pdf"
    guides = [*pdfs, *([cdc] if cdc.exists() else [])]
    spaces.ingest_named(SPACE, "guideline", [(p, p.name) for p in guides], report)
    labels = sorted((realdocs / "labels").glob("*.xml")) if realdocs.exists() else []
    if labels:
        spaces.ingest_named(SPACE, "spl", [(p, p.name) for p in labels], report)
    print(f"ingested {len(report.docs)} documents, {report.chunks_added} chunks, errors {report.errors}", file=sys.stderr)


def render(result: Any) -> str:
    """One answer as the page shows it: bullets under their document, disagreements, or the abstention."""
    if result.kind == "abstain":
        return f"ABSTAIN [{result.stage}] {result.reason}"
    lines = [f"confidence {result.confidence:.2f}  population {result.population}"]
    for d in result.disagreements:
        lines.append("!! " + d.line())
    for b in result.bullets:
        ref = b.evidence.ref.line() if b.evidence.ref else "UNATTRIBUTED"
        other = f" (for {b.population}, not the asked group)" if b.other_population else ""
        lines.append(f"- {b.text}{other}\n    [{ref}]")
    return "\n".join(lines)


def score(item: dict[str, Any], result: Any) -> dict[str, Any]:
    """One item's outcome (see the module docstring)."""
    expect = str(item.get("expect") or "answer")
    refuse = expect in ("refuse", "out_of_scope")
    if result.kind == "abstain":
        return {"answered": False, "refuse_ok": refuse, "correct": False, "doc_section": False, "unattributed": 0,
                "confidence": None}  # fmt: skip
    text = _norm(" ".join(b.text for b in result.bullets))
    facts = [_norm(f) for f in item.get("expected_facts") or []]
    correct = bool(facts) and all(f in text for f in facts)
    want_doc = _norm(str(item.get("expected_document") or ""))
    want_sec = _norm(str(item.get("expected_section") or ""))
    refs = [b.evidence.ref for b in result.bullets if b.evidence.ref is not None]
    doc_section = any((not want_doc or want_doc in _norm(f"{r.title} {r.doc_id}")) and
                      (not want_sec or want_sec.split()[0] in _norm(r.section)) for r in refs)  # fmt: skip
    return {"answered": True, "refuse_ok": not refuse, "correct": correct, "doc_section": doc_section,
            "unattributed": sum(b.evidence.ref is None for b in result.bullets), "confidence": result.confidence,
            "disagreements": len(result.disagreements)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--realdocs", default="../shared/realdocs")
    ap.add_argument("--questions", default="/work/eval_inputs/guideline/guideline_outside_questions.json")
    ap.add_argument("--split", default="test")
    ap.add_argument("--ask", action="append", default=[])
    ap.add_argument("--reingest", action="store_true")
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    from core.runtime import Runtime
    from core.settings import load_settings

    print(f"# load={os.getloadavg()}", file=sys.stderr)
    rt = Runtime(load_settings())
    ingest(rt, Path(args.realdocs), args.reingest)
    qa = rt.guideline_qa
    for q in args.ask:
        print(f"Q: {q}\n{render(qa.answer(q, spaces=(SPACE,)))}\n")
    path = Path(args.questions)
    if args.ask or not path.exists():
        return
    items = [i for i in json.loads(path.read_text())["items"] if args.split in ("all", i.get("split"))]
    per_doc: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for item in items:
        outcome = score(item, qa.answer(item["question"], spaces=(SPACE,)))
        doc = str(item.get("expected_document") or item.get("document") or "none")
        per_doc[doc].append(outcome | {"id": item.get("id")})
    report = {}
    for doc, rows in sorted(per_doc.items()):
        answerable = [r for r in rows if r["refuse_ok"] or r["answered"]]
        report[doc] = {
            "n": len(rows),
            "answered": sum(r["answered"] for r in rows),
            "correct": sum(r["correct"] for r in rows),
            "doc_section": sum(r["doc_section"] for r in rows),
            "refuse_ok": sum(r["refuse_ok"] for r in rows),
            "unattributed": sum(r["unattributed"] for r in rows),
            "answerable": len(answerable),
        }
    print(json.dumps(report, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps({"per_document": report, "items": per_doc}, indent=1))


if __name__ == "__main__":
    main()
