"""Import images: DICOM files or zips (and PNG/JPEG photographs) in, de-identified on the way; all or nothing.

The same pipeline as ``python -m core import-dicom`` (core/imaging/importer.py), with a
progress bar. Cancel stops the run at the next file; nothing is kept of a stopped or
refused import.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import streamlit as st
from sqlalchemy import select
from streamlit.delta_generator import DeltaGenerator

from core.errors import CasebookError
from core.store.models import ANATOMIES, User
from pages._shared import DEMO_NOTICE, feature_limit, get_runtime, require_user, show_error
from pages._text import inert

FROM_HEADERS = "From the DICOM headers"
NEW_PATIENT = "A new pseudonymous patient per original patient"

user = require_user(doctor=True)
st.title("Import images")
st.caption(DEMO_NOTICE)
rt = get_runtime()
limits = rt.settings.imaging
st.markdown(
    "Upload DICOM files, a zip of a study, or photographs (PNG/JPEG). Identifying data is removed on the way in "
    "(DICOM PS3.15 Annex E Basic Profile; dates shifted by one secret offset per patient; private tags dropped). "
    f"Limits: {limits.max_file_mb:d} MB per file, {limits.max_study_mb:d} MB per import. See docs/IMAGING.md."
)

with rt.db.read_only() as s:
    patients = s.execute(
        select(User.username, User.display_name).where(User.role == "patient").order_by(User.display_name)
    ).all()
names = {u: n for u, n in patients}

with st.form("import-form", border=True):
    files = st.file_uploader("Files", accept_multiple_files=True, key="import-files")
    c1, c2 = st.columns(2)
    patient = c1.selectbox(
        "Patient",
        [NEW_PATIENT, *names],
        format_func=lambda u: names.get(u, u),
        help="Photographs carry no identity: choose the patient. DICOM files name their patient (kept only as a keyed hash).",
    )
    anatomy = c2.selectbox("Anatomy", [FROM_HEADERS, *ANATOMIES], help="Needed when Body Part Examined is empty.")
    confirmed = st.checkbox(
        "I have looked at these images: no name or other identifying text is burned into the pixels",
        help="Images flagged as having burned-in annotation are refused unless this is ticked.",
    )
    submitted = st.form_submit_button("Import", type="primary", icon="📥")


def _show(bar: DeltaGenerator, fraction: float, message: str) -> None:
    bar.progress(min(fraction, 1.0), text=message)


if submitted:
    if not files:
        st.warning("Choose at least one file to import.")
        st.stop()
    from core.imaging.importer import import_images

    cancel = st.empty()  # a click reruns the page, which stops the import at its next progress update
    cancel.button("Cancel import", icon="✋", key="cancel-import", help="Stops at the next file; nothing is kept.")
    bar = st.progress(0.0, text="Starting…")
    with tempfile.TemporaryDirectory(prefix="casebook-import-") as tmp:
        folder = Path(tmp)
        for i, f in enumerate(files):  # numbered names: an uploaded name never becomes a path
            (folder / f"{i:05d}-{Path(f.name).suffix.lower() or '.dcm'}").write_bytes(f.getvalue())
        try:
            with feature_limit("import"):
                summary = import_images(
                    rt.settings,
                    rt.db,
                    [folder],
                    patient=None if patient == NEW_PATIENT else patient,
                    anatomy=None if anatomy == FROM_HEADERS else anatomy,
                    confirm_burned_in=confirmed,
                    actor_id=user.id,
                    progress=lambda fraction, message: _show(bar, fraction, message),
                )
        except CasebookError as exc:
            bar.empty()
            cancel.empty()
            show_error("Nothing was imported", exc)
            st.stop()
    cancel.empty()
    st.cache_data.clear()  # the scan lists and series caches must see the new scans
    st.success(f"Imported {summary.files:d} file(s) as {len(summary.scans):d} scan(s).", icon="✅")
    st.caption(inert(summary.embedding_note))
    for scan in summary.scans:
        st.page_link(
            "pages/scan_review.py",
            label=f"Open the {inert(scan.anatomy)} scan ({scan.series:d} series, {scan.images:d} images)",
            icon="🩻",
            query_params={"scan": scan.scan_id},
        )
