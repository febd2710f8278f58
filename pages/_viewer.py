"""The reading viewer (a Cornerstone3D component), its second pane (a prior or a similar case), thumbnails.

The viewer gets every frame of a series at once through the session's websocket
(:mod:`core.imaging.viewer_data`, ``components/viewer``) and windows, scrolls and measures
in the browser. Thumbnails are PNGs from :mod:`core.imaging.render` through one cached
:class:`~core.imaging.render.Renderer` per process. The AI reading is shown beside the
image, never drawn on it; patients get no AI reading and no second pane. Every image
reaches the browser inside the page (the component's message, :func:`png_image`), never on
a ``/media/`` URL that any client holding it could fetch.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import streamlit as st

from core.imaging.query import SeriesView, case_thumbnails, prior_scan, series_for_case, series_for_scan
from core.imaging.render import Renderer, Window
from pages._shared import get_runtime, runtime_for, settings_json
from pages._text import inert

if TYPE_CHECKING:
    from core.auth import ScanRow
    from core.contracts import SimilarCase
    from core.imaging.viewer_data import ViewerSeries

VIEW_PX = 512
VIEW_HEIGHT = 470  # the viewer frame (toolbar, image, measurements): above the fold at 1366x768


@st.cache_resource(show_spinner=False, max_entries=4)
def renderer_for(settings: str) -> Renderer:
    """One renderer (and its slice cache) per settings."""
    from core.imaging.store import ImageStore

    rt = runtime_for(settings)
    return Renderer(ImageStore.from_settings(rt.settings), rt.settings.imaging.render_cache_entries)


@st.cache_data(ttl=30, show_spinner=False, max_entries=512)
def scan_series(scan_id: str, settings: str) -> list[SeriesView]:
    """A scan's series (cached briefly: an import shows up within 30 s, or at once after a rerun of the import)."""
    return series_for_scan(runtime_for(settings).db, scan_id)


def _png(series: SeriesView, index: int, window: Window | None, size: int, zoom: float = 1.0) -> bytes:
    sha, frame = series.slices[min(max(index, 0), len(series.slices) - 1)]
    return renderer_for(settings_json()).png(sha, frame, None if series.colour else window, size=size, zoom=zoom)


def png_image(png: bytes, *, caption: str = "", width: int | None = None) -> None:
    """A PNG inside the page itself: a ``data:`` URI sent over the signed-in session's websocket.

    ``st.image`` would put the pixels on Streamlit's ``/media/`` endpoint, which serves any client
    that has the URL, session or not; an image shown here never has a URL of its own.
    """
    src = "data:image/png;base64," + base64.b64encode(png).decode("ascii")
    style = f"width:{width:d}px;max-width:100%" if width else "width:100%"
    cap = f'<figcaption class="cb-caption">{html.escape(caption)}</figcaption>' if caption else ""
    st.html(
        f'<figure class="cb-figure" style="margin:0"><img class="cb-image" alt="{html.escape(caption or "scan image")}" '
        f'src="{src}" style="{style}">{cap}</figure>'
    )


def _pick_series(series: list[SeriesView], key: str) -> SeriesView:
    if len(series) == 1:
        return series[0]
    i = st.selectbox("Series", range(len(series)), format_func=lambda i: series[i].label, key=f"{key}-series")
    return series[i]


BESIDE_KEY = "viewer_beside"  # ("prior", scan id) or ("case", case id): what the second pane shows


def open_beside(kind: str, ref: str) -> None:
    """Show a prior scan (``kind="prior"``) or a similar case (``"case"``) in the viewer's second pane."""
    st.session_state[BESIDE_KEY] = (kind, ref)


def close_beside() -> None:
    """Back to one pane."""
    st.session_state.pop(BESIDE_KEY, None)


def _beside_series(current: SeriesView) -> tuple[SeriesView, str] | None:
    """The second pane's series and caption, matching the current series' modality where it can."""
    chosen = st.session_state.get(BESIDE_KEY)
    if not chosen:
        return None
    kind, ref = chosen
    db = get_runtime().db
    series = scan_series(ref, settings_json()) if kind == "prior" else series_for_case(db, ref)
    if not series:
        return None
    same = [s for s in series if s.modality == current.modality] or series
    return same[0], ("Prior scan" if kind == "prior" else f"Similar case {ref}")


def _viewer_payload(view: SeriesView, key: str, label: str) -> ViewerSeries:
    from core.imaging.store import ImageStore
    from core.imaging.viewer_data import viewer_series

    rt = get_runtime()
    store = ImageStore.from_settings(rt.settings)
    out = viewer_series(rt.db, store, view, key=key, max_mb=rt.settings.imaging.viewer_max_mb)
    out.meta["caption"] = label
    return out


