"""Deterministic demo data (DEMO DATA, NOT FOR CLINICAL USE)."""
