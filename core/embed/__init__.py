"""Text embedders behind one protocol, chosen by ``settings.embed.backend``.

    >>> emb = make_embedder(load_settings().embed)
    >>> emb.embed_queries(["latent TB testing"]).shape
    (1, 384)

Vectors are float32 and L2-normalised. ``model_id`` names the model and its
variant; indexes record it and refuse to serve queries from another model.
"""

from __future__ import annotations

from core.embed.base import Embedder, free_cores, make_embedder

__all__ = ["Embedder", "free_cores", "make_embedder"]
