"""Settings / Status (placeholder until its core lands)."""

from __future__ import annotations

from pages._shared import not_yet

not_yet("Settings / Status", "Backends in use, model files and hashes, index statistics and rebuild actions.")
