"""Stage 5: the generator seam.

A :class:`Generator` continues a Self-RAG prompt. :class:`LLMGenerator` wraps
any :class:`~core.llm.base.LLM`: an instruct model gets the prompt as one user
message through its chat template (raw ``### Instruction`` continuation makes
chat models ramble); a reflection-token model (:class:`core.selfrag.native.ReflectionModel`)
is a generator itself and keeps its reflection tokens in the raw text.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from core.llm.budget import CancelToken, current_token
from core.llm.call import chat_call, complete_call

if TYPE_CHECKING:
    from core.llm.base import LLM, Message

__all__ = ["Generator", "LLMGenerator"]


@runtime_checkable
class Generator(Protocol):
    """Writes an answer for a prompt."""

    model: str

    def generate(self, prompt: str, max_tokens: int, temperature: float) -> str:
        """The raw answer text for ``prompt``."""
        ...


class LLMGenerator:
    """A :class:`Generator` over the LLM protocol (``chat`` with the prompt as the user turn, or ``complete``)."""

    def __init__(self, llm: LLM, *, chat: bool, budget_s: float | None = None) -> None:
        self.llm = llm
        self.chat = chat
        self.model = f"{llm.backend}:{llm.model}"
        self.budget_s = budget_s  # per call (llm.budget_selfrag_s)

    def generate(self, prompt: str, max_tokens: int, temperature: float) -> str:
        """One completion, returned by the call's deadline in wall time (:mod:`core.llm.call`).

        The deadline is the smaller of ``budget_s`` and what the stage's token has left; past it
        :class:`~core.errors.BackendTimeoutError`, which the pipeline handles; other backend errors
        propagate too (the pipeline records them as an abstention).
        """
        budget = self.budget_s
        outer = current_token()  # the stage's token: this call holds at most what the stage has left
        left = outer.remaining() if outer is not None else None
        if left is not None:
            budget = left if budget is None else min(budget, left)
        token = CancelToken(budget) if budget is not None else None
        if self.chat:
            messages: list[Message] = [{"role": "user", "content": prompt}]
            return chat_call(self.llm, messages, token, max_tokens=max_tokens, temperature=temperature).text
        return complete_call(self.llm, prompt, token, max_tokens=max_tokens, temperature=temperature).text
