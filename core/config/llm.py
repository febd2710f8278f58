"""Settings group for language-model backends (registered in :mod:`core.settings`).

Every number the LLM layer uses lives here once; backends read these values and
no function signature carries a second default. Override from the environment
with ``CASEBOOK_LLM__<FIELD>``, for example ``CASEBOOK_LLM__BACKEND=groq``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from core.config.common import Group, ImportPath, nest_renamed

__all__ = [
    "RENAMED",
    "GroqSettings",
    "LLMBackendName",
    "LLMSettings",
    "LlamaCppSettings",
    "OpenAISettings",
    "TransformersSettings",
]

LLMBackendName = Literal["extractive", "llamacpp", "groq", "openai", "transformers"]


class LlamaCppSettings(Group):
    """The `llamacpp` backend: a local GGUF model run by xllamacpp."""

    model_name: str = Field(
        "qwen2.5-coder-1.5b-instruct-q4_k_m",
        description="Default local model: a key of `core/llm/models.json` (assembled by `python -m core llm assemble`).",
    )
    model_path: Path | None = Field(
        None,
        description="A GGUF file to use instead of the default model (`llamacpp`). Not hash-checked: "
        "it is the operator's file.",
    )
    model_cache_dir: Path | None = Field(
        Path("~/.cache/casebook/models"),
        description="Folder shared by every checkout of this user: the default model is assembled there once "
        "(sha256-checked) and `paths.model_dir` gets a link to it. Empty assembles a copy per checkout.",
    )
    threads: int = Field(
        0,
        ge=0,
        description="CPU threads for llama.cpp; 0 picks the free cores at each call (on a busy 2-core machine 1 "
        "thread holds steady while 2 collapse); a change reloads the model (about 1 s, mapped from disk cache).",
    )
    thread_recheck_s: float = Field(
        30.0, ge=0, description="With `threads` 0: seconds between two reloads for a changed count of free cores."
    )
    n_ctx: int = Field(4096, ge=256, description="llama.cpp context window in tokens (prompt plus answer).")
    n_batch: int = Field(512, ge=32, description="llama.cpp prompt-processing batch size in tokens.")
    prompt_cache_mib: int = Field(
        1024,
        ge=0,
        description="llama.cpp keeps the KV state of earlier prompts in this much RAM and restores the longest "
        "matching prefix, so a fixed system prompt and a scan's data are read once, not per question (0: off).",
    )


class GroqSettings(Group):
    """The `groq` backend (the key comes from the environment or a Streamlit secret)."""

    model: str = Field("llama-3.1-8b-instant", description="Model name sent to Groq.")
    base_url: str | None = Field(
        None, description="Groq API root; empty means the SDK default (https://api.groq.com). Tests use a loopback URL."
    )
    api_key_env: str = Field(
        "GROQ_API_KEY", description="Environment variable holding the Groq key (a page may pass a secret instead)."
    )


class OpenAISettings(Group):
    """The `openai` backend: any OpenAI-compatible server (vLLM, llama.cpp server, Ollama)."""

    base_url: str = Field(
        "http://127.0.0.1:8000/v1", description="Root URL of the OpenAI-compatible server, including `/v1`."
    )
    model: str = Field("default", description="Model name sent to the OpenAI-compatible server.")
    api_key_env: str = Field(
        "OPENAI_API_KEY", description="Environment variable holding the key; unset is fine for local servers."
    )
    grammar: bool = Field(
        False,
        description="The server is llama.cpp's `llama-server`, which honours a GBNF `grammar`: send Ask AI's "
        "citation grammar with its requests. Other servers (vLLM, Ollama, OpenAI) may refuse the field: leave off.",
    )


class TransformersSettings(Group):
    """The `transformers` backend: a local Hugging Face folder."""

    model_path: Path | None = Field(
        None, description="Local folder with a causal LM and its tokenizer (`transformers`); never downloaded."
    )


# Old flat names of the per-backend fields (accepted for one release, with a FutureWarning; docs/SETTINGS.md).
RENAMED: dict[str, str] = {
    **{name: f"llamacpp.{name}" for name in LlamaCppSettings.model_fields},
    **{f"groq_{name}": f"groq.{name}" for name in GroqSettings.model_fields},
    **{f"openai_{name}": f"openai.{name}" for name in OpenAISettings.model_fields if name != "grammar"},  # newer
    "hf_model_path": "transformers.model_path",
}

class LLMSettings(Group):
    """Which language model answers, and how long it may take."""

    backend: LLMBackendName | ImportPath = Field(
        "llamacpp",
        description="`extractive` (no model), `llamacpp` (local GGUF), `groq`, `openai` (any "
        "OpenAI-compatible server), `transformers` (local Hugging Face folder), or `package.module:ClassName`: "
        "that class, built as `ClassName(settings, api_key=...)` (docs/LLM_BACKENDS.md, 'Adding a backend').",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="Settings of an import-path `backend` (the class validates them with its own group); "
        "ignored by the built-in backends.",
    )
    timeout_s: float = Field(
        60.0,
        gt=0,
        description="Ceiling in seconds for any one LLM call; each feature's own budget (`ask.llm_budget_s`, "
        "`budget_draft_s`, `budget_guideline_s`, `budget_selfrag_s`) is capped by it.",
    )
    budget_draft_s: float = Field(
        60.0, gt=0, description="Seconds a report draft's model call may take; past it the template draft stands."
    )
    budget_guideline_s: float = Field(
        45.0, gt=0, description="Seconds the Guideline QA writer's model call may take; past it the extractive "
        "bullets stand.",
    )  # fmt: skip
    budget_selfrag_s: float = Field(
        60.0, gt=0, description="Seconds one Self-RAG model call (a stage's generation or judgement) may take."
    )
    refuse_certain_timeouts: bool = Field(
        True,
        description="Do not start a local model call when reading its prompt alone would take longer than the "
        "budget at the speed measured here (the caller keeps its answer without the model).",
    )
    speed_half_life_s: float = Field(
        3600.0,
        ge=0,
        description="Age at which the local model's measured speed counts half against a new measurement "
        "(persisted in `<data_dir>/llm_speed.json`; 0: plain exponential average).",
    )
    speed_retry_load_ratio: float = Field(
        0.5,
        gt=0,
        le=1,
        description="A speed measured under load average L is re-tried once the load now is at most this times L "
        "(0.5: the load halved): the next call runs as a trial within its budget instead of being refused. A "
        "measurement at a load this far from the stored one replaces the estimate instead of being averaged in.",
    )
    speed_retry_after_s: float = Field(
        600.0,
        ge=0,
        description="A speed estimate older than this is re-tried whatever the load (0: never by age).",
    )
    max_tokens: int = Field(512, ge=1, description="Most tokens one answer may generate (every backend).")
    temperature: float = Field(
        0.0, ge=0, le=2, description="Sampling temperature (every backend); 0 is greedy and reproducible."
    )
    seed: int = Field(1234, ge=0, description="Sampling seed for the local backends (`llamacpp`, `transformers`).")


    # Retries for the remote backends.
    max_retries: int = Field(
        2, ge=0, description="Extra attempts after a 5xx or a dropped connection (remote backends; never on 4xx)."
    )
    retry_backoff_s: float = Field(
        0.5, ge=0, description="First retry delay in seconds; doubled on every further attempt."
    )
    retry_backoff_max_s: float = Field(8.0, ge=0, description="Longest single retry delay in seconds.")

    # One group per backend.
    llamacpp: LlamaCppSettings = Field(
        default_factory=LlamaCppSettings, description="Local GGUF model through xllamacpp (`llamacpp`)."
    )
    groq: GroqSettings = Field(default_factory=GroqSettings, description="Groq's hosted API (`groq`).")
    openai: OpenAISettings = Field(
        default_factory=OpenAISettings, description="Any OpenAI-compatible server (`openai`)."
    )
    transformers: TransformersSettings = Field(
        default_factory=TransformersSettings, description="Local Hugging Face folder (`transformers`)."
    )

    renamed_fields: ClassVar[dict[str, str]] = RENAMED

    @model_validator(mode="before")
    @classmethod
    def _renamed_backend_fields(cls, data: Any) -> Any:
        return nest_renamed(data, cls.renamed_fields, "llm")
