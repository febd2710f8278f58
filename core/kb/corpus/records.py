"""Corpus JSONL records: the shapes biomedical corpora ship in, read line by line with byte offsets.

Accepted shapes (one JSON object per line; extra keys are ignored):

* MedRAG: ``{"id", "title", "content", "contents"}`` (``contents`` is title plus
  content; ``content`` wins when both are present),
* ``{"id", "text"}`` and ``{"id", "title", "text"}``,
* Self-BioRAG / MedCPT PubMed articles: ``{"pmid", "t", "a"}`` (title, abstract),
  or ``{"pmid", "title", "abstract"}``; BEIR-style ``{"_id", "title", "text"}``.

Every problem names its 1-based line number, so a user can fix the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["CorpusRecord", "RecordError", "iter_lines", "parse_record"]

# Key aliases, most specific first.
ID_KEYS = ("id", "_id", "pmid", "PMID", "docid", "doc_id")
TITLE_KEYS = ("title", "t")
TEXT_KEYS = ("content", "text", "abstract", "a", "contents")


class RecordError(ValueError):
    """One line that is not a usable record (the message says why)."""


@dataclass(frozen=True)
class CorpusRecord:
    """One passage of a corpus: its id, title and text, and the line it came from."""

    id: str
    title: str
    text: str
    line: int


def _first(obj: dict[str, Any], keys: tuple[str, ...]) -> Any:
    for key in keys:
        value = obj.get(key)
        if value is not None and value != "":
            return value
    return None


def parse_record(raw: bytes, line: int) -> CorpusRecord:
    """The record on one JSONL line; :class:`RecordError` when it is not JSON or lacks an id or text."""
    try:
        obj = json.loads(raw)
    except (UnicodeDecodeError, ValueError) as exc:
        raise RecordError(f"not valid JSON ({exc}); a truncated or corrupt line?") from exc
    if not isinstance(obj, dict):
        raise RecordError(f"expected a JSON object, found {type(obj).__name__}")
    rid = _first(obj, ID_KEYS)
    if rid is None or isinstance(rid, dict | list | bool):
        raise RecordError(f"no id (one of {', '.join(ID_KEYS)})")
    text = _first(obj, TEXT_KEYS)
    if not isinstance(text, str) or not text.strip():
        raise RecordError(f"no text (one of {', '.join(TEXT_KEYS)})")
    title = _first(obj, TITLE_KEYS)
    return CorpusRecord(id=str(rid), title=title if isinstance(title, str) else "", text=text, line=line)


def iter_lines(fh: IO[bytes], line: int, max_bytes: int) -> Iterator[tuple[int, int, bytes | None]]:
    """``(line number, byte offset after the line, content)`` from the current position of ``fh``.

    ``line`` is the number of lines already consumed. Blank lines are skipped.
    Content is ``None`` for a line longer than ``max_bytes`` (the rest of it is
    skipped without being held in memory).
    """
    while True:
        raw = fh.readline(max_bytes + 1)
        if not raw:
            return
        line += 1
        if len(raw) > max_bytes and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = fh.readline(1 << 20)
            yield line, fh.tell(), None
            continue
        if raw.strip():
            yield line, fh.tell(), raw