@st.fragment  # choosing a series or the second pane reruns the viewer alone; scrolling never reruns at all
def image_panel(scan: ScanRow, *, show_reading: bool) -> None:
    """The viewer for ``scan`` (and a prior or similar case beside it); with ``show_reading`` the prior button."""
    from components.viewer import dicom_viewer

    series = scan_series(scan.scan_id, settings_json())
    with st.container(border=False, key="viewer"):
        if not series:
            st.caption("No images for this scan yet. Doctors can add them on the Import images page.")
            return
        view = _pick_series(series, "viewer")
        if view.is_demo:
            st.caption(f"🧪 {inert(view.label)}. Demo data, not for clinical use.")
        panes = [_viewer_payload(view, "current", f"Current {scan.created_at:%Y-%m-%d}")]
        beside = _beside_series(view) if show_reading else None
        if beside is not None:
            panes.append(_viewer_payload(beside[0], "beside", beside[1]))
        dicom_viewer(panes, height=VIEW_HEIGHT, key="dicom-viewer")
        st.caption(
            "Wheel or arrow keys: slice · left drag: window (or the chosen tool) · middle drag: pan · "
            "right drag: zoom · keys 1-5: presets · C: cine"
        )
        if show_reading:
            _beside_controls(scan, beside)


def _beside_controls(scan: ScanRow, beside: tuple[SeriesView, str] | None) -> None:
    prior = prior_scan(get_runtime().db, scan.scan_id)
    if beside is not None:
        what = beside[1][0].lower() + beside[1][1:]
        st.button(f"Close {inert(what)}", key="beside-close", on_click=close_beside, icon="✖️")
    elif prior is not None:
        st.button(
            f"Compare with prior ({prior.created_at:%Y-%m-%d})",
            key="beside-prior",
            on_click=open_beside,
            args=("prior", prior.scan_id),
            help="The patient's previous scan of this anatomy beside this one, scrolling and window linked.",
        )
    else:
        st.caption("No earlier scan of this anatomy with images.")


def ai_reading(scan: ScanRow) -> None:
    """The AI reading, shown beside the image (never drawn on it)."""
    st.markdown(f"**AI reading** · confidence **{scan.confidence:.0%}**\n\n{inert(scan.diagnosis)}")
    st.caption("A draft for review, not a diagnosis. Shown beside the image, never drawn on it.")


def neighbour_thumbnails(cases: Sequence[SimilarCase], *, per_row: int = 5) -> None:
    """A thumbnail for every similar case that has an image; its button opens it in the viewer's second pane."""
    if not cases:
        return
    thumbs = case_thumbnails(get_runtime().db, [c.caseId for c in cases])
    if not thumbs:
        st.caption("None of these cases has an image.")
        return
    size = get_runtime().settings.imaging.thumbnail_px
    shown = [c for c in cases if c.caseId in thumbs]
    with st.container(key="neighbour-thumbs"):
        for start in range(0, len(shown), per_row):
            cols = st.columns(per_row)
            for col, case in zip(cols, shown[start : start + per_row], strict=False):
                view = thumbs[case.caseId]
                with col:
                    png_image(_png(view, len(view.slices) // 2, view.window, size), width=size)
                    st.button(
                        inert(case.caseId),
                        key=f"thumb-{case.caseId}",
                        help=f"{case.diagnosis}: open beside the current image",
                        type="tertiary",
                        on_click=open_beside,
                        args=("case", case.caseId),
                    )


def patient_timeline(scans: Sequence[ScanRow]) -> None:
    """The patient's scans over time, oldest first: a thumbnail, the AI reading and the signed reports."""
    from core.reports import report_versions

    rt = get_runtime()
    size = rt.settings.imaging.thumbnail_px
    with st.container(key="timeline"):
        for scan in sorted(scans, key=lambda s: s.created_at):
            with st.container(border=True, key=f"timeline-{scan.scan_id}"):
                left, right = st.columns([1, 4])
                series = scan_series(scan.scan_id, settings_json())
                with left:
                    if series:
                        view = series[0]
                        png_image(_png(view, len(view.slices) // 2, view.window, size), width=size)
                    else:
                        st.caption("No image")
                with right:
                    st.markdown(
                        f"**{scan.created_at:%Y-%m-%d}** · {inert(scan.anatomy)} · AI reading: {inert(scan.diagnosis)}"
                    )
                    current = [r for r in report_versions(rt.db, scan.scan_id) if r.is_current]
                    if not current:
                        st.caption("No signed report.")
                    for r in current:
                        when = f"{r.signed_at:%Y-%m-%d}" if r.signed_at else "unsigned"
                        st.markdown(f"Signed report #{r.id:d} (v{r.version:d}, {inert(when)}): {inert(r.impression)}")
