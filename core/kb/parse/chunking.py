"""Token-window chunking that never cuts a word, and paragraph packing for label sections.

Pure functions over a :class:`~core.kb.parse.tokens.TokenCounter`: they are tested
with the real tokenizers and with hypothesis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.kb.parse.tokens import TokenCounter

__all__ = ["Window", "pack_paragraphs", "window_words"]


@dataclass(frozen=True)
class Window:
    """A chunk as a half-open range ``[start, end)`` of word positions."""

    start: int
    end: int


def _fit(words: Sequence[str], start: int, end: int, limit: int, counter: TokenCounter) -> int:
    """Shrink ``end`` until the exact count of the joined words fits ``limit`` (keeps at least one word)."""
    while end - start > 1 and counter.count(" ".join(words[start:end])) > limit:
        end -= 1
    return end


def window_words(words: Sequence[str], size: int, overlap: int, counter: TokenCounter) -> list[Window]:
    """Split ``words`` into windows of at most ``size`` tokens sharing about ``overlap`` tokens.

    Windows start and end on word boundaries. A single word longer than
    ``size`` (a long URL) becomes a window of its own rather than being cut.
    The overlap is the longest run of whole trailing words of the previous
    window that holds at most ``overlap`` tokens.
    """
    if size < 1:
        raise ValueError("size must be positive")
    overlap = min(overlap, size // 2)
    counts = [counter.count(w) for w in words]
    n, start, out = len(words), 0, []
    while start < n:
        end, total = start, 0
        while end < n and (end == start or total + counts[end] <= size):
            total += counts[end]
            end += 1
        end = _fit(words, start, end, size, counter)
        out.append(Window(start, end))
        if end >= n:
            break
        back, carried = end, 0
        while back > start + 1 and carried + counts[back - 1] <= overlap:
            back -= 1
            carried += counts[back]
        start = max(back, start + 1)
    return out


def pack_paragraphs(paragraphs: Sequence[str], limit: int, overlap: int, counter: TokenCounter) -> list[str]:
    """Group consecutive paragraphs into chunks of at most ``limit`` tokens.

    Paragraph boundaries are kept; a paragraph longer than ``limit`` alone is
    split by :func:`window_words` (with ``overlap``) and never joined with a
    neighbour. Empty paragraphs are dropped.
    """
    chunks: list[str] = []
    current: list[str] = []
    used = 0
    for para in (p.strip() for p in paragraphs):
        if not para:
            continue
        size = counter.count(para)
        if size > limit:
            if current:
                chunks.append("\n".join(current))
                current, used = [], 0
            words = para.split()
            chunks.extend(" ".join(words[w.start : w.end]) for w in window_words(words, limit, overlap, counter))
            continue
        if current and used + size > limit:
            chunks.append("\n".join(current))
            current, used = [], 0
        current.append(para)
        used += size
    if current:
        chunks.append("\n".join(current))
    return chunks
