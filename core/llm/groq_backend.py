"""Groq's hosted models through the official ``groq`` SDK.

The key comes from the environment variable named by ``llm.groq.api_key_env``
(``GROQ_API_KEY``) or is passed in by the page (Streamlit secrets). Groq has no
raw-completion endpoint, so :meth:`GroqLLM.complete` sends the prompt as one
user message; Groq may also ignore ``logprobs``, in which case
``Completion.tokens`` is empty and callers must treat the scores as unknown.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Unpack

from core.errors import BackendAuthError, ConfigError
from core.llm.base import Completion, GenOptions, GenParams
from core.llm.remote import OpenAIWireLLM
from core.privacy.egress import Egress

if TYPE_CHECKING:
    from core.config.llm import LLMSettings

__all__ = ["GroqLLM"]


class GroqLLM(OpenAIWireLLM):
    """The :class:`~core.llm.base.LLM` protocol over Groq's chat-completions API."""

    backend = "groq"

    def __init__(self, settings: LLMSettings, *, api_key: str | None = None, egress: Egress | None = None) -> None:
        try:
            import groq
        except ImportError as exc:
            raise ConfigError("The groq backend needs the groq SDK", hint="pip install groq==1.7.0") from exc
        key = api_key or os.environ.get(settings.groq.api_key_env)
        if not key:
            raise BackendAuthError(
                f"No Groq API key: set {settings.groq.api_key_env} or add it to the Streamlit secrets",
                hint=f"export {settings.groq.api_key_env}=gsk_... (never commit it)",
            )
        client = groq.Groq(api_key=key, base_url=settings.groq.base_url, timeout=settings.timeout_s, max_retries=0)
        super().__init__(client, groq, settings.groq.model, settings, egress)

    def complete(self, prompt: str, params: GenParams | None = None, **options: Unpack[GenOptions]) -> Completion:
        """Send ``prompt`` as a single user message (Groq serves chat only)."""
        return self.chat([{"role": "user", "content": prompt}], GenParams.of(params, **options))
