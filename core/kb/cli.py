"""``python -m core kb ...``: ingest, build, search, stats and delete knowledge-base documents; large corpora."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from core.kb.specs import KB_NAMES, kbs_for_kind

__all__ = ["register"]

_OWNER_HELP = (
    "For a document space (user, user.u<id>): the doctor (u<user id>) whose upload this is; for the shared "
    "space a share request is filed that a second doctor approves."
)


def _kb(args: argparse.Namespace) -> Any:
    from core.cli import settings_from_args
    from core.runtime import Runtime

    return Runtime(settings_from_args(args)).kb


def _ingest(kind: str, default_kb: str) -> Any:
    def run(args: argparse.Namespace) -> int:
        from core.cli import emit

        target = args.kb or default_kb
        if _is_space(target):
            return _ingest_as_upload(args, target, [Path(p) for p in args.paths])
        report = _kb(args).ingest(args.paths, kind, target, rebuild=args.rebuild)
        emit(report.to_json(), args.json)
        return 1 if report.errors and not report.docs else 0

    return run


def _is_space(kb: str) -> bool:
    from core.kb.spaces import SHARED_SPACE
    from core.kb.types import SPACE_PREFIX

    return kb == SHARED_SPACE or kb.startswith(SPACE_PREFIX)


def _need_owner(args: argparse.Namespace, space: str) -> None:
    from core.errors import InvalidInputError

    if not args.owner:
        raise InvalidInputError(
            f"Documents enter the document space {space!r} only as a doctor's upload: name the doctor with --owner",
            hint="--owner u<user id> adds them to that doctor's documents and, for the shared space, files a share "
            "request that a second doctor approves (kb docs approve, or the My documents tab).",
        )


def _ingest_as_upload(args: argparse.Namespace, space: str, paths: list[Path]) -> int:
    """A document space is filled the way the page fills it: the owner's upload, then a share request.

    Folders are read for the file types an upload takes; nothing enters the shared space until
    a second doctor approves (``kb docs approve``, or the My documents tab).
    """
    from core.cli import emit
    from core.kb.sharing import Sharing
    from core.kb.spaces import UPLOAD_TYPES, DocumentSpaces
    from core.runtime import Runtime

    _need_owner(args, space)
    files = [f for p in paths for f in (sorted(p.rglob("*")) if p.is_dir() else [p])]
    files = [f for f in files if f.is_file() and (f in paths or f.suffix.lower().lstrip(".") in UPLOAD_TYPES)]
    spaces = DocumentSpaces(_kb(args))
    sharing = Sharing(spaces, Runtime(spaces.settings).db)
    report, requests = sharing.upload_and_request(args.owner, [(f.name, f.read_bytes()) for f in files], space)
    emit({**report.to_json(), "share_requests": requests}, args.json)
    if requests and not args.json:
        print(f"Not shared yet: {len(requests)} share request(s) wait for a second doctor's approval.")
    return 1 if report.errors and not report.docs else 0


def _build(args: argparse.Namespace) -> int:
    from core.cli import emit
    from core.kb.demo.build import build_demo_kb

    kb = _kb(args)
    reports = build_demo_kb(kb.settings, force=args.force, base=kb)
    emit({"rebuilt": [r.to_json() for r in reports]}, args.json)
    return 0


def _ingest_realistic(args: argparse.Namespace) -> int:
    from core.cli import emit
    from core.kb.demo.realistic import ingest_realistic, realistic_files

    if _is_space(args.kb):
        _need_owner(args, args.kb)  # before the PDF is rendered
        pdfs, labels = realistic_files(_kb(args).settings)
        return _ingest_as_upload(args, args.kb, [*pdfs, *labels])
    reports = ingest_realistic(_kb(args), args.kb)
    emit({"ingested": [r.to_json() for r in reports]}, args.json)
    return 1 if any(r.errors for r in reports) else 0


def _realshaped(args: argparse.Namespace) -> int:
    from pathlib import Path

    from core.cli import emit, settings_from_args
    from core.kb.demo.longguides import write_long_guidelines

    settings = settings_from_args(args)
    assets = settings.paths.resolve(settings.paths.assets_dir) / settings.kb.demo_subdir / "realshaped"
    out = Path(args.out) if args.out else settings.paths.resolve(settings.paths.data_dir) / "generated" / "realshaped"
    emit({"written": [str(p) for p in write_long_guidelines(assets, out)]}, args.json)
    return 0


def _docs(args: argparse.Namespace) -> int:
    from pathlib import Path

    from core.cli import emit
    from core.kb.spaces import DocumentSpaces

    spaces = DocumentSpaces(_kb(args))
    if args.docs_command == "list":
        emit([vars(d) for d in spaces.documents(args.owner)], args.json)
        return 0
    if args.docs_command in ("share", "approve", "reject", "requests"):
        from core.kb.sharing import Sharing
        from core.runtime import Runtime

        sharing = Sharing(spaces, Runtime(spaces.settings).db)
        if args.docs_command == "share":
            emit({"request": sharing.request(args.owner, args.doc_id)}, args.json)
        elif args.docs_command == "requests":
            emit(sharing.pending(), args.json)
        else:
            emit({"shared": getattr(sharing, args.docs_command)(args.owner, args.request_id)}, args.json)
        return 0
    if args.docs_command == "add":
        report = spaces.upload(args.owner, [(Path(p).name, Path(p).read_bytes()) for p in args.paths])
        emit(report.to_json(), args.json)
        return 1 if report.errors and not report.docs else 0
    if args.docs_command == "delete":
        removed = spaces.delete(args.owner, args.doc_id, args.shared)
        emit({"deleted": args.doc_id, "chunks_removed": removed}, args.json)
        return 0
    emit(spaces.reingest(args.owner, args.shared).to_json(), args.json)
    return 0


def _search(args: argparse.Namespace) -> int:
    from core.cli import emit

    kb = _kb(args)
    top_k = args.top_k or kb.settings.kb.top_k
    hits = kb.search(args.query, args.kb, top_k, args.mode)
    rows = [
        {
            "rank": i,
            "chunk_id": h.chunk_id,
            "score": round(h.score, 6),
            "dense_score": None if h.dense_score is None else round(h.dense_score, 4),
            "bm25_score": None if h.bm25_score is None else round(h.bm25_score, 4),
            "title": h.title,
            "drug": h.title if h.set_id else None,
            "drug_names": list(h.drug_names),
            "section": h.section_title,
            "section_path": list(h.section_path),
            "loinc": h.section_code,
            "source": h.source,
            "page": h.page,
            "set_id": h.set_id,
            "text": h.text,
        }
        for i, h in enumerate(hits, start=1)
    ]
    if args.json:
        emit(rows, True)
    else:
        for r in rows:
            where = " > ".join([r["title"], *r["section_path"]])
            print(f"{r['rank']:>2}. {r['score']:.4f}  {where}  [{r['loinc'] or r['source']}]\n    {r['text'][:200]}")
    return 0


def _stats(args: argparse.Namespace) -> int:
    from core.cli import emit

    emit(_kb(args).stats(), args.json)
    return 0


def _delete(args: argparse.Namespace) -> int:
    from core.cli import emit

    removed = _kb(args).delete(args.doc_id, args.kb)
    emit({"deleted": args.doc_id, "kb": args.kb, "chunks_removed": removed}, args.json)
    return 0


def _ingest_corpus(args: argparse.Namespace) -> int:
    from core.cli import emit, settings_from_args
    from core.kb.corpus.build import ingest_corpus

    report = ingest_corpus(
        settings_from_args(args), args.path, args.name, embeddings=args.embeddings, encoder_id=args.encoder_id,
        metric=args.metric, restart=args.restart, resume=args.resume,
    )  # fmt: skip
    emit(report.to_json(), args.json)
    return 0


def _search_corpus(args: argparse.Namespace) -> int:
    from core.cli import emit, settings_from_args
    from core.runtime import Runtime

    settings = settings_from_args(args)
    hits = Runtime(settings).corpora.search(args.query, f"corpus:{args.name}", args.top_k or settings.kb.top_k, args.mode)
    rows: list[dict[str, Any]] = [
        {"rank": i, "chunk_id": h.chunk_id, "corpus": h.kb.removeprefix("corpus:"), "score": round(h.score, 6),
         "dense_score": None if h.dense_score is None else round(h.dense_score, 4), "title": h.title, "text": h.text}
        for i, h in enumerate(hits, start=1)
    ]  # fmt: skip
    if args.json:
        emit(rows, True)
    else:
        for r in rows:
            print(f"{r['rank']:>2}. {r['score']:.4f}  [{r['corpus']}:{r['chunk_id']}] {r['title']}")
            print(f"    {r['text'][:200]}")
    return 0


def _corpora(args: argparse.Namespace) -> int:
    from core.cli import emit, settings_from_args
    from core.kb.corpus.layout import corpus_names
    from core.runtime import Runtime

    search = Runtime(settings_from_args(args)).corpora
    keys = ("encoder_id", "dim", "metric", "index_type", "n_chunks", "vector_dtype", "built_at")
    out = {}
    for name in corpus_names(search.root):
        m = search.index(name).manifest
        out[name] = {**{k: m[k] for k in keys}, "shards": len(m["shards"]), "path": str(search.index(name).folder)}
    emit(out, args.json)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add the ``kb`` command and its sub-commands."""
    kb = sub.add_parser("kb", help="Knowledge bases: guidelines, FDA drug labels, user documents.")
    kbsub = kb.add_subparsers(dest="kb_command", required=True)

    for name, kind, default, what in (
        ("ingest-guidelines", "guideline", "guidelines", "Markdown/HTML/PDF guidelines"),
        ("ingest-spl", "spl", "druglabels", "SPL XML labels (files, folders, DailyMed zips)"),
    ):
        choices = kbs_for_kind(kind)
        p = kbsub.add_parser(name, help=f"Ingest {what}.")
        p.add_argument("paths", nargs="+", help="Files, folders or zip archives.")
        p.add_argument("--kb", choices=choices, default=None, help=f"Target knowledge base (default {default}).")
        p.add_argument("--owner", default=None, help=_OWNER_HELP)
        p.add_argument("--rebuild", action="store_true", help="Replace the index with only these documents.")
        p.add_argument("--json", action="store_true", help="Print the report as JSON.")
        p.set_defaults(func=_ingest(kind, default))

    p = kbsub.add_parser("build", help="Build or refresh the demo KBs from the assets folder when missing or stale.")
    p.add_argument("--force", action="store_true", help="Rebuild even when up to date.")
    p.add_argument("--json", action="store_true", help="Print the report as JSON.")
    p.set_defaults(func=_build)

    p = kbsub.add_parser(
        "ingest-realistic",
        help="Render the long demo guideline to PDF and ingest it with the six long demo labels, as an upload is "
        "(assets/kb/realistic; demo data, not for clinical use).",
    )
    p.add_argument("--kb", default="user", help="Target knowledge base or document space (default: shared space).")
    p.add_argument("--owner", default=None, help=_OWNER_HELP)
    p.add_argument("--json", action="store_true", help="Print the reports as JSON.")
    p.set_defaults(func=_ingest_realistic)

    p = kbsub.add_parser(
        "realshaped",
        help="Render the two long TB guidelines that disagree on purpose (about 150 pages each) to PDF and plain text "
        "(assets/kb/realshaped; demo data, not for clinical use).",
    )
    p.add_argument("--out", default=None, help="Output folder (default: <data_dir>/generated/realshaped).")
    p.add_argument("--json", action="store_true", help="Print the written paths as JSON.")
    p.set_defaults(func=_realshaped)

    docs = kbsub.add_parser("docs", help="A doctor's document space (and the shared one): list, add, delete, reingest.")
    docsub = docs.add_subparsers(dest="docs_command", required=True)
    for name, what in (("list", "List documents by title (own, then shared)."), ("add", "Add files to your own space."),
                       ("delete", "Delete one document (by doc_id)."), ("reingest", "Parse the kept files again."),
                       ("share", "Ask to share one of your documents (a second doctor approves)."),
                       ("requests", "List open share requests."),
                       ("approve", "Approve another doctor's share request (by request id)."),
                       ("reject", "Reject a share request.")):  # fmt: skip
        p = docsub.add_parser(name, help=what)
        p.add_argument("--owner", required=True, help="Owner key: u<user id> (see core.kb.spaces.owner_key).")
        if name == "add":
            p.add_argument("paths", nargs="+", help="Files (Markdown, HTML, PDF, SPL XML, zip).")
        if name in ("delete", "share"):
            p.add_argument("doc_id")
        if name in ("approve", "reject"):
            p.add_argument("request_id")
        if name in ("delete", "reingest"):
            p.add_argument("--shared", action="store_true", help="The shared space instead of the owner's own.")
        p.add_argument("--json", action="store_true", help="Print JSON.")
        p.set_defaults(func=_docs)

    p = kbsub.add_parser("search", help="Search one knowledge base or document space (user.u<id>).")
    p.add_argument("query")
    p.add_argument("--kb", required=True, help=f"One of {', '.join(KB_NAMES)}, or a document space user.u<id>.")
    p.add_argument("--top-k", type=int, default=None, help="Hits to return (default kb.top_k).")
    p.add_argument("--mode", choices=("hybrid", "dense", "bm25"), default="hybrid")
    p.add_argument("--json", action="store_true", help="Print hits as JSON.")
    p.set_defaults(func=_search)

    p = kbsub.add_parser(
        "ingest-corpus",
        help="Ingest a JSONL corpus (MedRAG, Self-BioRAG or {id, text} records), optionally with precomputed "
        "embeddings; resumable (run the same command again after an interruption).",
    )
    p.add_argument("path", help="JSONL file, one record per line.")
    p.add_argument("--name", required=True, help="Corpus name (letters, digits, _ and -).")
    p.add_argument("--embeddings", default=None, help=".npy matrix, one row per record in file order.")
    p.add_argument(
        "--encoder-id", default=None, help="Query encoder the embeddings pair with (default: the configured one)."
    )
    p.add_argument("--metric", choices=("cosine", "ip"), default=None, help="Similarity (default kb.corpus.metric).")
    p.add_argument("--restart", action="store_true", help="Discard an unfinished earlier run instead of resuming.")
    p.add_argument(
        "--resume", action="store_true",
        help="Continue the interrupted run of the same file and settings (killed, crashed, out of disk); an error "
        "when there is none. Without either flag an interrupted run is resumed when one exists.",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="Print the report as JSON.")
    p.set_defaults(func=_ingest_corpus)

    p = kbsub.add_parser("search-corpus", help="Search one corpus, or several fused by RRF (NAME1+NAME2).")
    p.add_argument("query")
    p.add_argument("--name", required=True, help="Corpus name, or names joined by '+'.")
    p.add_argument("--top-k", type=int, default=None, help="Hits to return (default kb.top_k).")
    p.add_argument("--mode", choices=("dense", "hybrid"), default="dense", help="hybrid: RRF scores.")
    p.add_argument("--json", action="store_true", help="Print hits as JSON.")
    p.set_defaults(func=_search_corpus)

    p = kbsub.add_parser("corpora", help="Ingested corpora and what built them.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_corpora)

    p = kbsub.add_parser("stats", help="Documents, chunks and build settings of every knowledge base.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_stats)

    p = kbsub.add_parser("delete", help="Delete one document (by doc_id) from a knowledge base.")
    p.add_argument("doc_id")
    p.add_argument("--kb", choices=KB_NAMES, default="user")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_delete)
