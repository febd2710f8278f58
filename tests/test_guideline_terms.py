"""Scope by coverage reads the loaded documents' own words (issue 24): shorthand, misspellings, unknown topics.

The vocabulary is read from the shipped real-shaped guidelines (assets/kb/realshaped), as Guideline QA
reads it from an index's chunks. The questions are written for this test, not taken from any evaluation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.config.guideline import GuidelineQASettings
from core.embed.sbert import default_minilm_path
from core.guideline.sources import subsection_of
from core.guideline.terms import TermReport, Vocabulary, everyday_words, long_form, resolve_question
from core.kb.demo.longguides import BODIES, build_markdown

ASSETS = Path(__file__).resolve().parents[1] / "assets" / "kb" / "realshaped"
CFG = GuidelineQASettings()
EVERYDAY = everyday_words(default_minilm_path() / "vocab.txt")


def report(question: str, vocab: Vocabulary) -> TermReport:
    return resolve_question(question, vocab, CFG.stopwords, CFG.question_filler, EVERYDAY,
                            CFG.coverage_everyday_words, CFG.coverage_min_known_words)  # fmt: skip


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    paragraphs = []
    for body in BODIES:
        text = build_markdown(ASSETS, body).split("\n---\n", 1)[-1]  # the text, not the generator's front matter
        paragraphs += text.split("\n\n")
    return Vocabulary.from_texts(paragraphs)


@pytest.mark.parametrize(
    ("short", "words", "found"),
    [
        ("ACH", "wards need at least twelve air changes per hour", "air changes per hour"),
        ("NTP", "each district reports to the National TB Programme", "National TB Programme"),
        ("DILI", "stop the drugs at the first sign of drug-induced liver injury", "drug-induced liver injury"),
        ("CrCl", "dose by the creatinine clearance", "creatinine clearance"),
        ("XYZ", "air changes per hour", None),  # letters not there: no definition
        ("AB", "AB", None),  # a short form spelt out again defines nothing
    ],
)
def test_a_long_form_is_the_shortest_tail_the_short_form_abbreviates(short: str, words: str, found: str | None) -> None:
    assert long_form(short, words) == found


@pytest.mark.parametrize(
    ("word", "how", "spelling"),
    [
        ("ach", "defined", "air changes per hour"),  # "air changes per hour (ACH)" / the abbreviations list
        ("tpt", "defined", "tb preventive treatment"),
        ("ventilation", "known", "ventilation"),
        ("monitored", "known", "monitored"),
        ("rifampcin", "misspelt", "rifampicin"),  # a misspelling is corrected even where its first letters match  # a long word by its first letters: any inflection
        ("ethambutl", "misspelt", "ethambutol"),
        ("pyrazinamid", "misspelt", "pyrazinamide"),
        ("pza", "contracted", "pyrazinamide"),
        ("emb", "contracted", "ethambutol"),
        ("natl", "contracted", "national"),
        ("paracetamol", None, None),
        ("scabies", None, None),
    ],
)
def test_a_word_resolves_as_the_documents_write_it(vocab: Vocabulary, word: str, how: str | None, spelling: str | None) -> None:
    got = vocab.resolve(word)
    assert (got == (how, spelling)) if how else got is None


@pytest.mark.parametrize(
    ("question", "query_terms"),
    [
        ("Per the NTP, how much pyridoxine goes with high-dose isoniazid?", ["national tb programme"]),  # "goes": everyday
        ("How many ACH does an isolation room need?", ["air changes per hour"]),
        ("PZA and EMB doses by weight band in the natl manual", []),  # contractions vouch, they do not steer
        ("When is TPT offered to household contacts?", ["tb preventive treatment"]),
        ("Is ethambutl safe when the kidneys fail?", ["ethambutol"]),
        ("What does the handbook say about sputum smears for pulmonary TB?", []),  # one everyday word the documents lack
    ],
)
def test_a_question_in_the_documents_words_or_shorthand_is_covered(vocab: Vocabulary, question: str,
                                                                     query_terms: list[str]) -> None:  # fmt: skip
    got = report(question, vocab)
    assert got.covered, (got.unknown, got.everyday)
    assert got.query_terms == query_terms


@pytest.mark.parametrize(
    ("question", "unknown"),
    [
        ("Best paracetamol dose for a feverish adult?", "paracetamol"),
        ("How is scabies treated in a toddler?", "scabies"),
        ("Metformin dose as kidney function declines", "metformin"),
        ("What is the rabies vaccine schedule?", "rabies"),  # not folded to a 4-letter "raby" that contracts to anything
        ("Which statin suits a smoker with diabetes?", "statin"),
        ("Malaria treatment?", "malaria"),  # an everyday word, but beside one known word only
        ("Malaria and asthma treatment in adults", "asthma"),  # two everyday words the documents lack
    ],
)
def test_a_question_about_what_no_document_knows_is_not_covered(vocab: Vocabulary, question: str, unknown: str) -> None:
    got = report(question, vocab)
    assert not got.covered and unknown in got.unknown + got.everyday


LABEL_SECTION = (
    "The drug is injected under the skin.\n2.1 Adults With Joint Disease\nGive 40 mg every other week.\n"
    "2.2 Children\nGive 20 mg every other week from 15 kg.\n3.1 Tablets\nNot a subsection of section 2."
)


@pytest.mark.parametrize(
    ("section", "sentence", "cited"),
    [
        ("2 DOSAGE AND ADMINISTRATION", "Give 40 mg every other week.", "2.1 Adults With Joint Disease"),
        ("2 DOSAGE AND ADMINISTRATION", "Give 20 mg every other week from 15 kg.", "2.2 Children"),
        ("2 DOSAGE AND ADMINISTRATION", "The drug is injected under the skin.", None),  # above every subsection
        ("4 CONTRAINDICATIONS", "Give 40 mg every other week.", None),  # 2.1 is no subsection of section 4
        ("Do not use", "Give 40 mg every other week.", None),  # an unnumbered section has no numbered parts
        ("2 DOSAGE AND ADMINISTRATION", "A sentence that is not in the chunk.", None),
    ],
)
def test_a_label_bullet_cites_the_numbered_subsection_above_its_sentence(section: str, sentence: str,
                                                                          cited: str | None) -> None:  # fmt: skip
    assert subsection_of(section, LABEL_SECTION, sentence) == cited


@pytest.mark.parametrize(
    ("question", "read_as"),
    [
        ("Is rifampcin safe with ethambutl?", "Is rifampicin safe with ethambutol?"),
        ("Minimum ACH for an isolation room?", "Minimum ACH for an isolation room?"),  # long form: the query only
        ("PZA dose in the natl manual", "PZA dose in the natl manual"),  # contractions are guesses: left as written
    ],
)
def test_a_question_is_read_in_the_documents_spelling(vocab: Vocabulary, question: str, read_as: str) -> None:
    assert report(question, vocab).rewrite(question) == read_as
