"""The reading viewer: Cornerstone3D stack viewports in a Streamlit custom component.

``frontend/`` holds the TypeScript source and the npm lock file; ``build/`` the bundle that
``make viewer`` writes (committed, as Streamlit components usually ship, so running the app
needs no node). ``build/BUILD_INFO`` records the sha256 of the sources the bundle was built
from; a test fails when the sources change without a rebuild.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.imaging.viewer_data import ViewerSeries

HERE = Path(__file__).resolve().parent
BUILD = HERE / "build"
SOURCES = ("frontend/package.json", "frontend/package-lock.json", "frontend/index.html", "frontend/src")
_component: Any = None


def sources_digest() -> str:
    """The sha256 over the viewer's source files (sorted paths and contents)."""
    import hashlib

    h = hashlib.sha256()
    for rel in SOURCES:
        path = HERE / rel
        files = sorted(path.rglob("*")) if path.is_dir() else [path]
        for f in files:
            if f.is_file():
                h.update(f.relative_to(HERE).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def dicom_viewer(panes: list[ViewerSeries], *, height: int, key: str) -> Any:
    """Show up to two panes (the current image, then a prior or similar case); returns the viewer's measurements."""
    global _component
    if _component is None:
        import streamlit.components.v1 as components

        _component = components.declare_component("casebook_viewer", path=str(BUILD))
    pixels = {f"pixels_{i}": p.pixels for i, p in enumerate(panes)}
    return _component(panes=[p.meta for p in panes], height=height, key=key, default=None, **pixels)
