"""The ONNX Runtime graphs of bench/embed_onnx.py, built from the package's real weights.

Skipped where ``onnxruntime`` is not installed (it is a bench-only dependency: issue 28's
comparison, docs/benchmarks/embed.md). Each model is built into ``tmp_path`` in under a few
seconds and embeds a handful of texts through the torch engine's own batching and pooling.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from bench.embed_onnx import OrtE5Encoder, build_model
from core.embed.e5_torch import E5_SHA256, E5TorchEmbedder, load_e5_file

TEXTS = [
    "Latent tuberculosis infection: a tuberculin skin test induration of 10 mm or more is positive.",
    "Metformin is contraindicated when eGFR falls below 30 mL/min/1.73 m²",
    "x",
    "",
    " ".join(f"finding{i % 37} in segment {i}" for i in range(400)),  # > 510 tokens: two windows
]


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return E5TorchEmbedder(threads=1, batch_size=2, precision="float32").embed_passages(TEXTS)


@pytest.mark.parametrize(("variant", "floor"), [("float32", 0.99999), ("int8b", 0.999), ("int4", 0.999)])
def test_ort_graph_agrees_with_the_torch_engine(tmp_path: Path, reference: np.ndarray, variant: str, floor: float) -> None:
    f = load_e5_file()
    path = build_model(f, variant, tmp_path, next(iter(E5_SHA256)))  # type: ignore[arg-type]
    emb = E5TorchEmbedder(threads=1, batch_size=2, encoder=OrtE5Encoder(f, path, 1))  # type: ignore[arg-type]
    out = emb.embed_passages(TEXTS)
    cos = (out * reference).sum(axis=1)
    assert out.shape == (len(TEXTS), 384) and cos.min() >= floor, cos
    if variant != "float32":  # quantised, not silently float32
        assert float(np.abs(out - reference).max()) > 1e-4
    assert build_model(f, variant, tmp_path, next(iter(E5_SHA256))) == path  # built once, then reused


@pytest.mark.slow
def test_ort_dynamic_int8_holds_0_99(tmp_path: Path, reference: np.ndarray) -> None:
    """ORT's own dynamic quantisation (per-tensor activations): within the 0.99 bar, but not 0.999."""
    f = load_e5_file()
    path = build_model(f, "int8", tmp_path, next(iter(E5_SHA256)))
    out = E5TorchEmbedder(threads=1, batch_size=2, encoder=OrtE5Encoder(f, path, 1)).embed_passages(TEXTS)  # type: ignore[arg-type]
    assert (out * reference).sum(axis=1).min() >= 0.99
