"""Dual encoders (query model + passage model) through the sentence-transformers backend, on real local models."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from core.embed import make_embedder
from core.embed.sbert import default_minilm_path
from core.errors import ConfigError
from core.settings import load_settings

torch = pytest.importorskip("torch")
st = pytest.importorskip("sentence_transformers")

TEXTS = ["Isoniazid causes peripheral neuropathy.", "Ceftriaxone treats community-acquired pneumonia."]


@pytest.fixture(scope="module")
def query_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniLM with perturbed weights, saved as a separate 'query encoder' (same 384-d space, other vectors)."""
    model = st.SentenceTransformer(str(default_minilm_path()), device="cpu", local_files_only=True)
    torch.manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    folder = tmp_path_factory.mktemp("models") / "query-encoder"
    model.save(str(folder))
    return folder


@pytest.fixture(scope="module")
def narrow_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniLM followed by a Dense layer to 128-d: a model whose vectors cannot share MiniLM's space."""
    base = st.SentenceTransformer(str(default_minilm_path()), device="cpu", local_files_only=True)
    dense = st.models.Dense(in_features=384, out_features=128)
    model = st.SentenceTransformer(modules=[*base, dense], device="cpu")
    folder = tmp_path_factory.mktemp("models") / "narrow"
    model.save(str(folder))
    return folder


def test_queries_use_the_query_model_and_passages_the_passage_model(query_model: Path) -> None:
    single = make_embedder(load_settings("test", embed={"backend": "sentence-transformers"}).embed)
    dual = make_embedder(
        load_settings("test", embed={"backend": "sentence-transformers", "query_model_path": query_model}).embed
    )
    alone = make_embedder(
        load_settings("test", embed={"backend": "sentence-transformers", "model_path": query_model}).embed
    )
    assert dual.dim == single.dim == 384
    np.testing.assert_allclose(dual.embed_passages(TEXTS), single.embed_passages(TEXTS), atol=1e-5)
    np.testing.assert_allclose(dual.embed_queries(TEXTS), alone.embed_queries(TEXTS), atol=1e-5)
    assert not np.allclose(dual.embed_queries(TEXTS), dual.embed_passages(TEXTS), atol=1e-3)
    # the id names both models, so an index built by one pair refuses queries from another
    assert single.model_id == "sentence-transformers/all-MiniLM-L6-v2"
    assert dual.model_id == "sentence-transformers/all-MiniLM-L6-v2+query:query-encoder"


def test_a_query_model_of_another_dimension_is_refused(narrow_model: Path) -> None:
    settings = load_settings("test", embed={"backend": "sentence-transformers", "query_model_path": narrow_model})
    with pytest.raises(ConfigError, match="128-d vectors but the passage encoder"):
        make_embedder(settings.embed)


def test_a_missing_query_model_folder_is_a_clear_error(tmp_path: Path) -> None:
    settings = load_settings("test", embed={"backend": "sentence-transformers", "query_model_path": tmp_path / "nope"})
    with pytest.raises(ConfigError, match=r"\(embed\.query_model_path\) not found"):
        make_embedder(settings.embed)
