"""Self-reflective RAG (placeholder until its core lands)."""

from __future__ import annotations

from pages._shared import not_yet

not_yet("Self-reflective RAG", "One question with its full reflection trace, and multiple-choice benchmark runs.")
