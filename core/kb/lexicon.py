"""The drug lexicon of a labels knowledge base: every name a label answers to."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field

__all__ = ["DrugLexicon", "LexiconEntry"]


@dataclass(frozen=True)
class LexiconEntry:
    """One lowercase drug name, its kinds (proprietary, generic, ingredient) and the labels that carry it."""

    name: str
    kinds: tuple[str, ...]
    doc_ids: tuple[str, ...]


@dataclass
class DrugLexicon:
    """Name -> labels map with a whole-word matcher for routing questions to drug labels."""

    entries: dict[str, LexiconEntry] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: list[tuple[str, str, str]]) -> DrugLexicon:
        """Build from ``(name, kind, doc_id)`` rows of the document store."""
        kinds: dict[str, set[str]] = defaultdict(set)
        docs: dict[str, set[str]] = defaultdict(set)
        for name, kind, doc_id in rows:
            kinds[name].add(kind)
            docs[name].add(doc_id)
        return cls({n: LexiconEntry(n, tuple(sorted(kinds[n])), tuple(sorted(docs[n]))) for n in sorted(kinds)})

    def names(self) -> list[str]:
        """Every known name (proprietary, generic, ingredient and salt-free synonyms), sorted."""
        return list(self.entries)

    def lookup(self, name: str) -> LexiconEntry | None:
        """The entry for ``name`` (case-insensitive), or ``None``."""
        return self.entries.get(name.strip().lower())

    def find_in(self, text: str) -> list[LexiconEntry]:
        """Entries whose name occurs in ``text`` as whole words (longest names first, no overlaps)."""
        lowered = text.lower()
        taken: list[tuple[int, int]] = []
        found: list[LexiconEntry] = []
        for name in sorted(self.entries, key=len, reverse=True):
            for m in re.finditer(rf"(?<![\w-]){re.escape(name)}(?![\w-])", lowered):
                if any(m.start() < e and s < m.end() for s, e in taken):
                    continue
                taken.append((m.start(), m.end()))
                if self.entries[name] not in found:
                    found.append(self.entries[name])
        return found
