"""The registry of knowledge-base types: a new knowledge base is one :class:`KBSpec` line in :data:`KB_SPECS`.

Everything that used to list the knowledge bases by name reads this table:
the known names (:data:`KB_NAMES`), which KB a document kind may be ingested
into (:func:`kbs_for_kind`; the ``kb ingest-*`` CLI choices), which KBs a
Guideline QA route searches (:func:`kbs_for_route`), which ones the demo
build makes and from which asset folder (:data:`core.kb.demo.build.DEMO_SOURCES`),
which one holds drug labels (:data:`LABEL_KB`: the drug lexicon, the label
gates and source labels) and which file types an upload accepts
(:func:`core.kb.index.ingest.upload_suffixes`).

Document kinds (``guideline``, ``spl``) and their parsers are registered in
:data:`core.kb.index.ingest.PARSERS`; a new kind is one parser there. The
per-KB retrieval thresholds, calibration and fusion are fitted *settings*
(``guideline_qa.thresholds``, ``calib_midpoint``, ``calib_scale``,
``fusion``), keyed by KB name, with defaults for a KB they do not list: a new
KB works with the defaults and is tuned there once it has evaluation data.

This module imports nothing from the project, so any layer may read it.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["KB_NAMES", "KB_SPECS", "LABEL_KB", "ROUTED_KBS", "KBSpec", "kb_spec", "kbs_for_kind", "kbs_for_route"]


@dataclass(frozen=True)
class KBSpec:
    """One knowledge base: its name, what may be ingested into it, which routes search it, its demo source."""

    name: str
    kinds: tuple[str, ...]  # document kinds it accepts (keys of core.kb.index.ingest.PARSERS), first the main one
    routes: tuple[str, ...] = ()  # Guideline QA routes that search it
    demo: str | None = None  # folder under <assets_dir>/<kb.demo_subdir> that the demo build reads
    labels: bool = False  # it holds drug labels (SPL): the drug lexicon is read from it


KB_SPECS: tuple[KBSpec, ...] = (
    KBSpec("guidelines", ("guideline",), routes=("guideline", "mixed"), demo="guidelines"),
    KBSpec("druglabels", ("spl",), routes=("drug", "mixed"), demo="labels", labels=True),
    KBSpec("user", ("guideline", "spl")),  # the shared document space; doctors' own spaces are user.<slug>
)

KB_NAMES: tuple[str, ...] = tuple(s.name for s in KB_SPECS)
LABEL_KB: str = next(s.name for s in KB_SPECS if s.labels)
ROUTED_KBS: tuple[str, ...] = tuple(s.name for s in KB_SPECS if s.routes)


def kb_spec(name: str) -> KBSpec:
    """The spec of knowledge base ``name``; ``KeyError`` for a name not registered."""
    for spec in KB_SPECS:
        if spec.name == name:
            return spec
    raise KeyError(name)


def kbs_for_kind(kind: str) -> tuple[str, ...]:
    """The knowledge bases documents of ``kind`` may be ingested into (besides document spaces)."""
    return tuple(s.name for s in KB_SPECS if kind in s.kinds)


def kbs_for_route(route: str) -> tuple[str, ...]:
    """The knowledge bases a Guideline QA route searches, in registry order (none for a refused route)."""
    return tuple(s.name for s in KB_SPECS if route in s.routes)
