"""Patient Explorer (placeholder until its core lands)."""

from __future__ import annotations

from pages._shared import not_yet

not_yet("Patient Explorer", "An anatomy heatmap whose intensity comes from similar-case evidence.")
