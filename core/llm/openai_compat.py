"""Any OpenAI-compatible server (vLLM, llama.cpp's ``llama-server``, Ollama) through the ``openai`` SDK.

Set ``llm.openai.base_url`` (including ``/v1``) and ``llm.openai.model``. The API
key is optional: local servers accept any string, so a placeholder is sent when
the variable named by ``llm.openai.api_key_env`` is unset. Chat log-probabilities
use ``logprobs=true, top_logprobs=k``; raw completions use ``logprobs=k``. A GBNF
``grammar`` (Ask AI's citations) is sent only with ``llm.openai.grammar`` on (a ``llama-server``).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from core.errors import ConfigError
from core.llm.base import GenParams
from core.llm.remote import OpenAIWireLLM
from core.privacy.egress import Egress

if TYPE_CHECKING:
    from core.config.llm import LLMSettings

__all__ = ["OpenAICompatLLM"]

_NO_KEY = "not-needed"  # the SDK insists on a key; local servers ignore it


class OpenAICompatLLM(OpenAIWireLLM):
    """The :class:`~core.llm.base.LLM` protocol over an OpenAI-compatible HTTP server."""

    backend = "openai"

    def __init__(self, settings: LLMSettings, *, api_key: str | None = None, egress: Egress | None = None) -> None:
        try:
            import openai
        except ImportError as exc:
            raise ConfigError("The openai backend needs the openai SDK", hint="pip install openai==3.51.0") from exc
        key = api_key or os.environ.get(settings.openai.api_key_env) or _NO_KEY
        client = openai.OpenAI(
            api_key=key, base_url=settings.openai.base_url, timeout=settings.timeout_s, max_retries=0
        )
        super().__init__(client, openai, settings.openai.model, settings, egress)

    def _params(self, gen: GenParams) -> dict[str, Any]:
        params = super()._params(gen)
        if gen.grammar and self.settings.openai.grammar:  # llama.cpp's llama-server samples within the grammar
            params["extra_body"] = {"grammar": gen.grammar}
        return params
