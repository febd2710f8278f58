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
from pages._shared import DEMO_NOTICE, feature_limit, get_runtime, require_user
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


def _show(bar: DeltaGenerator, fraction: float, message: str, names: dict[str, str]) -> None:
    bar.progress(min(fraction, 1.0), text=inert(_for_doctor(message, names)))


def _for_doctor(text: str, names: dict[str, str]) -> str:
    """Core's words for the command line, said for this form: the files as the doctor named them, the form's fields."""
    for stored, chosen in names.items():
        text = text.replace(stored, chosen)
    return (
        text.replace("Give --anatomy", "Choose the Anatomy in the form")
        .replace("give --patient and --anatomy", "choose the Patient and the Anatomy in the form")
        .replace("--anatomy", "the Anatomy field")
        .replace("--patient", "the Patient field")
    )


def _outcomes(names: dict[str, str], outcome: str, failed: str | None = None, why: str = "") -> None:
    """One row per uploaded file, by the name the doctor chose."""
    rows = [
        {"file": chosen, "outcome": f"refused: {why}" if failed and failed in (stored, chosen) else outcome}
        for stored, chosen in names.items()
    ]
    st.dataframe(rows, hide_index=True, width="stretch", key="import-outcomes")


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
        uploads: dict[str, str] = {}  # numbered names on disk (an uploaded name never becomes a path) -> the doctor's
        for i, f in enumerate(files):
            stored = f"upload{i + 1:03d}{Path(f.name).suffix.lower() or '.dcm'}"
            (folder / stored).write_bytes(f.getvalue())
            uploads[stored] = Path(f.name).name
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
                    progress=lambda fraction, message: _show(bar, fraction, message, uploads),
                )
        except CasebookError as exc:
            bar.empty()
            cancel.empty()
            message, hint = _for_doctor(str(exc), uploads), _for_doctor(getattr(exc, "hint", "") or "", uploads)
            st.error(f"Nothing was imported: {inert(message)}" + (f"\n\n{inert(hint)}" if hint else ""), icon="⚠️")
            failed = next((chosen for stored, chosen in uploads.items() if stored in str(exc)), None)
            _outcomes(uploads, "not imported (an import is all or nothing)", failed, message)
            st.stop()
    cancel.empty()
    st.cache_data.clear()  # the scan lists and series caches must see the new scans
    st.success(f"Imported {summary.files:d} file(s) as {len(summary.scans):d} scan(s).", icon="✅")
    _outcomes(uploads, "imported")
    st.caption(inert(summary.embedding_note))
    for scan in summary.scans:
        st.page_link(
            "pages/scan_review.py",
            label=f"Open the {inert(scan.anatomy)} scan ({scan.series:d} series, {scan.images:d} images)",
            icon="🩻",
            query_params={"scan": scan.scan_id},
        )
