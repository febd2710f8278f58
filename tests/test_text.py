"""core.text: the one text toolkit the answer guard and the Guideline QA gates share."""

from __future__ import annotations

import core.answer.guard_lexicon as guard_lexicon
import core.guideline.text as guideline_text
from core.settings import load_settings
from core.text import (
    STOPWORDS,
    answer_sentences,
    chunk_sentences,
    content_words,
    find_phrases,
    fold_plural,
    key_tokens,
    number_values,
    stem,
)


def test_both_callers_use_the_one_toolkit() -> None:
    assert guideline_text.key_tokens is key_tokens and guideline_text.split_sentences is chunk_sentences
    assert STOPWORDS < guard_lexicon.STOPWORDS  # the guard adds quantity words an answer may use
    assert set(load_settings().guideline.stopwords) > STOPWORDS  # the setting adds its own to the shared base


def test_answer_and_chunk_sentences_keep_their_own_rules() -> None:
    text = "Seen in 2.5% of HC-00004. Stable; No change.\n- Follow-up in 3 months"
    assert answer_sentences(text) == ["Seen in 2.5% of HC-00004.", "Stable; No change.", "Follow-up in 3 months"]
    assert chunk_sentences(text) == ["Seen in 2.5% of HC-00004.", "Stable;", "No change.", "Follow-up in 3 months"]


def test_words_stems_and_numbers() -> None:
    assert key_tokens("The tests of e.g. TB doses", STOPWORDS) == {"test", "e.g", "tb", "dose"}
    assert content_words("the patient's -lungs'") == ["the", "patient", "lungs"]
    assert (stem("relapses"), stem("recovered"), fold_plural("therapies")) == ("relaps", "recover", "therapy")
    assert number_values("nine in ten") == [9.0, 10.0] and number_values("five hundred and twenty-five") == [525.0]
    assert number_values("half of 1,200") == [1200.0, 50.0]
    assert find_phrases("Testing for contraindications", ["test", "contraindicat"]) == ["test"]
    assert find_phrases("contraindications", ["contraindicat"], prefix=True) == ["contraindicat"]
