"""Resumable corpus ingestion: stream JSONL (+ optional ``.npy`` embeddings) into shards, index, swap in.

Layout under ``<index_dir>``::

    corpus_pubmed -> .corpus_pubmed.v20261122T081500-3f2a    (symlink, swapped with os.replace)
    .corpus_pubmed.v20261122T081500-3f2a/
        manifest.json                       encoder id, dim, metric, index type, shards, file sizes and sha256
        shard_000/docstore.sqlite           chunk text (core.kb.index.docstore), keyed by position in the shard
        shard_000/vectors.f32               float32 (or .f16) rows for exact re-ranking
        shard_000/ann.faiss                 FAISS index of the shard (flat, IVF-PQ or HNSW-SQ)
    .corpus_pubmed.resume.tmp/              work folder of an unfinished ingestion (state.json, ids.sqlite)

Every ``kb.corpus.checkpoint_rows`` chunks or ``kb.corpus.checkpoint_s`` seconds, whichever
comes first, the vectors are fsynced, the store
committed and ``state.json`` (line, byte offset, counts) replaced atomically;
an interrupted run started again with the same arguments continues from there.
Bad lines (invalid or truncated JSON, no id or text, duplicate ids, missing,
NaN or zero embedding rows) are collected with their line numbers, the work
folder is removed and :class:`CorpusInputError` lists them; the live version
is never touched until the finished folder is renamed into place. A full disk
raises :class:`DiskFullError` and keeps the work folder, so the same command
resumes once there is room.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from tqdm import tqdm

from core.artifacts import Build, write_faiss
from core.errors import CorpusInputError, InvalidInputError
from core.kb.corpus.ann import ann_params, build_shard_index, choose_kind, sample_rows, train_template
from core.kb.corpus.layout import CORPUS_FORMAT, corpus_dir, query_embedder, shard_files
from core.kb.corpus.records import CorpusRecord, RecordError, iter_lines, parse_record
from core.kb.corpus.vectors import Metric, VectorFile, bad_rows, open_embeddings, prepare, read_rows
from core.kb.corpus.work import OpenShard, SeenIds
from core.kb.types import Chunk

if TYPE_CHECKING:
    from core.embed import Embedder
    from core.settings import Settings

__all__ = ["CorpusReport", "ingest_corpus"]

log = logging.getLogger(__name__)
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


@dataclass
class CorpusReport:
    """What one ingestion produced."""

    name: str
    folder: str
    n_chunks: int
    n_shards: int
    index_type: str
    encoder_id: str
    dim: int
    metric: str
    resumed_at_line: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        """JSON-ready form for the CLI."""
        return asdict(self)


def _stat(path: Path) -> dict[str, Any]:
    st = path.stat()
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns}


class CorpusIngest:
    """One ingestion of one corpus (see the module docstring); :func:`ingest_corpus` runs it."""

    def __init__(
        self, settings: Settings, path: Path, name: str, embeddings: Path | None, encoder_id: str | None,
        metric: Metric | None, embedder: Embedder | None,
    ) -> None:  # fmt: skip
        if not name or not set(name) <= _NAME_CHARS or len(name) > 64:
            raise InvalidInputError(f"Corpus name {name!r} must be 1-64 letters, digits, '_' or '-'")
        if not path.is_file():
            raise InvalidInputError(f"Corpus file not found: {path}")
        self.settings, self.cfg, self.path, self.name = settings, settings.kb, path, name
        self.root = settings.paths.resolve(settings.paths.index_dir)
        self.metric: Metric = metric or self.cfg.corpus.metric
        self.matrix = open_embeddings(embeddings) if embeddings is not None else None
        self.embedder = embedder
        if self.matrix is not None and encoder_id:
            self.encoder_id, self.dim = encoder_id, int(self.matrix.shape[1])
        else:
            if self.embedder is None:
                self.embedder = query_embedder(settings, name)
            self.encoder_id, self.dim = self.embedder.model_id, int(self.embedder.dim)
            if encoder_id and encoder_id != self.encoder_id:
                raise InvalidInputError(
                    f"--encoder-id {encoder_id} differs from the query encoder {self.encoder_id}",
                    hint="Pass --encoder-id only with --embeddings, to name the encoder that made them.",
                )
            if self.matrix is not None and self.matrix.shape[1] != self.dim:
                msg = (f"embeddings are {self.matrix.shape[1]}-d but the query encoder {self.encoder_id} is "
                       f"{self.dim}-d; name the encoder that made them with --encoder-id and configure it in "
                       f"kb.corpus.query_embed")  # fmt: skip
                raise CorpusInputError(msg, [(0, msg)])
        self.fingerprint = {
            "format": CORPUS_FORMAT, "corpus": _stat(path), "embeddings": _stat(embeddings) if embeddings else None,
            "encoder_id": self.encoder_id, "dim": self.dim, "metric": self.metric,
            "shard_rows": self.cfg.corpus.shard_rows, "vector_dtype": self.cfg.corpus.vector_dtype,
        }  # fmt: skip
        self.versions = corpus_dir(self.root, name)
        self.work = self.versions.resume_path
        self.problems: list[tuple[int, str]] = []
        self.unwritten = 0  # records scanned but not written once a problem was found

    # State ------------------------------------------------------------------------------------------------
    def _load_state(self, restart: bool, resume: bool = False) -> dict[str, Any]:
        state_file = self.work / "state.json"
        if not restart and state_file.is_file():
            state = json.loads(state_file.read_text())
            if state.get("fingerprint") == self.fingerprint:
                return dict(state)
            if resume:
                raise InvalidInputError(
                    f"The unfinished ingestion of corpus {self.name!r} was of another file, embeddings or settings",
                    hint="Run the same command as the interrupted one, or drop --resume to start over.",
                )
            log.warning("corpus %s: input or settings changed since the interrupted run; starting over", self.name)
        if resume:
            raise InvalidInputError(
                f"No unfinished ingestion of corpus {self.name!r} to resume",
                hint="Drop --resume: the command resumes an interrupted run by itself and starts one otherwise.",
            )
        for child in self.work.iterdir():
            if child.name != "lock":
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        return {"fingerprint": self.fingerprint, "line": 0, "offset": 0, "count": 0, "shard": 0, "shard_count": 0,
                "indexed": []}  # fmt: skip

    def _save_state(self, state: dict[str, Any]) -> None:
        tmp = self.work / f"state.{uuid.uuid4().hex[:6]}"
        try:
            tmp.write_text(json.dumps(state))
            os.replace(tmp, self.work / "state.json")
        except OSError:
            tmp.unlink(missing_ok=True)
            raise

    # Streaming --------------------------------------------------------------------------------------------
    def _vectors_for(self, records: list[CorpusRecord], first: int) -> np.ndarray | None:
        """Vectors of ``records`` (corpus rows ``first``...), or ``None`` after recording problems."""
        if self.matrix is not None:
            have = max(0, min(len(records), self.matrix.shape[0] - first))
            for rec in records[have:]:
                self.problems.append((rec.line, f"no embedding row for this record (embeddings have "
                                                f"{self.matrix.shape[0]} rows)"))  # fmt: skip
            batch = read_rows(self.matrix, first, first + have)
        else:
            if self.problems or self.embedder is None:
                return None  # already failing: do not spend CPU embedding
            texts = [r.title + "\n" + r.text if r.title else r.text for r in records]
            step = self.cfg.embed_batch
            batch = np.vstack([self.embedder.embed_passages(texts[i : i + step]) for i in range(0, len(texts), step)])
        for i, reason in bad_rows(batch, self.metric):
            self.problems.append((records[i].line, f"embedding row {first + i}: {reason}"))
        return prepare(batch, self.metric) if not self.problems else None

    def _flush(self, records: list[CorpusRecord], state: dict[str, Any], shard: OpenShard, ids: SeenIds) -> None:
        if not records:
            return
        for i, first_line in sorted(ids.duplicates(records).items()):
            self.problems.append((records[i].line, f"duplicate id {records[i].id!r} (first at line {first_line})"))
        first = state["count"] + self.unwritten
        vectors = self._vectors_for(records, first)
        ids.add(records, first)
        if vectors is None or self.problems:
            self.unwritten += len(records)  # still scanned for problems, keeping rows aligned with lines
            return
        chunks = [Chunk(chunk_id=r.id, doc_id=r.id, kb=f"corpus:{self.name}", text=r.text, title=r.title,
                        source=self.path.name) for r in records]  # fmt: skip
        shard.store.add_chunks(chunks)
        shard.vectors.add(vectors)
        shard.vectors.sync()
        shard.store.commit()
        ids.commit()
        state["count"] += len(records)
        state["shard_count"] += len(records)

    def _stream(self, state: dict[str, Any], on_checkpoint: Callable[[int], None] | None) -> None:
        cfg = self.cfg
        log.debug("corpus %s: streaming records and vectors", self.name, extra={"phase": "stream"})
        ids = SeenIds(self.work / "ids.sqlite")
        ids.truncate(state["count"])
        shard = OpenShard(self.work / f"shard_{state['shard']:03d}", self.dim, cfg.corpus.vector_dtype)
        shard.rewind(state["shard_count"])
        size = self.path.stat().st_size
        bar = tqdm(total=size, initial=state["offset"], unit="B", unit_scale=True, desc=f"corpus {self.name}",
                   file=sys.stderr, disable=not cfg.progress)  # fmt: skip
        batch: list[CorpusRecord] = []
        last = (state["line"], state["offset"])
        since = time.monotonic()

        def checkpoint() -> None:
            nonlocal shard, batch, since
            since = time.monotonic()
            self._flush(batch, state, shard, ids)
            batch = []
            if self.problems:
                return
            state["line"], state["offset"] = last
            if state["shard_count"] >= cfg.corpus.shard_rows:
                shard.close()
                state["shard"], state["shard_count"] = state["shard"] + 1, 0
                shard = OpenShard(self.work / f"shard_{state['shard']:03d}", self.dim, cfg.corpus.vector_dtype)
            self._save_state(state)
            bar.set_postfix_str(f"{state['count']:,} chunks", refresh=False)  # the bar's ETA runs on bytes read
            bar.update(last[1] - bar.n)
            if on_checkpoint is not None:
                on_checkpoint(state["count"])

        try:
            with self.path.open("rb") as fh:
                fh.seek(state["offset"])
                for line, end, raw in iter_lines(fh, state["line"], cfg.corpus.max_line_kb * 1024):
                    last = (line, end)
                    try:
                        if raw is None:
                            raise RecordError(f"longer than kb.corpus.max_line_kb ({cfg.corpus.max_line_kb} KB)")
                        batch.append(parse_record(raw, line))
                    except RecordError as exc:
                        self.problems.append((line, str(exc)))
                    room = cfg.corpus.shard_rows - state["shard_count"]
                    if len(batch) >= min(cfg.corpus.checkpoint_rows, room) or (
                        batch and time.monotonic() - since >= cfg.corpus.checkpoint_s
                    ):
                        checkpoint()
                    if len(self.problems) >= cfg.corpus.max_errors:
                        break
                else:
                    checkpoint()
            if self.matrix is not None and not self.problems and state["count"] != self.matrix.shape[0]:
                self.problems.append((0, f"embeddings have {self.matrix.shape[0]} rows but the corpus has "
                                         f"{state['count']} records"))  # fmt: skip
            if not self.problems and state["count"] == 0:
                self.problems.append((0, "the corpus file holds no records"))
        finally:
            bar.close()
            try:
                shard.close()
            finally:
                ids.close()

    # Index and commit -------------------------------------------------------------------------------------
    def _index(self, state: dict[str, Any]) -> dict[str, Any]:
        import faiss

        cfg, n = self.cfg, state["count"]
        store_name, vec_name, ann_name = shard_files(cfg.corpus.vector_dtype)
        counts = [cfg.corpus.shard_rows] * (n // cfg.corpus.shard_rows)
        counts += [n % cfg.corpus.shard_rows] if n % cfg.corpus.shard_rows else []
        folders = [self.work / f"shard_{i:03d}" for i in range(len(counts))]
        for extra in self.work.glob("shard_*"):
            if extra not in folders:  # an empty shard opened right after a full one
                shutil.rmtree(extra)
        files = [
            VectorFile(f / vec_name, c, self.dim, cfg.corpus.vector_dtype) for f, c in zip(folders, counts, strict=True)
        ]
        kind = choose_kind(n, cfg)
        n_train = min(n, cfg.corpus.train_rows)
        params = ann_params(kind, n, self.dim, n_train, cfg)
        template_file = self.work / "template.faiss"
        try:
            if template_file.is_file():
                template = faiss.read_index(str(template_file))
            else:
                log.info("corpus %s: training a %s index on %d vectors", self.name, kind, n_train,
                         extra={"phase": "sample"})  # fmt: skip
                sample = sample_rows(files, n_train) if kind != "flat" else np.zeros((0, self.dim), np.float32)
                log.debug("corpus %s: training", self.name, extra={"phase": "train"})
                template = train_template(kind, self.dim, params, sample)
                del sample
                part = self.work / "template.faiss.part"  # renamed when whole: a resumed run never reads a torn file
                write_faiss(template, part)
                os.replace(part, template_file)
            for i, (folder, vf) in enumerate(zip(folders, files, strict=True)):
                if i not in state["indexed"]:
                    log.debug("corpus %s: indexing shard %d", self.name, i, extra={"phase": "add"})
                    build_shard_index(template, vf, folder / ann_name)
                    state["indexed"].append(i)
                    self._save_state(state)
        finally:
            for vf in files:
                vf.close()
        offsets = [int(x) for x in np.cumsum([0, *counts])[:-1]]
        return {
            "index_type": kind, "ann": params,
            "shards": [{"dir": f.name, "n": c, "offset": o} for f, c, o in zip(folders, counts, offsets, strict=True)],
            "shard_files": {"store": store_name, "vectors": vec_name, "ann": ann_name},
        }  # fmt: skip

    def _commit(self, build: Build, state: dict[str, Any], index: dict[str, Any]) -> Path:
        for leftover in ("state.json", "ids.sqlite", "ids.sqlite-wal", "ids.sqlite-shm", "template.faiss", "lock"):
            (self.work / leftover).unlink(missing_ok=True)
        log.debug("corpus %s: checksums and manifest", self.name, extra={"phase": "checksum"})
        return build.commit({
            "name": self.name, "kb": f"corpus:{self.name}",
            "encoder_id": self.encoder_id, "dim": self.dim, "metric": self.metric,
            "vector_dtype": self.cfg.corpus.vector_dtype, "n_chunks": state["count"], **index,
            "source": self.fingerprint["corpus"], "embeddings": self.fingerprint["embeddings"],
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        })  # fmt: skip

    def run(self, restart: bool, on_checkpoint: Callable[[int], None] | None, resume: bool = False) -> CorpusReport:
        """Stream, check, index and swap in; see :func:`ingest_corpus`."""
        start = time.perf_counter()
        # A resumable build: a full disk becomes DiskFullError and any failure keeps the work folder to resume from.
        with self.versions.build(resumable=True) as build, (self.work / "lock").open("w") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                raise InvalidInputError(f"Another ingestion of corpus {self.name!r} is running") from exc
            state = self._load_state(restart, resume)
            resumed = int(state["line"])
            try:
                if not state["indexed"]:
                    self._stream(state, on_checkpoint)
                if self.problems:
                    self.problems.sort()
                    listed = "; ".join(f"line {n}: {m}" if n else m for n, m in self.problems[:5])
                    more = f" (+{len(self.problems) - 5} more)" if len(self.problems) > 5 else ""
                    raise CorpusInputError(f"Corpus {self.path.name}: {listed}{more}", self.problems)
                index = self._index(state)
                final = self._commit(build, state, index)
            except CorpusInputError:
                build.abort()  # bad input: nothing to resume
                raise
            except BaseException:
                log.warning("corpus %s: interrupted at line %s; run the same command to resume", self.name,
                            state["line"])  # fmt: skip
                raise
        return CorpusReport(
            name=self.name, folder=str(final), n_chunks=state["count"], n_shards=len(index["shards"]),
            index_type=index["index_type"], encoder_id=self.encoder_id, dim=self.dim, metric=self.metric,
            resumed_at_line=resumed, seconds=round(time.perf_counter() - start, 2),
        )  # fmt: skip


def ingest_corpus(
    settings: Settings,
    path: Path,
    name: str,
    *,
    embeddings: Path | None = None,
    encoder_id: str | None = None,
    metric: Metric | None = None,
    embedder: Embedder | None = None,
    restart: bool = False,
    on_checkpoint: Callable[[int], None] | None = None,
    resume: bool = False,
) -> CorpusReport:
    """Ingest the JSONL corpus at ``path`` as ``name`` and make it the live version.

    ``embeddings`` is a ``.npy`` matrix with one row per record in file order;
    ``encoder_id`` names the query encoder those vectors pair with (default:
    the corpus's configured query encoder, whose dimension must match).
    Without ``embeddings`` the query encoder's passage side embeds the text.
    An unfinished earlier run with the same inputs and settings is resumed
    unless ``restart``; with ``resume`` there must be one (:class:`InvalidInputError`
    otherwise). ``on_checkpoint(chunks_done)`` runs after every
    checkpoint (progress reporting and fault-injection tests).
    """
    job = CorpusIngest(settings, Path(path), name, embeddings and Path(embeddings), encoder_id, metric, embedder)
    if resume and restart:
        raise InvalidInputError("--resume and --restart contradict each other", hint="Choose one.")
    return job.run(restart, on_checkpoint, resume)
