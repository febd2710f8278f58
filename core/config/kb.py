"""Settings group for the knowledge bases (registered in :mod:`core.settings`).

Every size, limit and retrieval constant of :mod:`core.kb` lives here once;
no function signature in the package carries a second default. Override from
the environment with ``CASEBOOK_KB__<FIELD>``, for example
``CASEBOOK_KB__RRF_K=30``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from core.config.common import Group, nest_renamed

__all__ = ["RENAMED", "CorpusSettings", "KBSettings"]


class CorpusSettings(Group):
    """Large corpora (`python -m core kb ingest-corpus`; docs/LARGE_CORPORA.md). Before this group existed its
    fields were `kb.corpus_<field>`; those names still work for one release."""

    shard_rows: int = Field(
        500_000,
        ge=1,
        description="Chunks per corpus shard: each shard has its own document store, vector file and FAISS index, "
        "and all shards are searched together.",
    )
    checkpoint_rows: int = Field(
        500,
        ge=1,
        description="Chunks between resumable checkpoints of a corpus ingestion; after an interruption the same "
        "command redoes at most this much work.",
    )
    checkpoint_s: float = Field(
        60.0,
        gt=0,
        description="Seconds between checkpoints of a corpus ingestion at most, whichever of this and "
        "`checkpoint_rows` comes first (slow embedding still checkpoints every minute).",
    )
    flat_max_chunks: int = Field(
        50_000,
        ge=1,
        description="A corpus with fewer chunks gets an exact flat FAISS index; a larger one gets `ann`.",
    )
    ann: Literal["ivfpq", "hnsw-sq"] = Field(
        "ivfpq",
        description="Approximate index of a large corpus: `ivfpq` (IVF with product quantisation, inverted lists "
        "memory-mapped) or `hnsw-sq` (HNSW graph over 8-bit scalar-quantised vectors). Both re-rank exactly.",
    )
    ivf_nlist: int = Field(
        0, ge=0, description="IVF lists of a corpus index; 0 picks sqrt(chunks) (1,000 at 1M chunks)."
    )
    ivf_nprobe: int = Field(32, ge=1, description="IVF lists visited per corpus query.")
    pq_m: int = Field(
        0,
        ge=0,
        description="PQ sub-quantisers, one byte each per vector; 0 picks dim/8 (96 bytes for 768-d). Must divide "
        "the dimension.",
    )
    hnsw_m: int = Field(32, ge=4, description="HNSW graph degree (M) of an `hnsw-sq` corpus index.")
    hnsw_ef_construction: int = Field(80, ge=8, description="HNSW efConstruction of an `hnsw-sq` corpus index.")
    hnsw_ef_search: int = Field(128, ge=8, description="HNSW efSearch of an `hnsw-sq` corpus index.")
    train_rows: int = Field(
        65_536,
        ge=1_000,
        description="Vectors sampled (evenly, seeded) to train the IVF and PQ codebooks. The sample is the "
        "largest allocation of an ingestion: peak RSS is about 110 MB plus this times dim times 4 bytes "
        "(201 MB at 768-d), whatever the corpus size.",
    )
    rerank: int = Field(
        100,
        ge=1,
        description="Candidates per query taken from the approximate index and re-scored exactly from the vectors "
        "on disk (at least top_k).",
    )
    vector_dtype: Literal["float32", "float16"] = Field(
        "float32",
        description="Storage of the on-disk vectors used for exact re-ranking (`float16` halves the disk and page "
        "cache they take, at about 1e-3 error in a score).",
    )
    metric: Literal["cosine", "ip"] = Field(
        "cosine",
        description="Default similarity of a new corpus: `cosine` L2-normalises vectors and queries, `ip` keeps "
        "raw inner products (MedCPT was trained for inner product). Recorded in the corpus manifest.",
    )
    mmap: bool = Field(
        True,
        description="Memory-map FAISS index data (IVF inverted lists, flat and scalar-quantised codes) instead "
        "of reading it into RAM.",
    )
    max_errors: int = Field(
        20, ge=1, description="Bad corpus lines listed before an ingestion stops scanning (nothing is built)."
    )
    max_line_kb: int = Field(1024, ge=1, description="Longest accepted corpus JSONL line, in KB.")
    verify_checksums: bool = Field(
        False,
        description="Check the sha256 of every corpus file when it is opened (file sizes are always checked; "
        "hashing takes about 4 s per GB).",
    )
    query_embed: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Per corpus name: fields of `embed` (backend, model_path, query_prefix...) that build its "
        "query encoder; a corpus not listed is queried with `embed`. The encoder must be the one the manifest "
        "records.",
    )


# Old flat names of the `corpus` fields (accepted for one release, with a FutureWarning; docs/SETTINGS.md).
RENAMED: dict[str, str] = {f"corpus_{name}": f"corpus.{name}" for name in CorpusSettings.model_fields}


class KBSettings(Group):
    """Knowledge-base ingestion and hybrid retrieval."""

    # Chunking.
    chunk_tokens: int = Field(240, ge=16, description="Guideline chunk size in embedding-model tokens.")
    chunk_overlap: int = Field(50, ge=0, description="Tokens shared by consecutive guideline chunks.")
    spl_section_tokens: int = Field(
        400,
        ge=32,
        description="A drug-label section longer than this (embedding-model tokens) is split at paragraph "
        "boundaries inside the section; shorter sections are one chunk. Below the encoders' 512-token window.",
    )
    header_in_index: bool = Field(
        True,
        description="Prefix the text that is embedded and BM25-indexed with the drug or document title and the "
        "section path (label sections rarely repeat the drug name). The stored chunk text stays unprefixed.",
    )

    # Retrieval.
    rrf_k: int = Field(60, ge=1, description="Reciprocal-rank-fusion constant k for dense + BM25 fusion.")
    candidates: int = Field(
        50, ge=1, description="Candidates fetched from each of the dense and BM25 rankings before fusion."
    )
    top_k: int = Field(5, ge=1, description="Hits returned when a caller (the CLI) does not say how many.")
    max_top_k: int = Field(100, ge=1, description="Largest top_k a search may ask for.")
    bm25_stemmer: Literal["english", "none"] = Field(
        "english", description="Snowball stemmer for BM25 tokens (`english` needs the PyStemmer package)."
    )
    faiss_threads: int = Field(1, ge=1, description="OpenMP threads for FAISS queries (1 is fastest for one query).")
    ivf_min_chunks: int = Field(
        200_000,
        ge=1,
        description="An index with at least this many chunks uses FAISS IVF-Flat (approximate) instead of an "
        "exact flat index.",
    )
    ivf_nlist: int = Field(
        0, ge=0, description="IVF lists; 0 picks sqrt(chunks) (1,000 lists at 1M chunks: k-means trains in seconds)."
    )
    ivf_nprobe: int = Field(
        64, ge=1, description="IVF lists visited per query (recall/latency trade-off; see docs/benchmarks/kb.md)."
    )
    verify_checksums: bool = Field(
        True,
        description="Check the sha256 of every index file against its manifest when an index is opened "
        "(about 4 s per GB here; turn off for multi-GB indexes).",
    )

    # Input limits (bad or hostile files).
    max_file_mb: float = Field(64.0, gt=0, description="Largest single document (XML, PDF, Markdown, HTML) in MB.")
    max_zip_member_mb: float = Field(256.0, gt=0, description="Largest uncompressed zip member (inner zips too) in MB.")
    max_zip_ratio: float = Field(
        200.0, gt=1, description="Largest compression ratio of a zip member; above it the member is a zip bomb."
    )
    max_zip_depth: int = Field(2, ge=1, description="Zip nesting accepted (2: a DailyMed zip of zips).")
    max_pdf_pages: int = Field(2000, ge=1, description="Largest PDF accepted, in pages.")
    parse_isolation: bool = Field(
        True,
        description="Parse each uploaded or ingested document in a worker process with the CPU-time and memory "
        "budgets below, so a hostile file fails alone and the app survives.",
    )
    parse_cpu_seconds: float = Field(
        60.0, gt=0, description="CPU seconds one document may take to parse in the worker before it is refused."
    )
    parse_memory_mb: float = Field(
        1024.0,
        ge=0,
        description="Memory (MB of address space above the worker's own) one document may take to parse; 0 means "
        "no limit.",
    )
    pdf_tables: Literal["pdfplumber", "off"] = Field(
        "pdfplumber",
        description="How PDF tables are read: 'pdfplumber' finds ruled tables and indexes each row with its column "
        "headers ('Weight band: 40-54 kg | Dose: 1200 mg'); 'off' leaves them as pypdf's text lines.",
    )
    pdf_repeat_share: float = Field(
        0.4,
        gt=0,
        le=1,
        description="A line in the top or bottom band of at least this share of a PDF's pages (digits aside) is a "
        "running header or footer and is dropped.",
    )

    # Demo content and embedding throughput.
    demo_subdir: Path = Field(
        Path("kb"),
        description="Folder under `paths.assets_dir` holding `guidelines/` and `labels/` for the demo KB.",
    )
    embed_batch: int = Field(64, ge=1, description="Chunks embedded per progress-bar step during ingestion.")
    progress: bool = Field(True, description="Show tqdm progress bars on stderr during long work.")
    corpus: CorpusSettings = Field(
        default_factory=CorpusSettings,
        description="Large corpora: sharding, approximate indexes, re-ranking, ingestion limits.",
    )

    renamed_fields: ClassVar[dict[str, str]] = RENAMED

    @model_validator(mode="before")
    @classmethod
    def _renamed_corpus_fields(cls, data: Any) -> Any:
        return nest_renamed(data, cls.renamed_fields, "kb")
