"""Build the language model named by ``settings.llm.backend``.

Imports are lazy: choosing ``groq`` never imports torch, choosing ``llamacpp``
never imports an HTTP SDK, and importing this module creates no client. Any
backend that is not built in is a ``package.module:ClassName`` import path
(:mod:`core.plugins`), so a new backend needs no edit here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.errors import ConfigError
from core.llm.base import LLM
from core.plugins import build_from_import_path
from core.privacy.egress import Egress

if TYPE_CHECKING:
    from core.settings import Settings

__all__ = ["make_llm"]


def make_llm(settings: Settings, *, api_key: str | None = None) -> LLM | None:
    """The configured backend, or ``None`` for ``extractive`` (answers composed without a model).

    ``api_key`` overrides the environment for the remote backends (a page
    passes a Streamlit secret here). The ``llamacpp`` default model is
    hash-checked before it is used. The remote backends de-identify every
    request with the user table's names (:class:`core.privacy.egress.Egress`).
    Any other ``llm.backend`` is an import path: the class is built as
    ``Class(settings, api_key=api_key)`` and must satisfy :class:`LLM`.
    """
    llm = settings.llm
    if llm.backend == "extractive":
        return None
    if llm.backend == "llamacpp":
        from core.llm.budget import attach_meter
        from core.llm.llamacpp import LlamaCppLLM
        from core.llm.models import verified_model_path

        attach_meter(settings)  # the speed measured here before, persisted under the data folder
        return LlamaCppLLM(verified_model_path(settings), llm)
    if llm.backend == "groq":
        from core.llm.groq_backend import GroqLLM

        return GroqLLM(llm, api_key=api_key, egress=Egress.from_settings(settings))
    if llm.backend == "openai":
        from core.llm.openai_compat import OpenAICompatLLM

        return OpenAICompatLLM(llm, api_key=api_key, egress=Egress.from_settings(settings))
    if llm.backend == "transformers":
        from core.llm.hf_transformers import TransformersLLM

        if llm.transformers.model_path is None:
            raise ConfigError("The transformers backend needs llm.transformers.model_path (a local model folder)")
        return TransformersLLM(settings.paths.resolve(llm.transformers.model_path), llm)
    return build_from_import_path(llm.backend, "llm.backend", LLM, settings, api_key=api_key)  # type: ignore[type-abstract]
