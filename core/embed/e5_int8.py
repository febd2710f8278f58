"""CPU features and the int8 linear layers of the torch e5 engine (for CPUs without bf16).

torch's own dynamic int8 (``quantized::linear_dynamic``, fbgemm): weights quantised once per
output channel, activations per call. Since 2026-11-28 ``embed.engine`` ``auto`` runs int8 on
ONNX Runtime instead (:mod:`core.embed.e5_onnx`, the same scheme and the same outlier rule in a
fused graph: about 2x this path, docs/benchmarks/embed.md); this path serves ``engine`` ``torch``
and machines without onnxruntime.

Two things decide the accuracy (cosine to float32's vectors, minimum over 240-token chunks,
``bench/embed_bench.py``):

* ``reduce_range``: fbgemm's default quantises activations to 7 bits so that AVX2's
  ``vpmaddubsw`` (which saturates pairs of u8 x s8 products at 16 bits) cannot overflow:
  0.981. With 8 bits: 0.992 (VNNI has no 16-bit step; on AVX2 the rare saturations
  measured the same).
* one activation scale per matrix: the ``<s>`` / ``</s>`` rows carry 10-30x the other rows'
  values. Multiplying those few rows in float32 (:func:`int8_linear`) lifts the minimum to
  0.998; quantising per row instead (``torch._int_mm``) is as accurate but was 2x slower than
  float32 here.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import torch

__all__ = ["Precision", "auto_precision", "cpu_flags", "int8_linear"]

Precision = Literal["auto", "float32", "bfloat16", "int8"]
Linear = Callable[["torch.Tensor"], "torch.Tensor"]


@lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags from /proc/cpuinfo (empty off Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="ignore")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def auto_precision(flags: frozenset[str] | None = None) -> Literal["bfloat16", "int8"]:
    """bfloat16 where the CPU multiplies bf16 natively (AMX, AVX512-BF16), int8 elsewhere."""
    flags = cpu_flags() if flags is None else flags
    return "bfloat16" if {"amx_bf16", "avx512_bf16"} & flags else "int8"


def int8_linear(weight: torch.Tensor, bias: torch.Tensor, outlier_ratio: float | None = 4.0) -> Linear:
    """``F.linear(x, weight, bias)`` as fbgemm's dynamic int8 kernel, weights per output channel.

    The weights are packed once, under the fbgemm engine (the packed object carries its engine,
    so the process-wide setting is restored at once). fbgemm gives the activations one scale per
    matrix; in e5 a few tokens (``<s>``, ``</s>``) carry activations 10-30x every other token's,
    and that scale would spend the 8 bits on them (cosine 0.989 to float32). Rows whose largest
    value exceeds ``outlier_ratio`` times the median row's are multiplied in float32 instead
    (about 1% of rows here): cosine 0.999. ``None`` skips that check (the attention's inputs
    had no such rows on any text measured).
    """
    import torch

    scale = (weight.abs().amax(dim=1).clamp(min=1e-12) / 127).double()
    zero = torch.zeros(weight.shape[0], dtype=torch.long)
    with warnings.catch_warnings():  # quantised tensors are deprecated upstream; torch is pinned (requirements.txt)
        warnings.simplefilter("ignore", UserWarning)
        q = torch.quantize_per_channel(weight.contiguous(), scale, zero, 0, torch.qint8)
    before = torch.backends.quantized.engine
    torch.backends.quantized.engine = "fbgemm"
    try:
        packed = torch.ops.quantized.linear_prepack(q, bias.contiguous())
    finally:
        torch.backends.quantized.engine = before
    if outlier_ratio is None:
        return partial(_linear_dynamic, packed)
    return partial(_mixed, packed, weight, bias, outlier_ratio)


def _linear_dynamic(packed: object, x: torch.Tensor) -> torch.Tensor:
    import torch

    return torch.ops.quantized.linear_dynamic(x, packed, False)  # 8-bit activations


def _mixed(packed: object, weight: torch.Tensor, bias: torch.Tensor, ratio: float, x: torch.Tensor) -> torch.Tensor:
    import torch
    import torch.nn.functional as F

    flat = x.reshape(-1, x.shape[-1])
    lo, hi = torch.aminmax(flat, dim=1)  # one pass over the input
    peak = torch.maximum(hi, -lo)
    big = (peak > ratio * peak.median()).nonzero().squeeze(1)
    if not len(big):
        return torch.ops.quantized.linear_dynamic(flat, packed, False).view(*x.shape[:-1], -1)
    rows = flat.index_select(0, big)  # a copy of the few outlier rows
    flat.index_fill_(0, big, 0.0)  # out of the int8 scale for one call (no copy of the whole input) ...
    try:
        out = torch.ops.quantized.linear_dynamic(flat, packed, False)  # 8-bit activations
    finally:
        flat.index_copy_(0, big, rows)  # ... and back: the caller may still use ``x`` (the residual)
    out.index_copy_(0, big, F.linear(rows, weight, bias))
    return out.view(*x.shape[:-1], -1)
