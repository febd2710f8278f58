"""What each knowledge-base document contains: label sections, and which documents are demo content.

Guideline QA states structural facts from it ("The Amoxicillin label has no
boxed warning"; "The Demoquiline label lists no contraindications") instead of
quoting whatever sentences happen to be retrieved. Built once per index version
from the document store; a retriever without a store gives an empty catalog, and
then no structural statement is made (the pipeline falls back to retrieval).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import IndexStateError, InvalidInputError
from core.kb.protocols import GuidelineSources
from core.kb.types import Hit

__all__ = ["Catalog", "LabelSection", "build_catalog", "is_none_text"]

_DEMO_PREFIX = re.compile(r"^\s*demo data\W+not for clinical use\W*", re.I)
_NONE = re.compile(r"^\s*(none|none known|none listed|not applicable)\s*\.?\s*$", re.I)


def is_none_text(text: str) -> bool:
    """Whether a section's text says only "None." (after a demo-data notice)."""
    return bool(_NONE.match(_DEMO_PREFIX.sub("", text)))


@dataclass(frozen=True)
class LabelSection:
    """One label section: its first chunk (for citation) and whether it says only "None"."""

    hit: Hit
    none: bool


@dataclass
class Catalog:
    """``sections``: label doc id -> LOINC code -> first chunk; ``titles``: doc id -> title; ``demo_docs``."""

    sections: dict[str, dict[str, LabelSection]] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    demo_docs: set[str] = field(default_factory=set)

    def knows(self, doc_ids: list[str]) -> bool:
        """Whether every one of ``doc_ids`` is a catalogued label."""
        return bool(doc_ids) and all(d in self.sections for d in doc_ids)

    def section(self, doc_ids: list[str], code: str) -> LabelSection | None:
        """The first chunk of section ``code`` in any of the labels ``doc_ids``."""
        return next((s[code] for d in doc_ids if code in (s := self.sections.get(d, {}))), None)


def build_catalog(sources: GuidelineSources, kbs: tuple[str, ...], demo_root: Path | None) -> Catalog:
    """Read the document stores of ``kbs`` through ``sources.stored(kb)`` (empty for a name without one).

    A document is demo content when its source file lies under ``demo_root``
    (the assets folder the demo KBs are built from).
    """
    catalog = Catalog()
    root = str(demo_root.resolve()) if demo_root is not None else None
    for kb in kbs:
        try:
            store = sources.stored(kb)
        except (IndexStateError, InvalidInputError, OSError):  # a missing KB just has no catalogue entry
            continue
        if store is None:
            continue
        for doc_id, source, title, *_ in store.docs():
            catalog.titles[doc_id] = title
            if root and str(Path(source).resolve()).startswith(root):
                catalog.demo_docs.add(doc_id)
        for _, chunk in store.iter_chunks():
            if not chunk.section_code or not chunk.set_id:
                continue
            sections = catalog.sections.setdefault(chunk.doc_id, {})
            if chunk.section_code not in sections:
                hit = Hit.of(chunk, 1.0, None, None)
                sections[chunk.section_code] = LabelSection(hit, is_none_text(chunk.text))
    return catalog
