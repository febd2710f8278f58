"""Doses compared slot by slot (issue 24, item 1): an upload's dose is withheld only when it truly contradicts the
curated label's dose for the same drug, patient group, unit and weight band; rows that are not comparable (a weight
band's fixed dose against a label in mg/kg) stay in the answer under their own document; the label is never overridden.

Tables of variants over the real parser, the real comparison and the real pipeline on an in-memory retriever.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.config.guideline import GuidelineQASettings
from core.guideline.conflicts import drug_keys, split_conflicts
from core.guideline.doses import DoseStatement, contradicts, dose_statements, stated_weight
from core.guideline.sources import disagreements
from core.guideline.types import Bullet, QAAnswer, Snippet, SourceRef
from core.settings import Settings
from tests.conftest import make_settings
from tests.test_guideline_gates import LEXICON, hit
from tests.test_guideline_pipeline import ListRetriever, qa_with

CFG = GuidelineQASettings()
GROUPS = {name: re.compile(p, re.I) for name, p in CFG.populations.items()}
KEYS = drug_keys(LEXICON, CFG.drug_aliases)
PZA_LABEL = hit("pza#dose", "The usual dose is 15 to 30 mg/kg once daily, not to exceed 2 g per day.\nPediatric patients: "
                "30 to 40 mg/kg once daily (maximum 2 g).\nRenal impairment: in patients with creatinine clearance below "
                "30 mL/min or on hemodialysis, give 25 to 35 mg/kg three times weekly, after dialysis.",
                drug_names=("pyrazinamide",), title="Pyrazinamide", section_code="34068-7")  # fmt: skip
INH_LABEL = hit("inh#dose", "Adults — Daily regimen: 5 mg/kg, up to 300 mg once daily.\nPediatric patients — Daily "
                "regimen: 10 to 15 mg/kg, up to 300 mg once daily.", drug_names=("isoniazid",), title="Isoniazid",
                section_code="34068-7")  # fmt: skip
INH_LABEL_B6 = hit("inh#b6", "Preventive therapy: adults 300 mg once daily.\nGive pyridoxine (vitamin B6) 25 to 50 mg "
                   "daily to patients at risk of peripheral neuropathy.", drug_names=("isoniazid",), title="Isoniazid",
                   section_code="34068-7")  # fmt: skip
EMB_LABEL = hit("emb#dose", "Guideline weight bands (adults, daily) — Dose: 800 mg for 40 to 55 kg; 1,200 mg for 56 to "
                "75 kg; 1,600 mg for 76 to 90 kg.\nInitial treatment — Dose: 15 mg/kg once daily.",
                drug_names=("demobutol", "ethambutol"), title="Demobutol", section_code="34068-7")  # fmt: skip
LABELS = {"druglabels": [PZA_LABEL, INH_LABEL, EMB_LABEL]}


def statements(text: str, **kw: object) -> list[tuple[str | None, str, str, str | None]]:
    return [(s.drug, s.kind, s.label(), s.population) for s in dose_statements(text, KEYS, GROUPS, **kw)]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("Weight band: 40-54 kg | Pyrazinamide daily dose (adults): 1200 mg | Tablets: 3 x 400 mg",
         [("pyrazinamide", "dose", "1200 mg (40-54 kg)", "adults"), ("pyrazinamide", "strength", "400 mg (40-54 kg)", "adults")]),
        ("40-55 kg: 1,000 mg of pyrazinamide", [("pyrazinamide", "dose", "1000 mg (40-55 kg)", None)]),
        ("Weight band: 40 kg or more | Tablets or dose (adults): rifapentine 1200 mg, isoniazid 300 mg, pyrazinamide "
         "1500 mg (under 55 kg), 2000 mg (55-75 kg)",
         [(None, "dose", "1200 mg (40 kg or more)", "adults"), ("isoniazid", "dose", "300 mg (40 kg or more)", "adults"),
          ("pyrazinamide", "dose", "1500 mg (under 55 kg)", "adults"), ("pyrazinamide", "dose", "2000 mg (55-75 kg)", "adults")]),
        ("Pyrazinamide for children: 35 mg/kg daily (range 30-40 mg/kg), maximum 2 g.",
         [("pyrazinamide", "dose", "35 mg/kg", "children"), ("pyrazinamide", "dose", "30-40 mg/kg", "children"),
          ("pyrazinamide", "max", "max 2000 mg", "children")]),
        ("Formulations: isoniazid 100 mg and 300 mg tablets.",
         [("isoniazid", "strength", "100 mg", None), ("isoniazid", "strength", "300 mg", None)]),
        ("Give pyridoxine 10 mg daily to every adult on isoniazid.", [(None, "dose", "10 mg", "adults")]),
        ("Haemoglobin below 8 g/dL needs a transfusion.", []),
    ],
)  # fmt: skip
def test_doses_are_read_into_slots(text: str, want: list[tuple[str | None, str, str, str | None]]) -> None:
    assert statements(text) == want


def one(text: str, **kw: object) -> DoseStatement:
    found = [s for s in dose_statements(text, KEYS, GROUPS, **kw) if s.kind != "strength"]  # type: ignore[arg-type]
    assert len(found) == 1, found
    return found[0]


def label_of(h: object) -> list[DoseStatement]:
    return dose_statements(h.text, KEYS, GROUPS, drug=KEYS[h.drug_names[-1]])  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("upload", "label", "conflict"),
    [
        # a weight band's fixed dose against a label in mg/kg: another slot, not a conflict (1200 mg / 40-54 kg = 22-30)
        ("Weight band: 40-54 kg | Pyrazinamide daily dose (adults): 1200 mg", PZA_LABEL, False),
        ("Pyrazinamide 40-55 kg: 1000 mg", PZA_LABEL, False),
        ("Weight band: 55-74 kg | Pyrazinamide (adults): 1600 mg", PZA_LABEL, False),
        # ... unless it is grossly wrong: 3000 mg for 40-55 kg is 55-75 mg/kg of isoniazid against 5 mg/kg
        ("Adults 40-55 kg: isoniazid 3000 mg once daily.", INH_LABEL, True),
        # the same band in both documents, written either way, compares directly
        ("Ethambutol 40-54 kg: 800 mg daily.", EMB_LABEL, False),
        ("Ethambutol 40-54 kg: 1600 mg daily.", EMB_LABEL, True),
        # the group's own line, not a general one: the label's pyridoxine line (25 to 50 mg, naming no group) is not
        # the adult isoniazid dose, so 40 mg for adults contradicts the adult line (300 mg)
        ("The adult dose of isoniazid is 40 mg once daily.", INH_LABEL_B6, True),
        ("Isoniazid for adults: 300 mg once daily.", INH_LABEL_B6, False),
        # the same unit and group: a real contradiction, or a value inside the label's range
        ("The adult dose of isoniazid is 3000 mg once daily.", INH_LABEL, True),
        ("The adult dose of isoniazid is 900 mg once daily.", INH_LABEL, True),
        ("Pyrazinamide for adults: 25 mg/kg daily.", PZA_LABEL, False),
        ("Pyrazinamide for adults: 50 mg/kg daily.", PZA_LABEL, True),
        ("Isoniazid for children: 10 mg/kg daily.", INH_LABEL, False),
        ("Isoniazid for children: 20 mg/kg daily.", INH_LABEL, True),
        # another group's dose is compared with that group's line only; a group the label has no line for: no slot
        ("Pyrazinamide on haemodialysis: 25 mg/kg three times a week.", PZA_LABEL, False),
        ("Pyrazinamide on haemodialysis: 60 mg/kg three times a week.", PZA_LABEL, True),
        ("Isoniazid in pregnancy: 5 mg/kg daily.", INH_LABEL, False),
        # a maximum per dose and one per day are different slots; a lower maximum is more cautious, a higher one is not
        ("Isoniazid for adults: maximum 900 mg per dose.", INH_LABEL, False),
        ("Give isoniazid to adults, never more than 200 mg a day.", INH_LABEL, False),
        ("Give isoniazid to adults, never more than 600 mg a day.", INH_LABEL, True),
    ],
)  # fmt: skip
def test_a_dose_contradicts_the_label_only_in_the_same_slot(upload: str, label: object, conflict: bool) -> None:
    stated = one(upload)
    found = contradicts(stated, label_of(label), CFG.dose_band_tolerance)
    assert bool(found) == conflict, (stated, found)


def bullet(text: str, kb: str, title: str = "National TB Manual") -> Bullet:
    ref = SourceRef(doc_id="natl", title=title, kb=kb, section="18.2 Pyrazinamide: dose in adults")
    return Bullet(text=text, evidence=Snippet(text=text, score=1.0, source=title, kb=kb, chunk_id="natl#1", ref=ref),
                  overlap=1.0)  # fmt: skip


@pytest.mark.parametrize(
    ("text", "kb", "withheld"),
    [
        ("Weight band: 40-54 kg | Pyrazinamide daily dose (adults): 1200 mg", "user.u7", False),
        ("The adult dose of isoniazid is 3000 mg once daily.", "user.u7", True),
        ("The adult dose of isoniazid is 3000 mg once daily.", "user", True),
        ("The adult dose of isoniazid is 3000 mg once daily.", "guidelines", False),  # a curated source: not checked
        ("Rifapentine 1200 mg once daily in the four-month regimen.", "user.u7", False),  # no curated label
    ],
)  # fmt: skip
def test_only_a_true_contradiction_leaves_the_answer_and_names_both_documents(text: str, kb: str, withheld: bool) -> None:
    kept, conflicts = split_conflicts([bullet(text, kb)], ListRetriever(LABELS), LEXICON, CFG)
    assert (kept == []) == withheld and len(conflicts) == withheld
    if conflicts:
        c = conflicts[0]
        assert c.source == "National TB Manual" and c.label_source == "Isoniazid label"
        assert c.stated == ["3000 mg"] and "300 mg" in " ".join(c.label_lines) and c.label


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


NATL = dict(title="National TB Manual", organisation="Ministry of Health", year=2024, kb="user.u7",
            section_path=("18. Pyrazinamide", "18.2 Pyrazinamide: dose in adults"), section_title="18.2")  # fmt: skip


def test_the_answer_keeps_the_uploads_weight_band_rows_and_the_labels_own_dose(settings: Settings) -> None:
    """Before: the band rows of the upload were withheld as conflicts (the label states mg/kg), and the answer lost them."""
    rows = hit("natl#pza", "Weight band: 40-54 kg | Pyrazinamide daily dose (adults): 1000 mg\nWeight band: 55-70 kg | "
               "Pyrazinamide daily dose (adults): 1500 mg", **NATL)  # fmt: skip
    qa = qa_with(settings, {**LABELS, "guidelines": [], "user.u7": [rows]}, llm=None)
    result = qa.answer("What is the adult dose of pyrazinamide?", spaces=("user.u7",))
    assert isinstance(result, QAAnswer), result
    assert not result.conflicts
    by_doc = {b.evidence.ref.doc_id: b.text for b in result.bullets if b.evidence.ref}
    assert "1000 mg" in by_doc["natl"] and "mg/kg" in by_doc["pza"]  # each under its own document


# -- two documents side by side: one Disagreement per slot that differs, never a merged list ------------------------
def said(doc: str, text: str, population: str | None = None) -> Bullet:
    ref = SourceRef(doc_id=doc, title=doc, kb="user.u7", section="1")
    return Bullet(text=text, evidence=Snippet(text=text, score=1.0, source=doc, kb="user.u7", chunk_id=f"{doc}#1", ref=ref),
                  overlap=1.0, population=population)  # fmt: skip


@pytest.mark.parametrize(
    ("intl", "natl", "slots"),
    [
        # durations and timings that differ
        ("Start ART within 2 weeks of starting TB treatment.", "Start ART within eight weeks of starting TB treatment.",
         {"duration or timing": (["2 weeks"], ["8 weeks"])}),
        ("TB meningitis is treated for 6 or 12 months.", "TB meningitis is treated for twelve months.", {}),  # 12 in both
        ("Extend the continuation phase to 7 months.", "The continuation phase is not extended; it stays 4 months.",
         {"duration or timing": (["7 months"], ["4 months"])}),
        # doses: the same drug and unit differ; another drug or unit is another slot
        ("Pyrazinamide 48 kg: 1200 mg daily.", "Pyrazinamide 48 kg: 1000 mg daily.",
         {"dose of pyrazinamide (mg by weight band)": (["1200 mg (48-48 kg)"], ["1000 mg (48-48 kg)"])}),
        ("Weight band: 40-54 kg | Pyrazinamide (adults): 1200 mg\nWeight band: 55-74 kg | Pyrazinamide (adults): 1600 mg",
         "Weight band: 40-55 kg | Pyrazinamide (adults): 1000 mg\nWeight band: 56-75 kg | Pyrazinamide (adults): 1600 mg",
         {"dose of pyrazinamide (mg by weight band)": (["1200 mg (40-54 kg)"], ["1000 mg (40-55 kg)"])}),
        ("Weight band: 30-39 kg | Pyrazinamide (adults): 800 mg", "Weight band: 40-55 kg | Pyrazinamide (adults): 1000 mg", {}),
        ("Pyrazinamide for adults: 25 mg/kg daily.", "Ethambutol for adults: 15 mg/kg daily.", {}),
        ("Pyrazinamide for adults: 25 mg/kg daily.", "Weight band: 40-54 kg | Pyrazinamide (adults): 1000 mg", {}),
        ("Ethambutol for adults: 15 mg/kg, to a maximum of 1600 mg daily.",
         "Give ethambutol to adults at 15 mg/kg, never more than 1200 mg a day.",
         {f"maximum dose of {KEYS['ethambutol']} (mg)": (["1600 mg"], ["1200 mg"])}),
        ("Isoniazid for children: 7-15 mg/kg daily.", "Isoniazid for children: 10-15 mg/kg daily.",
         {"dose of isoniazid (mg/kg)": (["7-15 mg/kg"], ["10-15 mg/kg"])}),
        # an age is no duration; air changes per hour read the same in either spelling
        ("People aged 14 years and older may receive 6 months of BPaLM.", "Use: people aged 15 years and older; 6 months.",
         {"age": (["14 years"], ["15 years"])}),
        ("At least 12 air changes per hour.", "Minimum air changes per hour: 12 ACH.", {}),
        ("At least 12 air changes per hour.", "Existing wards: 6 ACH.",
         {"air changes per hour": (["12 air changes per hour"], ["6 air changes per hour"])}),
    ],
)  # fmt: skip
def test_documents_disagree_slot_by_slot(intl: str, natl: str, slots: dict[str, tuple[list[str], list[str]]]) -> None:
    found = disagreements([said("intl", intl), said("natl", natl)], "duration", KEYS, CFG)
    assert {d.topic: (d.values["intl"], d.values["natl"]) for d in found} == slots
    for d in found:  # side by side: every document named with its own values, never one merged list
        assert d.line().startswith(f"Sources differ on {d.topic}: intl says") and "; natl says" in d.line()


def test_another_groups_bullet_is_not_compared_and_one_document_never_disagrees_with_itself() -> None:
    child = said("natl", "Children: isoniazid 10 mg/kg.", "children").model_copy(update={"other_population": True})
    assert disagreements([said("intl", "Adults: isoniazid 5 mg/kg."), child], "dose", KEYS, CFG) == []
    assert disagreements([said("intl", "4 months."), said("intl", "6 months.")], "duration", KEYS, CFG) == []


def test_a_weight_in_the_question_picks_its_band_and_a_derived_mg_per_kg_column_is_no_second_difference() -> None:
    intl = ("Weight band: 30-39 kg | Pyrazinamide daily dose (adults): 800 mg | Approximate mg/kg: 23 mg/kg\n"
            "Weight band: 40-54 kg | Pyrazinamide daily dose (adults): 1200 mg | Approximate mg/kg: 25 mg/kg")  # fmt: skip
    natl = ("Weight band: 30-39 kg | Pyrazinamide daily dose (adults): 1000 mg | Approximate mg/kg: 29 mg/kg\n"
            "Weight band: 40-54 kg | Pyrazinamide daily dose (adults): 1000 mg | Approximate mg/kg: 21 mg/kg")  # fmt: skip
    both = [said("intl", intl), said("natl", natl)]
    assert stated_weight("PZA dose for a 48 kg adult?") == 48 and stated_weight("PZA dose in adults 40-54 kg?") is None
    [d] = disagreements(both, "dose", KEYS, CFG)
    assert d.values == {"intl": ["800 mg (30-39 kg)", "1200 mg (40-54 kg)"], "natl": ["1000 mg (30-39 kg)", "1000 mg (40-54 kg)"]}
    [d] = disagreements(both, "dose", KEYS, CFG, weight=48)
    assert d.values == {"intl": ["1200 mg (40-54 kg)"], "natl": ["1000 mg (40-54 kg)"]}
    assert disagreements(both, "dose", KEYS, CFG, weight=35) != [] and disagreements(both[:1], "dose", KEYS, CFG, 48) == []
