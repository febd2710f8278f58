"""Guideline QA gates and helpers on hand-made chunks: every gate rejecting and accepting."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from core.guideline.calibration import confidence, fit_logistic
from core.guideline.compose import complete_sentences, parse_bullets, plain_language
from core.guideline.constraints import (
    Candidate,
    apply_section_boost,
    diagnosis_gate,
    drug_anchor_filter,
    section_markers,
)
from core.guideline.gates import align, check_bullet, entity_guard, evidence_sentences, medical_entities
from core.guideline.router import drug_synonyms, route_question
from core.guideline.settings import GuidelineQASettings
from core.guideline.text import jaccard, key_tokens, overlap_ratio
from core.kb.lexicon import DrugLexicon
from core.kb.types import Hit

CFG = GuidelineQASettings()
EVAL = Path(__file__).parent / "data" / "guideline_qa_eval.json"

# The names the demo labels carry (assets/kb/labels), as the labels KB's lexicon would list them.
DEMO_LABELS = {
    "bdq": ["demoquiline", "bedaquiline fumarate", "bedaquiline"],
    "pa": ["pretomanid"],
    "lzd": ["demozolid", "linezolid"],
    "rif": ["demorifa", "rifampin"],
    "inh": ["isoniazid"],
    "emb": ["demobutol", "ethambutol hydrochloride", "ethambutol"],
    "pza": ["pyrazinamide"],
    "mfx": ["demoflox", "moxifloxacin hydrochloride", "moxifloxacin"],
    "lfx": ["demolevo", "levofloxacin"],
    "amx": ["amoxicillin"],
    "azm": ["demomax", "azithromycin monohydrate", "azithromycin"],
    "cro": ["ceftriaxone sodium", "ceftriaxone"],
    "dox": ["doxycycline hyclate", "doxycycline"],
}
LEXICON = DrugLexicon.from_rows([(n, "generic", doc) for doc, names in DEMO_LABELS.items() for n in names])


def hit(chunk_id: str, text: str, **meta: Any) -> Hit:
    """A retrieved chunk; guideline by default, a label section when ``drug_names`` is given."""
    meta.setdefault("kb", "druglabels" if meta.get("drug_names") else "guidelines")
    meta.setdefault("title", "TB guideline")
    meta.setdefault("dense_score", 0.9)
    return Hit(chunk_id=chunk_id, doc_id=chunk_id.split("#")[0], text=text, score=0.03, **meta)


def cand(h: Hit, relevance: float = 0.8, conf: float = 0.9) -> Candidate:
    return Candidate(h, relevance, conf)


# --- router -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("question", "route"),
    [
        ("How to diagnose latent TB?", "guideline"),
        ("Bedaquiline dosage", "drug"),
        ("What is the dose of Demoquiline?", "drug"),
        ("How does TB spread?", "mixed"),
        ("Management of Type 2 Diabetes", "out_of_domain"),
        ("What is the dose of metformin?", "out_of_domain"),
        ("How long is rifampicin given for latent TB infection?", "mixed"),
        ("What are the side effects of TB drugs?", "mixed"),
    ],
)
def test_router_table(question: str, route: str) -> None:
    assert route_question(question, LEXICON, CFG).route == route


def test_router_matches_every_expected_route_of_the_eval_set() -> None:
    items = json.loads(EVAL.read_text())["items"]
    wrong = [(i["id"], i["expected_route"], route_question(i["question"], LEXICON, CFG).route) for i in items]
    assert [w for w in wrong if w[1] != w[2]] == []


def test_router_out_of_domain_gives_its_reason_and_diagnosis_intent_is_detected() -> None:
    ood = route_question("Which statin is best for high cholesterol?", LEXICON, CFG)
    assert ood.route == "out_of_domain" and "no tuberculosis or pneumonia term" in ood.reason and ood.kbs == ()
    assert route_question("How is TB diagnosed in children?", LEXICON, CFG).diagnosis
    assert not route_question("What regimen treats MDR-TB?", LEXICON, CFG).diagnosis


def test_drug_synonyms_come_from_the_lexicon_and_aliases() -> None:
    assert drug_synonyms(LEXICON, ["bedaquiline"], {}) == {"bedaquiline", "bedaquiline fumarate", "demoquiline"}
    assert "rifampicin" in drug_synonyms(LEXICON, ["rifampin"], CFG.drug_aliases)


# --- section boosting -----------------------------------------------------------------------------------


def test_section_boost_adds_alpha_to_the_matching_section_only() -> None:
    desc = cand(hit("l#1", "Description text.", drug_names=("linezolid",), section_code="34089-3",
                    section_title="11 DESCRIPTION"), relevance=0.9)  # fmt: skip
    adverse = cand(hit("l#2", "Myelosuppression.", drug_names=("linezolid",), section_code="34084-4",
                       section_title="6 ADVERSE REACTIONS"), relevance=0.8)  # fmt: skip
    markers = section_markers("What are the side effects of linezolid?", CFG)
    assert "34084-4" in markers
    ranked = apply_section_boost([desc, adverse], markers, CFG.alpha)
    assert [c.hit.chunk_id for c in ranked] == ["l#2", "l#1"]  # accepted: boosted above the description
    assert ranked[0].boost == pytest.approx(0.12) and ranked[1].boost == 0.0  # rejected: no boost
    assert ranked[0].confidence == adverse.confidence  # the boost never touches the abstention score
    assert apply_section_boost([desc, adverse], section_markers("What is linezolid?", CFG), CFG.alpha)[0] is desc


def test_the_most_specific_section_keyword_wins() -> None:
    assert section_markers("What is the boxed warning for isoniazid?", CFG) == ["34066-1", "boxed warning"]
    assert "43685-7" in section_markers("What warnings does isoniazid carry?", CFG)


def test_section_boost_matches_guideline_headings_by_words() -> None:
    dosing = cand(hit("g#1", "Doses by weight.", section_path=("Dosing",), section_title="Dosing"), relevance=0.5)
    assert apply_section_boost([dosing], section_markers("dose of TB drugs", CFG), CFG.alpha)[0].boost > 0


# --- drug anchor filter ---------------------------------------------------------------------------------


def test_drug_anchor_rejects_another_drugs_label_even_when_it_mentions_the_target() -> None:
    synonyms = drug_synonyms(LEXICON, ["bedaquiline"], CFG.drug_aliases)
    own = cand(hit("b#1", "Take 400 mg once daily for 2 weeks.", drug_names=("demoquiline", "bedaquiline")))
    other = cand(hit("p#1", "Pretomanid 200 mg with bedaquiline and linezolid.", drug_names=("pretomanid",)),
                 relevance=0.99)  # fmt: skip
    guide_yes = cand(hit("g#1", "BPaL combines bedaquiline, pretomanid and linezolid."))
    guide_no = cand(hit("g#2", "Rifampicin for 4 months."))
    kept, rejected = drug_anchor_filter([own, other, guide_yes, guide_no], synonyms, CFG.label_must_match_drug)
    assert [c.hit.chunk_id for c in kept] == ["b#1", "g#1"]
    assert [c.hit.chunk_id for c in rejected] == ["p#1", "g#2"]


def test_drug_anchor_accepts_brand_names_and_aliases() -> None:
    brand = cand(hit("g#3", "Demoquiline prolongs the QT interval."))
    alias = cand(hit("g#4", "4R: daily rifampicin for 4 months."))
    assert drug_anchor_filter([brand], drug_synonyms(LEXICON, ["bedaquiline"], {}), True)[0] == [brand]
    assert drug_anchor_filter([alias], drug_synonyms(LEXICON, ["rifampin"], CFG.drug_aliases), True)[0] == [alias]


# --- diagnosis evidence gate ----------------------------------------------------------------------------


def test_diagnosis_gate_keeps_diagnostic_chunks_and_drops_treatment_ones() -> None:
    diag = cand(hit("g#1", "Send sputum for culture and an Xpert MTB/RIF Ultra test."))
    by_meta = cand(hit("g#2", "Results take 2 days.", section_path=("Chest radiograph",)))
    treat = cand(hit("g#3", "Give 2 months of HRZE then 4 months of HR."))
    late = cand(hit("g#4", "x" * CFG.diagnosis_window_chars + " culture"))
    kept, rejected = diagnosis_gate([diag, by_meta, treat, late], CFG.diagnosis_keywords, CFG.diagnosis_window_chars)
    assert kept == [diag, by_meta]
    assert rejected == [treat, late]  # a keyword past the 900-character window does not count


# --- lexical entailment gate ----------------------------------------------------------------------------

EVIDENCE = "Isoniazid: adults 5 mg/kg up to 300 mg once daily. Monitor liver enzymes monthly in adults over 35."


def _check(bullet: str) -> Any:
    sentences = evidence_sentences([hit("i#1", EVIDENCE, drug_names=("isoniazid",))], CFG.stopwords)
    return check_bullet(bullet, EVIDENCE, sentences, CFG)


def test_entailment_gate_rejects_a_high_risk_term_absent_from_the_evidence() -> None:
    verdict = _check("Adults take 300 mg once daily; patients with HIV need 600 mg.")
    assert not verdict.ok and verdict.missing_high_risk == ("hiv",)


def test_entailment_gate_accepts_a_high_risk_term_present_in_the_evidence() -> None:
    text = EVIDENCE + " People living with HIV have a higher risk."
    sentences = evidence_sentences([hit("i#2", text, drug_names=("isoniazid",))], CFG.stopwords)
    assert check_bullet("People living with HIV have a higher risk.", text, sentences, CFG).ok


def test_entailment_gate_rejects_low_token_overlap_and_accepts_supported_bullets() -> None:
    bad = _check("Ceftriaxone clears streptococcal bacteraemia within seventy-two hours.")
    assert not bad.ok and "below tau" in bad.reason and bad.overlap < CFG.tau
    good = _check("Adults take 5 mg/kg up to 300 mg once daily.")
    assert good.ok and good.overlap >= CFG.tau


def test_overlap_and_jaccard_are_the_documented_formulas() -> None:
    a, b = key_tokens("the daily dose of isoniazid", CFG.stopwords), key_tokens("isoniazid doses", CFG.stopwords)
    assert a == {"daily", "dose", "isoniazid"} and b == {"isoniazid", "dose"}
    assert overlap_ratio(a, b) == pytest.approx(2 / 3) and jaccard(a, b) == pytest.approx(2 / 3)
    assert overlap_ratio(set(), b) == 0.0 and jaccard(set(), set()) == 0.0


# --- claim-snippet alignment ----------------------------------------------------------------------------


def test_alignment_picks_the_best_evidence_sentence_with_its_source() -> None:
    h = hit("i#1", EVIDENCE, drug_names=("isoniazid",), set_id="abc-123", title="Isoniazid",
            section_title="2 DOSAGE AND ADMINISTRATION")  # fmt: skip
    best, score = align("Check liver enzymes every month after age 35.", evidence_sentences([h], CFG.stopwords),
                        CFG.stopwords)  # fmt: skip
    assert best.text.startswith("Monitor liver enzymes") and 0 < score < 1
    assert best.source == "label abc-123 (Isoniazid) > 2 DOSAGE AND ADMINISTRATION" and best.chunk_id == "i#1"


# --- medical entity safety guard ------------------------------------------------------------------------


def test_entity_guard_drops_a_patient_sentence_with_a_new_entity() -> None:
    clinician = "Isoniazid can cause hepatitis; check liver tests monthly."
    patient = "Isoniazid can harm the liver. It is also used to treat HIV."
    kept, dropped = entity_guard(patient, clinician, LEXICON.names(), CFG)
    assert kept == ["Isoniazid can harm the liver."]
    assert dropped == [("It is also used to treat HIV.", ["hiv"])]


def test_entity_guard_accepts_a_faithful_plain_language_summary() -> None:
    clinician = ["Peripheral neuropathy is the most common toxic effect of isoniazid.",
                 "Isoniazid is contraindicated in acute liver disease."]  # fmt: skip
    patient = plain_language(clinician, CFG)
    assert "nerve damage in the hands and feet" in patient.lower() and "isoniazid must not be used" in patient.lower()
    kept, dropped = entity_guard(patient, " ".join(clinician), LEXICON.names(), CFG)
    assert dropped == [] and len(kept) == 2


def test_medical_entities_cover_lexicon_terms_and_abbreviations() -> None:
    found = medical_entities("Start Demoquiline after an IGRA; watch for Pancreatitis and sepsis.", ["demoquiline"],
                             CFG)  # fmt: skip
    assert {"demoquiline", "igra", "pancreatitis", "sepsis"} <= found


# --- composer helpers and calibration -------------------------------------------------------------------


def test_parse_bullets_removes_unresolved_citations_and_reads_insufficient() -> None:
    drafts, unknown = parse_bullets("- Adults take 300 mg daily [1].\n- Something else [7]\n* Third [1, 2]", 2)
    assert [d.text for d in drafts] == ["Adults take 300 mg daily.", "Something else", "Third"]
    assert drafts[0].cites == (1,) and drafts[1].cites == () and drafts[2].cites == (1, 2) and unknown == [7]
    assert parse_bullets("INSUFFICIENT EVIDENCE", 3) == ([], [])


def test_complete_sentences_drops_window_fragments() -> None:
    assert complete_sentences("testing of contacts. Culture is the reference. Then the next") == [
        "Culture is the reference."
    ]


def test_calibration_maps_cosines_to_probabilities_and_refits() -> None:
    mid, scale = CFG.calibration("guidelines")
    assert confidence(mid, mid, scale) == pytest.approx(0.5)
    assert confidence(0.93, mid, scale) > CFG.threshold("guidelines") > confidence(0.84, mid, scale)
    assert confidence(None, mid, scale) == 0.0
    pos, neg = [0.88, 0.89, 0.90, 0.91, 0.86], [0.83, 0.84, 0.85, 0.87]
    fmid, fscale = fit_logistic(pos + neg, [1] * 5 + [0] * 4, CFG.calib_l2)
    assert 0.84 < fmid < 0.90 and fscale > 0
    with pytest.raises(ValueError):
        fit_logistic([0.9, 0.8], [1, 1], CFG.calib_l2)
