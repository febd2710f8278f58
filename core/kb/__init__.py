"""Knowledge bases: clinical guidelines, FDA drug labels and user documents.

    kb = KnowledgeBase(load_settings())
    hits = kb.search("isoniazid contraindications", kb="druglabels", top_k=5)
    hits[0].title, hits[0].section_code, hits[0].drug_names   # drug, LOINC code, names
    kb.drug_lexicon().find_in("Can isoniazid be given with phenytoin?")

See docs/KNOWLEDGE_BASES.md for the design, the index layout and the
measured retrieval quality.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core.lazy import lazy_exports

if TYPE_CHECKING:
    from core.kb.base import KnowledgeBase
    from core.kb.demo.build import build_demo_kb, ensure_demo_kb
    from core.kb.index.ingest import IngestReport
    from core.kb.index.retriever import HybridRetriever
    from core.kb.lexicon import DrugLexicon, LexiconEntry
    from core.kb.parse.tokens import TokenCounter, make_token_counter
    from core.kb.protocols import LexiconRetriever, Retriever
    from core.kb.types import KB_NAMES, Chunk, FileError, Hit, SearchMode

__all__ = [
    "KB_NAMES",
    "Chunk",
    "DrugLexicon",
    "FileError",
    "Hit",
    "HybridRetriever",
    "IngestReport",
    "KnowledgeBase",
    "LexiconEntry",
    "LexiconRetriever",
    "Retriever",
    "SearchMode",
    "TokenCounter",
    "build_demo_kb",
    "ensure_demo_kb",
    "make_token_counter",
]


# names load on first use (PEP 562): `import core.kb` stays cheap for the CLI's start-up
_LAZY = {
    "KnowledgeBase": "core.kb.base",
    "build_demo_kb": "core.kb.demo.build",
    "ensure_demo_kb": "core.kb.demo.build",
    "IngestReport": "core.kb.index.ingest",
    "HybridRetriever": "core.kb.index.retriever",
    "DrugLexicon": "core.kb.lexicon",
    "LexiconEntry": "core.kb.lexicon",
    "TokenCounter": "core.kb.parse.tokens",
    "make_token_counter": "core.kb.parse.tokens",
    "LexiconRetriever": "core.kb.protocols",
    "Retriever": "core.kb.protocols",
    "KB_NAMES": "core.kb.types",
    "Chunk": "core.kb.types",
    "FileError": "core.kb.types",
    "Hit": "core.kb.types",
    "SearchMode": "core.kb.types",
}


__getattr__ = lazy_exports(__name__, _LAZY)
