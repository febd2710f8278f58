"""Issue 26, class 7: names of people who are not users, addresses and postcodes are scrubbed before egress.

The review sent "Alvarez, 12 Elm Street, Leeds LS1 4AP" from an uploaded document to the external
model verbatim: the de-identifier knew only the user table's names. Here 400 generated sentences
(``tests/phi_freetext_corpus.py``: hand-written names and streets, not drawn from the scrubber's
dictionary) plant names, addresses, postcodes, phone numbers and record numbers; recall per type
must be at least 98% with no user names given, and identifier-free clinical text (eponyms, sizes,
vertebral levels, label wording) must come back unchanged. On main before this change name and
address recall was 0%.
"""

from __future__ import annotations

from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.privacy.deid import Deidentifier
from core.privacy.egress import Egress
from core.privacy.text import normalise
from tests.phi_freetext_corpus import CLEAN, NAMES, POSTCODES, RELATIONS, STREETS, TITLES, TOWNS, corpus

TARGET = 0.98


def _covered(findings: list[tuple[int, int]], text: str, start: int, end: int) -> bool:
    """Every letter and digit of the planted span lies inside some finding."""
    return all(not text[i].isalnum() or any(s <= i < e for s, e in findings) for i in range(start, end))


def recall_by_kind(deid: Deidentifier, held_out: bool = False) -> dict[str, tuple[int, int]]:
    """``kind -> (found, planted)`` over the generated corpus."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for s in corpus(held_out=held_out):
        text = normalise(s.text, casefold=False)
        assert len(text) == len(s.text)
        found = [(f.start, f.end) for f in deid.find(text)]
        for kind, start, end in s.spans:
            out[kind][1] += 1
            out[kind][0] += _covered(found, text, start, end)
    return {k: (v[0], v[1]) for k, v in out.items()}


@pytest.mark.parametrize("held_out", [False, True], ids=["tuning-names", "held-out-names"])
def test_recall_on_names_and_addresses_of_people_who_are_not_users(held_out: bool) -> None:
    recall = recall_by_kind(Deidentifier(), held_out)
    assert set(recall) == {"NAME", "ADDRESS", "PHONE", "RECORD"}
    low = {k: f"{f}/{n}" for k, (f, n) in recall.items() if f / n < TARGET}
    assert not low, (low, recall)


@pytest.mark.parametrize("text", CLEAN)
def test_identifier_free_clinical_text_comes_back_unchanged(text: str) -> None:
    assert Deidentifier().scrub(text) == normalise(text, casefold=False)


@settings(max_examples=200, deadline=None)
@given(
    st.sampled_from(NAMES),
    st.sampled_from([*TITLES, *RELATIONS, "seen by", "contact", "next of kin"]),
    st.integers(1, 999),
    st.sampled_from(STREETS),
    st.sampled_from(TOWNS),
    st.sampled_from(POSTCODES),
    st.sampled_from(["{cue} {name} lives at {addr}.", "{name}, {addr}, was the {cue}.", "Per {cue} {name} ({addr})."]),
)
def test_no_planted_name_or_address_survives_a_scrub(
    name: str, cue: str, number: int, street: str, town: str, postcode: str, template: str
) -> None:
    addr = f"{number} {street}, {town} {postcode}"
    out = Deidentifier().scrub(template.format(cue=cue, name=name, addr=addr)).casefold()
    for part in [*name.split(), street.split()[0], town, postcode]:
        assert normalise(part).casefold() not in out.split() and normalise(postcode) not in out, (part, out)


# -- the choke point every external call passes (core.llm.remote.OpenAIWireLLM) --------------------------------
def test_the_review_string_leaves_scrubbed() -> None:
    sent = Egress().messages(
        [{"role": "user", "content": "From an upload: Alvarez, 12 Elm Street, Leeds LS1 4AP. What is the dose?"}]
    )
    text = sent[0]["content"]
    for part in ("Alvarez", "Elm", "Leeds", "LS1", "4AP"):
        assert part not in text, text
    assert "[NAME]" in text and "[ADDRESS]" in text
