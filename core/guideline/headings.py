"""The numbered subsection in force where a chunk begins, carried over from the chunks before it (pure reading).

A label section is cut into chunks by a window: "2 DOSAGE AND ADMINISTRATION" of a real label runs over several
chunks, and the line "2.3 Crohn's Disease" may stand at the end of one chunk while the dose it heads opens the
next. :func:`core.guideline.sources.subsection_of` finds a subsection heading above a sentence inside its own
chunk only, so such a bullet cited the whole section. :func:`carried_headings` walks a store's chunks in order
once and records, for every chunk, the last numbered subheading of its section in the chunks before it;
:class:`CarriedHeadings` keeps that per index version (a new version is a new store object).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from core.errors import IndexStateError, InvalidInputError
from core.kb.protocols import GuidelineSources
from core.kb.types import Chunk, Hit

__all__ = ["CarriedHeadings", "carried_headings"]

# a numbered subheading on a line of its own ("2.3 Crohn's Disease"), as sources.subsection_of reads it
_SUBHEADING = re.compile(r"^(\d+(?:\.\d+)+)\s+\S[^\n]{0,150}$", re.M)


def _section(chunk: Chunk) -> str:
    return chunk.section_path[-1] if chunk.section_path else chunk.section_title


def carried_headings(chunks: Iterable[tuple[int, Chunk]]) -> dict[str, str]:
    """``chunk_id -> heading``: the last subheading numbered under the chunk's section in the earlier chunks of the
    same document and section (chunks in position order); chunks with none before them are left out. Label
    sections only (a LOINC ``section_code``): guideline chunks overlap, so a heading at the end of one chunk
    may stand after a sentence at the start of the next."""
    last: dict[tuple[str, str], str] = {}
    out: dict[str, str] = {}
    for _, chunk in sorted(chunks, key=lambda pc: pc[0]):
        section = _section(chunk)
        number = re.match(r"(\d+)\b", section.strip())
        if number is None or chunk.section_code is None:  # labels only: their chunks do not overlap
            continue
        key = (chunk.doc_id, section)
        if key in last:
            out[chunk.chunk_id] = last[key]
        heads = [m for m in _SUBHEADING.finditer(chunk.text) if m.group(1).startswith(number.group(1) + ".")]
        if heads:
            last[key] = heads[-1].group(0).strip()
    return out


class CarriedHeadings:
    """The carried subheading of a retrieved chunk, read once per knowledge base and index version."""

    def __init__(self, sources: GuidelineSources) -> None:
        self.sources = sources
        self._cache: dict[tuple[str, int], dict[str, str]] = {}

    def of(self, hit: Hit) -> str | None:
        """The subheading in force at ``hit``'s start, or ``None`` (a KB without stores, a first chunk)."""
        try:
            store = self.sources.stored(hit.kb)
        except (IndexStateError, InvalidInputError):
            return None
        if store is None:
            return None
        key = (hit.kb, id(store))
        if key not in self._cache:
            if len(self._cache) > 32:
                self._cache.clear()
            self._cache[key] = carried_headings(store.iter_chunks())
        return self._cache[key].get(hit.chunk_id)
