"""The image viewer: window/level presets, zoom, slice scrolling, the prior side by side, neighbour thumbnails.

Pixels are rendered to PNG by :mod:`core.imaging.render` through one cached
:class:`~core.imaging.render.Renderer` per process (a slice change reads one
memory-mapped frame; a slice seen before costs nothing). The AI reading is shown
beside the image, never drawn on it; patients get no AI reading here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import streamlit as st

from core.imaging.query import SeriesView, case_thumbnails, prior_scan, series_for_case, series_for_scan
from core.imaging.render import PRESETS, Renderer, Window
from pages._shared import get_runtime, runtime_for, settings_json
from pages._text import inert

if TYPE_CHECKING:
    from core.auth import ScanRow
    from core.contracts import SimilarCase

VIEW_PX = 512
AS_STORED, MANUAL = "As stored", "Manual"


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


def window_controls(series: SeriesView, key: str) -> Window | None:
    """Preset buttons plus manual centre/width; ``None`` means the stored (or automatic) window."""
    if series.colour:
        st.caption("Colour image: shown as acquired (no window/level).")
        return None
    options = [AS_STORED, *PRESETS, MANUAL]
    choice = st.segmented_control("Window", options, default=AS_STORED, key=f"{key}-preset", required=True)
    if choice == MANUAL:
        base = series.window or Window(40, 400)
        c1, c2 = st.columns(2)
        center = c1.number_input("Level (centre)", -2000.0, 5000.0, float(base.center), 10.0, key=f"{key}-level")
        width = c2.number_input("Width", 1.0, 8000.0, float(base.width), 10.0, key=f"{key}-width")
        return Window(center, width)
    return PRESETS.get(str(choice), series.window)


def _pick_series(series: list[SeriesView], key: str) -> SeriesView:
    if len(series) == 1:
        return series[0]
    i = st.selectbox("Series", range(len(series)), format_func=lambda i: series[i].label, key=f"{key}-series")
    return series[i]


@st.fragment  # a slider step or a window change reruns the viewer alone, not the whole page
def image_panel(scan: ScanRow, *, show_reading: bool) -> None:
    """The viewer for ``scan``; with ``show_reading`` the AI reading sits in a column beside the image."""
    series = scan_series(scan.scan_id, settings_json())
    with st.container(border=True, key="viewer"):
        st.subheader("Images")
        if not series:
            st.caption("No images for this scan yet. Doctors can add them on the Import images page.")
            return
        view = _pick_series(series, "viewer")
        if view.is_demo:
            st.caption(f"🧪 {inert(view.label)}. Demo data, not for clinical use.")
        window = window_controls(view, "viewer")
        c1, c2 = st.columns([2, 1])
        zoom = c1.select_slider("Zoom", [1.0, 1.5, 2.0, 3.0, 4.0], value=1.0, key="viewer-zoom")
        prior = prior_scan(get_runtime().db, scan.scan_id)
        compare = c2.toggle(
            "Compare with prior",
            key="viewer-prior",
            disabled=prior is None,
            help="The patient's previous scan of this anatomy, same window and slice position."
            if prior
            else "No earlier scan of this anatomy with images.",
        )
        n = len(view.slices)
        index = st.slider("Slice", 1, n, (n + 1) // 2, key=f"viewer-slice-{view.id}") - 1 if n > 1 else 0
        # a keyed container per layout: switching the comparison on or off replaces the row, never re-flows it
        row = st.container(key="viewer-row-compare" if compare and prior else "viewer-row-single")
        cols = row.columns([3, 3, 2] if compare and prior else [3, 2], gap="medium")
        with cols[0]:
            shown = window or view.window
            label = f"slice {index + 1}/{n} · " if n > 1 else ""
            wl = f"W {shown.width:.0f} / L {shown.center:.0f}" if shown and not view.colour else "auto window"
            st.image(
                _png(view, index, window, VIEW_PX, zoom),
                caption=f"Current · {label}{wl}",
                width="stretch",
                output_format="PNG",
            )
        if compare and prior:
            with cols[1]:
                _prior_image(prior.scan_id, prior.created_at.strftime("%Y-%m-%d"), view, index, window, zoom)
        with cols[-1]:
            if show_reading:
                st.markdown(f"**AI reading**\n\n{inert(scan.diagnosis)}")
                st.markdown(f"AI confidence **{scan.confidence:.0%}**")
                st.caption("Shown beside the image, never drawn on it. A draft for review, not a diagnosis.")
            else:
                st.caption("The reading of these images appears with your doctor's signed report.")


def _prior_image(scan_id: str, when: str, current: SeriesView, index: int, window: Window | None, zoom: float) -> None:
    """The prior's matching series at the same relative slice and the same window (synchronised)."""
    series = scan_series(scan_id, settings_json())
    same = [s for s in series if s.modality == current.modality and s.kind == current.kind] or series
    prior = same[0]
    rel = index / max(len(current.slices) - 1, 1)
    j = round(rel * (len(prior.slices) - 1))
    st.image(
        _png(prior, j, window, VIEW_PX, zoom),
        caption=f"Prior {when} · slice {j + 1}/{len(prior.slices)}",
        width="stretch",
        output_format="PNG",
    )


@st.dialog("Similar case", width="large")
def _case_dialog(case_id: str, diagnosis: str) -> None:
    series = series_for_case(get_runtime().db, case_id)
    if not series:
        st.caption("This case has no image.")
        return
    view = series[0]
    st.markdown(f"**{inert(case_id)}** · {inert(diagnosis)}")
    if view.is_demo:
        st.caption(f"🧪 {inert(view.label)}. Demo data, not for clinical use.")
    window = window_controls(view, f"case-{case_id}")
    n = len(view.slices)
    index = st.slider("Slice", 1, n, (n + 1) // 2, key=f"case-{case_id}-slice") - 1 if n > 1 else 0
    st.image(_png(view, index, window, VIEW_PX), width=VIEW_PX, output_format="PNG")


def neighbour_thumbnails(cases: Sequence[SimilarCase], *, per_row: int = 5) -> None:
    """A thumbnail for every similar case that has an image; a click opens it large."""
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
                    st.image(_png(view, len(view.slices) // 2, view.window, size), width=size, output_format="PNG")
                    if st.button(inert(case.caseId), key=f"thumb-{case.caseId}", help=case.diagnosis, type="tertiary"):
                        _case_dialog(case.caseId, case.diagnosis)


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
                        st.image(_png(view, len(view.slices) // 2, view.window, size), width=size, output_format="PNG")
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
