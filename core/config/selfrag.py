"""Settings group for self-reflective RAG (registered in :mod:`core.settings` as ``selfrag``).

Every weight, threshold and size of :mod:`core.selfrag` lives here once; no
function signature in the package carries a second default (Self-RAG's own code
has ``w_use`` at 0.5 in one place and 1.0 in another). Override from the
environment with ``CASEBOOK_SELFRAG__<FIELD>``, for example
``CASEBOOK_SELFRAG__RETRIEVAL_THRESHOLD=0.2`` (the paper's value).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from core.config.common import Group

__all__ = ["CriticName", "RetrievalMode", "SelfRagSettings"]

CriticName = Literal["judge", "native", "native-llm"]
RetrievalMode = Literal["no-retrieval", "always", "adaptive"]


class SelfRagSettings(Group):
    """Self-reflective RAG: reflection critic, adaptive retrieval, critic reranking, regeneration."""

    enabled: bool = Field(True, description="Whether this feature is offered in the app and CLI.")

    # Critic and generator.
    critic: CriticName = Field(
        "judge",
        description="`judge`: the configured instruct LLM (`settings.llm`) answers single-token Yes/No and 1-5 "
        "questions, read from log-probabilities. `native`: a model trained with reflection tokens (Self-BioRAG) "
        "in the local folder `native_model_path`, read through transformers in batched forward passes. "
        "`native-llm`: the reflection tokens read from the configured LLM's top log-probabilities (an "
        "OpenAI-compatible server serving such a model).",
    )
    generator: Literal["llm", "native"] = Field(
        "llm",
        description="Who writes answers: `llm` is the configured backend (`settings.llm`), `native` the "
        "reflection-token model in `native_model_path` (through transformers).",
    )
    native_model_path: Path | None = Field(
        None, description="Local folder of a causal LM trained with reflection tokens (never downloaded)."
    )
    native_threads: int = Field(
        0,
        ge=0,
        description="torch CPU threads for the native model; 0 picks the free cores (as `llm.llamacpp.threads`).",
    )
    native_device: str = Field(
        "cpu",
        pattern=r"^(cpu|auto|cuda(:\d+)?)$",
        description="Where the native model runs: `cpu`, `cuda` (or `cuda:N`; a clear error when torch sees no "
        "CUDA GPU) or `auto` (the first CUDA GPU when there is one, else the CPU).",
    )
    native_dtype: Literal["float32", "bfloat16", "float16"] = Field(
        "float32",
        description="Weights and activations of the native model: `float32` (the CPU choice; batched and "
        "per-document readings agree to ~1e-5) or `bfloat16` / `float16` for a GPU (half the memory; readings "
        "then differ by up to ~0.2 in log-probability, docs/benchmarks/selfrag.md).",
    )
    logprobs_top_k: int = Field(
        20, ge=2, le=20, description="Top alternatives asked of a backend per token (OpenAI servers allow at most 20)."
    )
    judge_max_chars: int = Field(
        1000,
        ge=100,
        description="Document and answer text shown to the judge or generator is cut to this many characters "
        "(1,000 characters are about 250 tokens: each judged document costs its prompt's prefill on a CPU).",
    )
    judge_batch: Literal["combined", "separate"] = Field(
        "combined",
        description="Judge critic: `combined` asks relevance (Yes/No), support (1-3) and utility (1-5) of a "
        "document in one request and reads each answer's log-probabilities where it is generated (one prefill "
        "per document); `separate` asks three single-token questions (three requests sharing llama.cpp's "
        "prompt cache).",
    )
    concurrency: int = Field(
        1,
        ge=1,
        le=64,
        description="Critic requests in flight at once (documents judged concurrently). Above 1 only for a server "
        "backend (`openai` against vLLM or llama.cpp's server with several slots); the local llamacpp backend "
        "serves one request at a time.",
    )

    # Stage 1: query processing.
    augmentations_file: Path | None = Field(
        None,
        description="YAML file of query augmentations (`prefix`, `suffix`, `replace`, `expand`); empty means none "
        "(the design's default: the query passes through unchanged).",
    )

    # Stage 2: adaptive retrieval.
    mode: RetrievalMode = Field(
        "adaptive",
        description="`adaptive` retrieves when P(retrieve) > `retrieval_threshold`; `always` and `no-retrieval` "
        "are the paper's ablations.",
    )
    retrieval_threshold: float = Field(
        0.3,
        ge=0,
        le=1,
        description="Retrieve when p[Retrieval] / (p[Retrieval] + p[No Retrieval]) exceeds this (the Self-RAG "
        "paper used 0.2 for its native critic). 0.3 was calibrated for the default judge on the 30 bundled "
        "questions, where its P(retrieve) spans 0.04-0.56 with median ~0.31 (docs/SELFRAG.md, 'Retrieval "
        "decision').",
    )

    # Stage 3: retrieval.
    top_k: int = Field(
        5,
        ge=1,
        le=100,
        description="Documents retrieved per query before critic reranking (5-10 lets the critic choose; 1 "
        "leaves it nothing to rank).",
    )
    kbs: list[str] = Field(
        default_factory=lambda: ["guidelines", "druglabels"],
        description="Knowledge bases searched (`core.kb`); results are merged by score.",
    )
    corpus: str | None = Field(
        "auto",
        description="What Self-RAG retrieves from. `auto`: every corpus ingested with `kb ingest-corpus` (fused by "
        "RRF) when there is one, else the knowledge bases in `kbs` (the demo KBs are off-topic for benchmark "
        "questions). Ingested corpora by name, several joined by `+` (`pubmed+textbooks`; see docs/LARGE_CORPORA.md), "
        "or a retriever class `package.module:ClassName` (built with the settings). Empty: always the knowledge bases.",
    )
    search_mode: Literal["hybrid", "dense", "bm25"] = Field("hybrid", description="Knowledge-base search mode.")

    # Stage 4: critic reranking.
    rerank_keep: int = Field(3, ge=1, description="Documents kept after critic reranking (at most).")
    relevance_floor: float = Field(
        0.5,
        ge=0,
        le=1,
        description="A document reaches the generator only when the critic's P[Relevant] is at least this "
        "(and it is among the best `rerank_keep`); an unscored relevance counts as below. When no document "
        "passes, the question is answered without evidence and the trace says why. 0 keeps the best "
        "`rerank_keep` whatever their relevance.",
    )
    relevance_margin: float = Field(
        0.1,
        ge=0,
        le=0.5,
        description="Margin over chance the relevance floor requires: a document passes when P[Relevant] is at "
        "least `relevance_floor` + this (a Yes/No judge that cannot tell reads about 0.5). Off-topic documents "
        "scored 0.50-0.51 on the real benchmark; 0.1 keeps them out (docs/SELFRAG.md, 'Relevance floor').",
    )
    w_rel: float = Field(1.0, description="Weight of relevance (P[Relevant]) in the critic score.")
    w_sup: float = Field(1.0, description="Weight of groundedness in the critic score.")
    w_use: float = Field(0.5, description="Weight of utility (mapped to -1..1) in the critic score.")
    partial_support_weight: float = Field(
        0.5, ge=0, le=1, description="Groundedness = p[Fully supported] + this * p[Partially supported]."
    )
    utility_weights: tuple[float, float, float, float, float] = Field(
        (-1.0, -0.5, 0.0, 0.5, 1.0),
        description="Critic-score value of [Utility:1] .. [Utility:5] (maps utility to -1..1).",
    )
    critic_batch_size: int = Field(16, ge=1, description="Documents per batched critic forward pass (native critic).")
    reuse_prefix_cache: bool = Field(
        True,
        description="Native critic: compute the shared question prefix once and reuse its KV cache across the "
        "batch of documents.",
    )
    baseline_max_tokens: int = Field(
        20, ge=1, description="Tokens generated per document by the per-document baseline critic (reference code)."
    )

    # Stage 5: generation.
    generation_max_tokens: int = Field(
        32,
        ge=1,
        description="Most tokens one generated answer may have (the letter and option text come first, then a "
        "short reason). On a busy 2-core CPU the default model writes about 1.5 tokens/s: 64 tokens cost ~40 s.",
    )
    generation_temperature: float = Field(0.0, ge=0, le=2, description="Temperature of the first answer (0: greedy).")
    generator_chat: bool = Field(
        True,
        description="`llm` generator: send the Self-RAG prompt as one user message through the chat template "
        "(instruct models); false continues it as a raw completion (models trained on the raw format).",
    )
    regenerate_feedback: bool = Field(
        True,
        description="Tell a regenerated answer the previous one's expected utility (with a fixed sampling seed the "
        "same prompt would repeat the same answer).",
    )
    regenerate_temperature: float = Field(
        0.7, ge=0, le=2, description="Temperature of regenerated answers (greedy would repeat the first answer)."
    )

    # Stage 6: self-reflection.
    utility_stop: float = Field(
        4.0, ge=1, le=5, description="Stop regenerating once the expected utility sum(i * P[Utility:i]) reaches this."
    )
    regenerate_margin: float = Field(
        0.5,
        ge=0,
        le=4,
        description="A regenerated answer replaces the current one only when its expected utility (1-5) is higher "
        "by more than this (0: any higher utility). A correct first answer (utility 3.81) was replaced by a wrong "
        "one (4.04) on the real benchmark; see docs/SELFRAG.md, 'Regeneration margin'.",
    )
    max_iterations: int = Field(3, ge=1, le=10, description="Answers generated at most (the best one is kept).")

    # Per-stage budgets (0: none). A spent budget ends the stage early and the trace records it.
    budget_decision_s: float = Field(
        30.0,
        ge=0,
        description="Seconds the adaptive retrieval decision may take (each backend call holds only what is "
        "left); a decision that times out retrieves, the safe path.",
    )
    budget_rerank_s: float = Field(
        60.0,
        ge=0,
        description="Seconds the critic may spend judging documents, in wall time (each backend call holds only "
        "what is left); the documents judged in time are kept, the rest dropped (never passed to the generator "
        "unjudged).",
    )
    budget_reflection_s: float = Field(
        60.0,
        ge=0,
        description="Seconds generation plus self-reflection may take, in wall time (each backend call holds only "
        "what is left); a regeneration or utility reflection that runs out keeps the best answer so far. Only a "
        "first generation that times out is an abstention.",
    )

    # Evaluation harness.
    eval_limit: int = Field(0, ge=0, description="Questions per benchmark run; 0 means all.")
    eval_seed: int = Field(0, description="Seed of the question sample when `eval_limit` is below the dataset size.")
    eval_workers: int = Field(
        1,
        ge=1,
        le=64,
        description="Questions `eval-mcq` runs at once. Above 1 only for a server backend with several slots "
        "(vLLM, `llama-server --parallel N`): the local llamacpp backend answers one request at a time.",
    )
    progress: bool = Field(True, description="Show a tqdm progress bar on stderr during `eval-mcq`.")

    @field_validator("kbs")
    @classmethod
    def _some_kb(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError("name at least one knowledge base")
        return value
