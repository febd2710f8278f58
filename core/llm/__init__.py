"""Language-model backends behind one protocol (see docs/LLM_BACKENDS.md).

Importing this package loads no model and no SDK: backends are imported by
:func:`make_llm` only when selected.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.llm.base import LLM, Completion, Message, TokenLogprobs
    from core.llm.factory import make_llm
    from core.llm.models import ensure_default_model

__all__ = ["LLM", "Completion", "Message", "TokenLogprobs", "ensure_default_model", "make_llm"]


# names load on first use (PEP 562): `import core.llm` stays cheap for the CLI's start-up
_LAZY = {
    "LLM": "core.llm.base",
    "Completion": "core.llm.base",
    "Message": "core.llm.base",
    "TokenLogprobs": "core.llm.base",
    "make_llm": "core.llm.factory",
    "ensure_default_model": "core.llm.models",
}


__getattr__ = lazy_exports(__name__, _LAZY)
