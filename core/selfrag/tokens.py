"""Self-RAG / Self-BioRAG reflection tokens and the post-processing that removes them.

The four groups, as the models were trained to emit them:

* retrieval need: ``[Retrieval]`` / ``[No Retrieval]`` (the Self-RAG release also has ``[Continue to Use Evidence]``);
* relevance: ``[Relevant]`` / ``[Irrelevant]``;
* support: ``[Fully supported]`` / ``[Partially supported]`` / ``[No support / Contradictory]``
  (the design notes spell the last one ``[No support]``; both are accepted);
* utility: ``[Utility:1]`` ... ``[Utility:5]``.
"""

from __future__ import annotations

import re

__all__ = [
    "ALL_REFLECTION_TOKENS",
    "END_TOKENS",
    "FULLY_SUPPORTED",
    "IRRELEVANT",
    "NO_RETRIEVAL",
    "NO_SUPPORT",
    "NO_SUPPORT_SHORT",
    "PARAGRAPH_CLOSE",
    "PARAGRAPH_OPEN",
    "PARTIALLY_SUPPORTED",
    "RELEVANCE_TOKENS",
    "RELEVANT",
    "RETRIEVAL",
    "RETRIEVAL_TOKENS",
    "SUPPORT_TOKENS",
    "UTILITY_TOKENS",
    "clean_answer",
]

RETRIEVAL = "[Retrieval]"
NO_RETRIEVAL = "[No Retrieval]"
CONTINUE_EVIDENCE = "[Continue to Use Evidence]"
RELEVANT = "[Relevant]"
IRRELEVANT = "[Irrelevant]"
FULLY_SUPPORTED = "[Fully supported]"
PARTIALLY_SUPPORTED = "[Partially supported]"
NO_SUPPORT = "[No support / Contradictory]"
NO_SUPPORT_SHORT = "[No support]"
UTILITY_TOKENS: tuple[str, ...] = tuple(f"[Utility:{i}]" for i in range(1, 6))
PARAGRAPH_OPEN = "<paragraph>"
PARAGRAPH_CLOSE = "</paragraph>"

RETRIEVAL_TOKENS: tuple[str, ...] = (RETRIEVAL, NO_RETRIEVAL)
RELEVANCE_TOKENS: tuple[str, ...] = (RELEVANT, IRRELEVANT)
SUPPORT_TOKENS: tuple[str, ...] = (FULLY_SUPPORTED, PARTIALLY_SUPPORTED, NO_SUPPORT)
ALL_REFLECTION_TOKENS: tuple[str, ...] = (
    *RETRIEVAL_TOKENS,
    CONTINUE_EVIDENCE,
    *RELEVANCE_TOKENS,
    *SUPPORT_TOKENS,
    NO_SUPPORT_SHORT,
    *UTILITY_TOKENS,
)
END_TOKENS: tuple[str, ...] = ("</s>", "<|endoftext|>", "<|im_end|>", "<|eot_id|>", "[SEP]")

# Longest first so "[No support / Contradictory]" goes before "[No support]".
_REMOVE = sorted({*ALL_REFLECTION_TOKENS, *END_TOKENS, PARAGRAPH_OPEN, PARAGRAPH_CLOSE}, key=len, reverse=True)
_REMOVE_RE = re.compile("|".join(re.escape(t) for t in _REMOVE))
_SPACES_RE = re.compile(r"[ \t]+")


def clean_answer(raw: str) -> str:
    """``raw`` without any reflection, paragraph or end token, whitespace tidied."""
    text = _REMOVE_RE.sub(" ", raw)
    lines = [_SPACES_RE.sub(" ", line).strip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line).strip()
