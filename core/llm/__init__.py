"""Language-model backends behind one protocol (see docs/LLM_BACKENDS.md).

Importing this package loads no model and no SDK: backends are imported by
:func:`make_llm` only when selected.
"""

from core.llm.base import LLM, Completion, Message, TokenLogprobs
from core.llm.factory import make_llm
from core.llm.models import ensure_default_model

__all__ = ["LLM", "Completion", "Message", "TokenLogprobs", "ensure_default_model", "make_llm"]
