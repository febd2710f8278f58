"""Ask AI (placeholder until its core lands)."""

from __future__ import annotations

from pages._shared import not_yet

not_yet("Ask AI", "Grounded answers about a scan that cite similar case IDs, or say there is not enough evidence.")
