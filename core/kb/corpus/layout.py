"""Where corpora live and how they are named: links, shard files, ``corpus:`` names, query encoders.

Under ``<index_dir>``, corpus ``NAME``'s live version is the folder the
``corpus_NAME`` symlink points at (see :mod:`core.kb.corpus.build` for what a
version holds). The pipelines name corpora ``corpus:NAME`` or ``corpus:A+B``.
Both the builder and the server read these names from here, so neither
imports the other.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from core.artifacts import ArtifactKind, VersionedDir
from core.errors import ConfigError, InvalidInputError

if TYPE_CHECKING:
    from core.embed import Embedder
    from core.settings import Settings

__all__ = [
    "CORPUS_FORMAT",
    "CORPUS_PREFIX",
    "KIND",
    "corpus_dir",
    "corpus_link",
    "corpus_names",
    "parse_corpus_kb",
    "query_embedder",
    "shard_files",
]

CORPUS_FORMAT = 1
CORPUS_PREFIX = "corpus:"
KIND = ArtifactKind(
    "Corpus", CORPUS_FORMAT, hint="Ingest the corpus again: `python -m core kb ingest-corpus PATH --name NAME`."
)


def corpus_dir(root: Path, name: str) -> VersionedDir:
    """The versions of corpus ``name`` under ``root`` (``<index_dir>``); builds are resumable."""
    return VersionedDir(root, f"corpus_{name}", KIND, prefix=f".corpus_{name}.v", what=f"Ingesting corpus {name!r}")


def corpus_link(root: Path, name: str) -> Path:
    """The symlink naming the live version of corpus ``name``."""
    return corpus_dir(root, name).link_path


def shard_files(dtype: str) -> tuple[str, str, str]:
    """File names inside a shard folder: store, vectors, FAISS index."""
    return "docstore.sqlite", "vectors.f16" if dtype == "float16" else "vectors.f32", "ann.faiss"


def corpus_names(root: Path) -> list[str]:
    """Names of the corpora with a live version under ``root``."""
    return sorted(p.name[len("corpus_") :] for p in root.glob("corpus_*") if p.is_symlink() and p.exists())


def parse_corpus_kb(kb: str) -> list[str]:
    """``corpus:A+B`` (or ``A+B``) -> ``["A", "B"]``."""
    names = kb.removeprefix(CORPUS_PREFIX).split("+")
    if not all(names):
        raise InvalidInputError(f"Bad corpus name {kb!r}", hint="Use corpus:NAME or corpus:NAME1+NAME2.")
    return names


def query_embedder(settings: Settings, name: str) -> Embedder:
    """The query encoder of corpus ``name``: ``embed`` with ``kb.corpus.query_embed[name]`` applied."""
    from pydantic import ValidationError

    from core.embed import make_embedder
    from core.settings import EmbedSettings

    override = settings.kb.corpus.query_embed.get(name, {})
    try:
        cfg = EmbedSettings.model_validate({**settings.embed.model_dump(), **override})
    except ValidationError as exc:
        raise ConfigError(f"kb.corpus.query_embed[{name!r}] is invalid: {exc}") from exc
    return make_embedder(cfg)
