"""Medical images: a content-addressed store, DICOM import with de-identification, rendering, encoders.

Nothing here imports streamlit. Heavy modules (pydicom, the decoders, torch) load
only when a function that needs them runs. See docs/IMAGING.md.
"""
