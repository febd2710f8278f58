"""Report Draft (placeholder until its core lands)."""

from __future__ import annotations

from pages._shared import not_yet

not_yet("Report Draft", "Generate, edit, save and sign FINDINGS / IMPRESSION / RECOMMENDATIONS drafts.")
