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
``--failures`` lists every failed item with its answer, for tuning: only on the train split (the frozen
test split is read in aggregate only, and the option refuses it).
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


_STEMS = {"intl": "intl-tb-guideline", "natl": "natl-tb-manual", "cdc": "cdc-what-you-need-to-know-about-tb",
          "humira": "humira", "lipitor": "lipitor-orig", "cough": "cough"}


def _has(fact: str, text: str) -> bool:
    """A fact (``a|b``: either wording) in the text; a bare number matches as a whole number only."""
    for alt in (a.strip().lower() for a in fact.split("|")):
        if re.fullmatch(r"\d+", alt):
            if re.search(rf"(?<![\d.]){alt}(?![\d.])", text):
                return True
        elif alt in text:
            return True
    return False


def _section_ok(want: str, got: str) -> bool:
    w, g = _norm(want), _norm(got)
    num = re.match(r"[\d.]+\d", want.strip())
    return w == g or (num is not None and g.startswith(num.group(0) + " ")) or (len(w) > 8 and (w in g or g in w))


def score(item: dict[str, Any], result: Any, files: dict[str, str] | None = None) -> dict[str, Any]:
    """One item's outcome (see the module docstring).

    ``files`` maps a document id to the file it was ingested from: a label's id is ``spl:<set id>``, so
    its document is known by its file (``humira.xml``), not by its id.
    """
    files = files or {}
    expect = str(item.get("expect") or "answer")
    out: dict[str, Any] = {"id": item["id"], "expect": expect, "answered": result.kind == "answer",
                           "confidence": getattr(result, "confidence", None)}  # fmt: skip
    step = result.trace.step("answer_confidence")
    if step is not None:  # the raw evidence features the shown confidence is computed from (fit_answer_confidence.py)
        out |= {"features": step.detail["features"], "retrieval_confidence": step.detail["retrieval"]}
    if expect in ("refuse", "out_of_scope"):
        return out | {"refuse_ok": result.kind == "abstain"}
    if result.kind == "abstain":
        return out | {"correct": False, "doc_section": False, "reason": result.reason[:120]}
    bullets = result.bullets
    per_doc = []
    for want in item["expected"]:
        stem = _STEMS[want["document"]]
        mine = [b for b in bullets if b.evidence.ref is not None
                and (b.evidence.ref.doc_id.startswith(stem) or files.get(b.evidence.ref.doc_id, "").startswith(stem))]
        text = " ".join(b.text for b in mine).lower()
        correct = all(_has(f, text) for f in want["facts"])
        sec = any(_section_ok(want["section"], b.evidence.ref.section) for b in mine if b.evidence.ref)
        per_doc.append((correct, bool(mine) and sec))
    pick = any if item.get("cite") == "any" else all
    out |= {"correct": pick(c for c, _ in per_doc), "doc_section": pick(s for _, s in per_doc),
            "unattributed": sum(b.evidence.ref is None for b in bullets), "disagreements": len(result.disagreements)}
    if expect == "disagreement":
        out["disagreement_shown"] = bool(result.disagreements)
    if item.get("cite") == "any":
        out["no_false_disagreement"] = not result.disagreements
    return out


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts over one group of outcomes."""
    ans = [r for r in rows if r["expect"] in ("answer", "disagreement")]
    ref = [r for r in rows if r["expect"] in ("refuse", "out_of_scope")]
    dis = [r for r in rows if "disagreement_shown" in r]
    return {"n": len(rows), "answerable": len(ans), "answered": sum(r["answered"] for r in ans),
            "correct": sum(r.get("correct", False) for r in ans), "doc_section": sum(r.get("doc_section", False) for r in ans),
            "must_refuse": len(ref), "refused": sum(r["refuse_ok"] for r in ref),
            "unattributed_bullets": sum(r.get("unattributed", 0) for r in rows),
            "disagreements_expected": len(dis), "disagreements_shown": sum(r["disagreement_shown"] for r in dis)}  # fmt: skip


def calibration(rows: list[dict[str, Any]], bins: int = 5) -> list[dict[str, Any]]:
    """Shown confidence against the share correct, by equal-width bins over the answered items."""
    pairs = [(r["confidence"], bool(r.get("correct"))) for r in rows if r["answered"] and r["confidence"] is not None]
    out = []
    for k in range(bins):
        lo, hi = k / bins, (k + 1) / bins
        got = [c for p, c in pairs if lo <= p < hi or (k == bins - 1 and p == 1.0)]
        if got:
            out.append({"bin": f"{lo:.1f}-{hi:.1f}", "n": len(got), "correct": round(sum(got) / len(got), 3)})
    return out


def ece(rows: list[dict[str, Any]], bins: int = 10) -> float:
    """Expected calibration error over the answered items: sum over equal-width bins of share * |accuracy - mean shown|."""
    pairs = [(r["confidence"], bool(r.get("correct"))) for r in rows if r["answered"] and r["confidence"] is not None]
    total = 0.0
    for k in range(bins):
        got = [(p, c) for p, c in pairs if k / bins <= p < (k + 1) / bins or (k == bins - 1 and p == 1.0)]
        if got:
            total += len(got) / len(pairs) * abs(sum(c for _, c in got) / len(got) - sum(p for p, _ in got) / len(got))
    return round(total, 4)


def plot_reliability(rows: list[dict[str, Any]], path: Path, title: str, bins: int = 5) -> None:
    """Reliability diagram: share correct against mean shown confidence per bin, with each bin's count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = [(r["confidence"], bool(r.get("correct"))) for r in rows if r["answered"] and r["confidence"] is not None]
    fig, ax = plt.subplots(figsize=(5, 5))
    ax.plot([0, 1], [0, 1], ls="--", color="grey", label="perfectly calibrated")
    xs, ys, ns = [], [], []
    for k in range(bins):
        got = [(p, c) for p, c in pairs if k / bins <= p < (k + 1) / bins or (k == bins - 1 and p == 1.0)]
        if got:
            xs.append(sum(p for p, _ in got) / len(got))
            ys.append(sum(c for _, c in got) / len(got))
            ns.append(len(got))
    ax.plot(xs, ys, marker="o", label="answers")
    for x, y, n in zip(xs, ys, ns, strict=True):
        ax.annotate(f"n={n}", (x, y), textcoords="offset points", xytext=(-10, 8), fontsize=8)
    ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="shown confidence (bin mean)", ylabel="share correct", title=title)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--realdocs", default="../shared/realdocs")
    ap.add_argument("--questions", default="/work/eval_inputs/guideline/guideline_outside_questions.json")
    ap.add_argument("--split", default="test")
    ap.add_argument("--ask", action="append", default=[])
    ap.add_argument("--reingest", action="store_true")
    ap.add_argument("--json", default="")
    ap.add_argument("--plot", default="", help="write a reliability diagram (PNG) of the split's answers here")
    ap.add_argument("--failures", action="store_true", help="list each failed item (train split only)")
    args = ap.parse_args()
    if args.failures and args.split != "train":
        ap.error("--failures reads items one by one: train split only (the test split is read in aggregate)")
    from core.runtime import Runtime
    from core.settings import load_settings

    print(f"# load={os.getloadavg()}", file=sys.stderr)
    rt = Runtime(load_settings())
    ingest(rt, Path(args.realdocs), args.reingest)
    qa = rt.guideline_qa
    files = {row[0]: row[1] for row in rt.kb.index(SPACE).store.docs()}  # doc id -> ingested file name
    for q in args.ask:
        print(f"Q: {q}\n{render(qa.answer(q, spaces=(SPACE,)))}\n")
    path = Path(args.questions)
    if args.ask or not path.exists():
        return
    items = [i for i in json.loads(path.read_text())["items"] if args.split in ("all", i.get("split"))]
    rows, per_doc = [], defaultdict(list)
    for item in items:
        result = qa.answer(item["question"], spaces=(SPACE,))
        row = score(item, result, files)
        rows.append(row)
        if args.failures and not (row.get("correct") and row.get("doc_section")) and not row.get("refuse_ok"):
            want = "; ".join(f"{e['document']} {e['section']!r} {e['facts']}" for e in item["expected"])
            print(f"## {item['id']} [{item.get('category')}/{item.get('population')}] {item['question']}\n"
                  f"want: {row['expect']} {want}\n{render(result)}\n", file=sys.stderr)  # fmt: skip
        docs = "+".join(sorted({e["document"] for e in item["expected"]})) or f"(none: {row['expect']})"
        per_doc[docs].append(row)
    report = {"split": args.split, "load": os.getloadavg(), "all": summary(rows),
              "per_document": {d: summary(r) for d, r in sorted(per_doc.items())}, "calibration": calibration(rows), "ece": ece(rows)}
    print(json.dumps(report, indent=1))
    if args.plot:
        plot_reliability(rows, Path(args.plot), f"Guideline QA, real documents, {args.split} split")
    if args.json:
        Path(args.json).write_text(json.dumps(report | {"items": rows}, indent=1))


if __name__ == "__main__":
    main()
