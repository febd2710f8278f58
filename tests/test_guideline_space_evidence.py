"""A question the doctor's loaded documents cover is answered from them, not crowded out by the curated demo KBs
(issue 24): the real pipeline over an in-memory retriever whose curated chunk outranks the doctor's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.guideline.retrieval import spaces_first
from core.guideline.types import QAAnswer
from core.settings import Settings
from tests.conftest import make_settings
from tests.test_guideline_gates import cand, hit
from tests.test_guideline_pipeline import qa_with

QUESTION = "How many air changes per hour does a TB ward need?"
# The curated chunk is the closer match by every score; the doctor's manual states its own answer.
CURATED = hit("ic#vent", "A TB ward needs mechanical ventilation of at least 12 air changes per hour, with air "
              "exhausted outside away from people.", section_path=("Infection control",), dense_score=0.95)  # fmt: skip
MANUAL = hit("natl#c7", "Each TB ward in Demoland needs 6 air changes per hour, by open windows or fans.",
             kb="user.u7", title="National TB manual", section_path=("12.3 Ventilation",), dense_score=0.93)  # fmt: skip
OFF_TOPIC = hit("natl#c9", "Keep the pharmacy store dry and below 25 degrees.", kb="user.u7",
                title="National TB manual", section_path=("Stores",), dense_score=0.80)  # fmt: skip


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


def test_the_doctors_documents_come_first_only_when_they_cover_the_question() -> None:
    ranked = [cand(CURATED), cand(OFF_TOPIC), cand(MANUAL)]
    first = spaces_first(ranked, ("user.u7",), lambda c: c.hit.chunk_id == "natl#c7")
    assert [c.hit.chunk_id for c in first] == ["natl#c9", "natl#c7", "ic#vent"]  # order kept within each group
    unchanged = spaces_first(ranked, ("user.u7",), lambda c: False)
    assert unchanged == ranked  # nothing of theirs covers it: the curated ranking stands


def test_a_covered_question_is_answered_from_the_loaded_manual_with_the_curated_kb_after(settings: Settings) -> None:
    qa = qa_with(settings, {"guidelines": [CURATED], "user.u7": [MANUAL]}, llm=None)
    mine = qa.answer(QUESTION, spaces=("user.u7",))
    assert isinstance(mine, QAAnswer), mine
    assert mine.bullets[0].evidence.kb == "user.u7" and "6 air changes" in mine.bullets[0].text
    assert mine.trace.step("spaces_first") is not None
    assert any(b.evidence.kb == "guidelines" for b in mine.bullets)  # the curated KB is still shown, after
    plain = qa.answer(QUESTION)  # no spaces: the curated KB answers as before
    assert isinstance(plain, QAAnswer) and plain.bullets[0].evidence.kb == "guidelines"
    assert plain.trace.step("spaces_first") is None
