"""A question that names a loaded document is answered from it (issue 24): by title, issuer, file name, shorthand.

Three documents written for this test: an international-style guideline, a national manual and a
leaflet. The identity is what Guideline QA reads from an index (title, issuer, file name); the
questions are this test's own wording.
"""

from __future__ import annotations

import pytest

from core.config.guideline import GuidelineQASettings
from core.guideline.naming import identity_words, named_document
from core.guideline.terms import Vocabulary

CFG = GuidelineQASettings()
DOCS = {
    "g": ("Unified Demo Guidance on Lung Infection Care", "World Demo Health Alliance", "intl_lung_guidance.pdf",
          ["Health workers caring for patients wear respirators.", "Give drug A for six months.",
           "Country programmes adapt this guidance; each national programme may differ.",
           "Health workers with symptoms are tested.", "Screen health workers yearly.",
           "Keep the interval between doses at 24 hours.", "A missed dose shortens the interval to the next one."]),
    "m": ("Lung Infection Programme Handbook for Health Workers", "Ministry of Health of Fictovia, National Lung Programme",
          "natl_lung_handbook.pdf",
          ["The National Lung Programme (NLP) of Fictovia publishes this handbook.",
           "Health workers in Fictovia are screened every year.", "Give drug A for nine months in Fictovia."]),
    "l": ("What to Know About Lung Infection", "Demo Public Health Agency (DPHA)", "dpha_leaflet.pdf",
          ["Ask a health worker about drug A.", "Lung infection can be treated.",
           "Health workers will explain each interval.", "Take each dose at the same interval."]),
}  # fmt: skip


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    v = Vocabulary()
    for doc, (title, issuer, source, texts) in DOCS.items():
        for text in texts:
            v.add(f"{title}\n{issuer}\n{text}", doc)
        v.identities[doc] = identity_words(title, issuer, source, CFG.stopwords)
    return v.ready()


def test_identity_is_title_issuer_and_file_stem() -> None:
    words = identity_words("Lung Handbook", "Ministry of Health", "/uploads/natl_lung_handbook.pdf", CFG.stopwords)
    assert {"lung", "handbook", "ministry", "health", "natl"} <= words and "pdf" not in words


@pytest.mark.parametrize(
    ("question", "doc"),
    [
        ("How long is drug A given per the intl guidance?", "g"),  # the file name's word
        ("Duration of drug A according to the international guidance", "g"),  # the full word "intl" contracts
        ("What does the World Demo Health Alliance say about drug A?", "g"),  # the issuer
        ("drug A duration (natl handbook)", "m"),  # "natl" contracts National
        ("Per the NLP, how long is drug A given?", "m"),  # an abbreviation the manual defines for its issuer
        ("How long do we give drug A in Fictovia?", "m"),  # a name only its own pages use
        ("Is lung infection treatable, says the DPHA?", "l"),
    ],
)
def test_a_question_naming_one_document_names_it(vocab: Vocabulary, question: str, doc: str) -> None:
    assert named_document(question, vocab, CFG.stopwords, CFG.naming_elsewhere_chunks) == doc


@pytest.mark.parametrize(
    "question",
    [
        "How often are health workers screened?",  # "Health Workers" is in a title, but every document uses it
        "How long is drug A given for lung infection?",  # words of every identity name nothing
        "Is the interval between doses fixed?",  # "interval" is a word of the texts, not a way to write intl
        "Does the intl guidance differ from the Fictovia handbook on drug A?",  # two documents named: neither wins
    ],
)
def test_a_question_naming_no_one_document_leaves_the_evidence_alone(vocab: Vocabulary, question: str) -> None:
    assert named_document(question, vocab, CFG.stopwords, CFG.naming_elsewhere_chunks) is None
