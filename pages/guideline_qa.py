"""Guideline QA (placeholder until its core lands)."""

from __future__ import annotations

from pages._shared import not_yet

not_yet(
    "Guideline QA",
    "Answers on tuberculosis and community-acquired pneumonia from guidelines and drug labels, with evidence per sentence.",
)
