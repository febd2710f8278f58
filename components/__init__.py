"""Streamlit custom components built with npm (their built bundles are committed under ``*/build``)."""
