"""Similar Cases (placeholder until its core lands)."""

from __future__ import annotations

from pages._shared import not_yet

not_yet("Similar Cases", "Explore a scan's neighbours: similarity distribution, outcome breakdown and filters.")
