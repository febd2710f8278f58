"""Text helpers of Guideline QA: key tokens, chunk sentences, phrase matching, overlap and Jaccard.

They live in the shared toolkit :mod:`core.text` (the answer guard uses the same module);
this module keeps the names Guideline QA has always imported. "Key tokens" are the
lowercase word tokens of a text minus the configured stopwords, with a light plural
folding (``tests`` -> ``test``) so a bullet and its evidence match on meaning rather
than inflection.
"""

from __future__ import annotations

from core.text import chunk_sentences as split_sentences
from core.text import contains_phrase, find_phrases, jaccard, key_tokens, overlap_ratio

__all__ = [
    "contains_phrase",
    "find_phrases",
    "jaccard",
    "key_tokens",
    "overlap_ratio",
    "split_sentences",
]
