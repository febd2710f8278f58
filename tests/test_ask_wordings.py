"""Issue 23's treatment and absent-term classes in wordings the earlier tables lack (held out, never trained on).

The tables in :mod:`tests.test_ask_classes` cover options named with no verb, tests and
follow-up, go-aheads and lone findings. These tables add further classes of phrasing,
written by the team before the reader was changed for them and never used as training
examples (``tests/test_ask_classes.py::test_the_teams_examples_are_its_own`` checks it):

* what to do for this patient asked in the second person ("would you put him on ..."),
  as an order ("suggest a plan"), hedged ("I wonder whether ..."), misspelt, naming a drug
  class rather than a drug ("a statin for her?"), "should we ...", "is X indicated",
  "what's the plan", and referrals or next steps: all get the pointer;
* a finding or detail the evidence never records, asked negated ("no PE in any of them?"),
  misspelt, abbreviated, in the plural or inside a longer sentence: all are stated as
  "X is not recorded in the evidence", never answered with the outcome list or the pointer.

Each runs through the real service on the seeded demo data (real SQLite, FAISS, the shipped
intent model over the project's e5 embedder). Demo data, not for clinical use.
"""

from __future__ import annotations

import json
import re

import pytest

from core.answer.compose import is_pointer
from core.askeval.outside_set import is_pointer_in
from core.runtime import Runtime
from tests.test_ask_classes import NOT_COVERED, _ask

# (patient whose newest scan is asked about, question): Guideline QA does not cover these conditions.
TREATMENT_WORDINGS = [
    # second person
    ("rahul.mehta", "would you put him on a LAMA"),
    ("maria.gonzalez", "do you think she needs a carotid endarterectomy"),
    ("james.oconnor", "what would you do for his back"),
    ("li.wei", "would you laser him or wait"),
    # imperative
    ("samuel.okafor", "suggest a treatment plan for him"),
    ("ananya.iyer", "tell me what chemo to give her"),
    ("hannah.schmidt", "recommend a DMT for her"),
    ("olivia.brown", "outline the next steps for her melanoma"),
    ("fatima.zahra", "give me the management options"),
    # hedged
    ("rahul.mehta", "I wonder whether he might benefit from pulmonary rehab"),
    ("james.oconnor", "maybe worth trying a nerve root injection?"),
    ("maria.gonzalez", "perhaps she ought to be anticoagulated?"),
    ("li.wei", "might an injection into the eye help him"),
    # misspelt
    ("rahul.mehta", "shud we incrase his inhalers"),
    ("ananya.iyer", "shoud she have a mastectomey"),
    ("george.miller", "wat tretment for his liver"),
    ("samuel.okafor", "hormon therapy for him??"),
    # a drug class instead of a drug
    ("maria.gonzalez", "a statin for her?"),
    ("james.oconnor", "NSAIDs or opioids"),
    ("li.wei", "SGLT2 inhibitor for him?"),
    ("maria.gonzalez", "DOAC or warfarin"),
    ("hannah.schmidt", "a course of IV steroids?"),
    ("rahul.mehta", "beta blocker safe for him"),
    # "should we ..."
    ("hannah.schmidt", "should we repeat her lumbar puncture"),
    ("george.miller", "should we discuss him at the MDT"),
    ("olivia.brown", "should we do a wider excision"),
    # "is X indicated"
    ("maria.gonzalez", "is thrombectomy indicated"),
    ("samuel.okafor", "is a PSMA PET indicated"),
    ("imran.khan", "is a chest drain indicated"),
    ("fatima.zahra", "are antibiotics alone indicated here"),
    # "what's the plan"
    ("imran.khan", "what's the plan"),
    ("george.miller", "plan for him?"),
    ("olivia.brown", "whats the plan going forward"),
    ("james.oconnor", "what's the management"),
    # referral and next step
    ("li.wei", "refer to the eye clinic?"),
    ("james.oconnor", "does he need a spinal surgeon"),
    ("ananya.iyer", "who should she be referred to"),
    ("hannah.schmidt", "what next for her"),
    ("samuel.okafor", "where do we go from here"),
]
# The scan's AI reading is community-acquired pneumonia, which Guideline QA covers: the question is carried there.
TREATMENT_WORDINGS_IN_SCOPE = [
    ("priya.nair", "would you add a macrolide"),
    ("priya.nair", "is IV antibiotics indicated"),
    ("priya.nair", "whats the plan for her"),
    ("priya.nair", "shud she get steroids"),
]
# (patient, question, a stem the "not recorded" sentence must name): no evidence field records these.
ABSENT_WORDINGS = [
    # negated
    ("rahul.mehta", "no pulmonary embolism in any of them?", "embol"),
    ("maria.gonzalez", "none of the matches had an aneurysm?", "aneurysm"),
    ("james.oconnor", "no vertebral fracture in any?", "fractur"),
    ("ananya.iyer", "none with Paget disease of the nipple?", "paget"),
    # misspelt
    ("rahul.mehta", "any mesothelioama", "mesothel"),
    ("hannah.schmidt", "any glioama in them", "glio"),
    ("fatima.zahra", "intusussception in any?", "intus"),
    ("george.miller", "cholangiocarcinmoa in any", "cholangio"),
    # abbreviated
    ("maria.gonzalez", "any AVM", "avm"),
    ("rahul.mehta", "ILD in the similar cases?", "ild|interstitial|fibrosis"),
    ("hannah.schmidt", "any ADEM?", "adem"),
    ("samuel.okafor", "any PNI recorded", "pni"),
    ("li.wei", "any CRVO", "crvo"),
    # plural
    ("rahul.mehta", "any granulomas among them", "granulom"),
    ("imran.khan", "rib fractures in any of the cases?", "fractur"),
    ("olivia.brown", "any ulcerations recorded", "ulcer"),
    ("li.wei", "cataracts in the similar patients?", "cataract"),
    # inside a longer sentence
    ("maria.gonzalez", "the registrar wondered about vasculitis, does that come up in any of the similar cases", "vasculitis"),
    ("james.oconnor", "just checking whether any of the matched cases mention ankylosing spondylitis at all", "spondylitis"),
    ("fatima.zahra", "before I call the surgeons, was a mucocele ever described in the look-alikes", "mucocele"),
    ("imran.khan", "out of interest did any of those patients turn out to have Marfan syndrome", "marfan"),
    # a measurement of this patient no evidence records
    ("li.wei", "what's his eGFR", "egfr"),
    ("maria.gonzalez", "her INR?", "inr"),
]


@pytest.mark.parametrize(("user", "question"), TREATMENT_WORDINGS)
def test_treatment_in_other_wordings_gets_the_pointer(demo: Runtime, user: str, question: str) -> None:
    shown, cited, carried = _ask(demo, user, question)
    assert is_pointer(shown) and NOT_COVERED in shown and carried is None and not cited, shown


@pytest.mark.parametrize(("user", "question"), TREATMENT_WORDINGS_IN_SCOPE)
def test_a_covered_treatment_question_in_other_wordings_is_carried(demo: Runtime, user: str, question: str) -> None:
    shown, _, carried = _ask(demo, user, question)
    assert is_pointer(shown) and carried == question, shown


def _states_not_recorded(shown: str, stem: str) -> bool:
    """A sentence says "not recorded" and names the term (``stem``: a regular expression, "ild|interstitial")."""
    return any("not recorded" in s.lower() and re.search(stem, s.lower()) for s in re.split(r"(?<=[.!?])\s+", shown))


@pytest.mark.parametrize(("user", "question", "stem"), ABSENT_WORDINGS)
def test_an_absent_term_in_other_wordings_is_stated_as_not_recorded(demo: Runtime, user: str, question: str, stem: str) -> None:
    shown, _, _ = _ask(demo, user, question)
    assert not is_pointer(shown) and _states_not_recorded(shown, stem), shown

# A treatment or absent-term part beside parts the evidence answers: in a list, after a pasted report, in a
# formal request. (patient, question, what the answer must hold: "pointer", "carried" or a stem that must be
# stated as not recorded). Every question also asks something the evidence answers, so the answer cites cases.
COMPOUND = [
    ("rahul.mehta", "how many were admitted, and would you step up his inhalers?", ("pointer",)),
    ("james.oconnor", "outcomes of the matches + is a microdiscectomy indicated for him", ("pointer",)),
    ("george.miller", "age range of similar pts; TACE or resection for him?", ("pointer",)),
    ("maria.gonzalez", "1) how many died 2) DOAC now or in 2 weeks?", ("pointer",)),
    ("samuel.okafor", "Hx: 64M, PSA 9, MRI PI-RADS 4. -> how did similar men do, and what's the plan for him?",
     ("pointer",)),
    ("li.wei", "Clinical details: T2DM, blurred vision. Q: severity of similar cases and should we refer him to retina",
     ("pointer",)),
    ("ananya.iyer", "Dear colleague, could you summarise the outcomes of comparable cases and advise whether she "
     "would benefit from neoadjuvant treatment", ("pointer",)),
    ("olivia.brown", "worst severity? also does she need a sentinel node biopsy", ("pointer",)),
    ("priya.nair", "how many similar pts were admitted and which antibiotic would you use", ("carried",)),
    ("priya.nair", "CXR: RLL consolidation. outcomes of similar? oral or IV abx for her?", ("carried",)),
    ("rahul.mehta", "how many had exacerbations, and any pulmonary hypertension recorded?", ("pulmonary hypertension",)),
    ("hannah.schmidt", "age and sex of the similar pts, plus any neurosarcoid", ("sarcoid",)),
    ("maria.gonzalez", "CT: hypodensity R parietal. -> outcomes in similar cases, and was moyamoya seen in any?",
     ("moyamoya",)),
    ("fatima.zahra", "how many perforated, any Meckels diverticulum", ("meckel",)),
    ("george.miller", "ddx of the look-alikes; were any of them hepatoblastomas", ("hepatoblastoma",)),
    ("imran.khan", "Could you tell me how the similar patients fared and whether any had Ehlers-Danlos",
     ("ehlers",)),
    ("li.wei", "sevrity of simlar cases, any neovascular glaucoma?", ("glaucoma",)),
    ("samuel.okafor", "how many had biochemical recurrence and any with neuroendocrine differentiation",
     ("neuroendocrine",)),
]


@pytest.mark.parametrize(("user", "question", "expect"), COMPOUND)
def test_a_handled_part_beside_answered_parts(demo: Runtime, user: str, question: str, expect: tuple[str, ...]) -> None:
    shown, cited, carried = _ask(demo, user, question)
    assert cited, shown  # the parts the evidence answers are answered
    if expect[0] == "pointer":
        assert is_pointer_in(shown) and NOT_COVERED in shown and carried is None, shown
    elif expect[0] == "carried":
        assert is_pointer_in(shown) and carried == question, shown
    else:
        assert _states_not_recorded(shown, expect[0]), shown

# A lone drug or procedure term ("cipro?") may also be a lone finding: it is looked up and pointed as well
# (tests/test_ask_lone_terms.py), so the pointer is among its sentences rather than first.
TERSE_LONE_TREATMENT = [
    ("rahul.mehta", "cipro?"),
    ("james.oconnor", "pred?"),
    ("fatima.zahra", "lap appy?"),
    ("li.wei", "intravitreal?"),
    ("george.miller", "transplant workup?"),
    ("ananya.iyer", "neoadjuvant?"),
    ("hannah.schmidt", "ocrevus"),
    ("imran.khan", "pleurodese?"),
    ("samuel.okafor", "ADT duration"),
    ("hannah.schmidt", "plasma exchange?"),
    ("olivia.brown", "adjuvant immunotherapy?"),
]
TERSE_TREATMENT = [
    ("fatima.zahra", "conservative mx?"),
    ("li.wei", "what do you advise"),
    ("ananya.iyer", "options?"),
    ("rahul.mehta", "anything else we can offer him"),
    ("olivia.brown", "any benefit from a PET-CT for staging"),
    ("james.oconnor", "is surgery an option"),
    ("olivia.brown", "any role for radiotherapy"),
    ("maria.gonzalez", "tPA?"),
    ("george.miller", "TACE?"),
    ("samuel.okafor", "RT or surgery"),
    ("imran.khan", "needle or drain"),
    ("james.oconnor", "physio first?"),
    ("maria.gonzalez", "thrombolyse?"),
    ("george.miller", "sorafenib"),
    ("li.wei", "vitrectomy needed?"),
    ("fatima.zahra", "antibiotics first then surgery?"),
]


@pytest.mark.parametrize(("user", "question"), TERSE_TREATMENT)
def test_a_terse_treatment_gets_the_pointer(demo: Runtime, user: str, question: str) -> None:
    shown, cited, carried = _ask(demo, user, question)
    assert is_pointer(shown) and NOT_COVERED in shown and carried is None and not cited, shown


@pytest.mark.parametrize(("user", "question"), TERSE_LONE_TREATMENT)
def test_a_lone_treatment_term_gets_the_pointer_beside_its_lookup(demo: Runtime, user: str, question: str) -> None:
    shown, _, carried = _ask(demo, user, question)
    assert is_pointer_in(shown) and NOT_COVERED in shown and carried is None, shown
    assert "not recorded in the evidence" in shown or re.search(r"\d+ of \d+ similar cases record", shown), shown

# Terse: a finding typed alone (the same shape as a lone drug name): looked up, never sent to the pointer.
TERSE_ABSENT = [
    ("rahul.mehta", "bronchiolitis obliterans?", "bronchiolitis"),
    ("james.oconnor", "osteophytes?", "osteophyt"),
    ("james.oconnor", "syrinx", "syrinx"),
    ("li.wei", "drusen?", "drusen"),
    ("ananya.iyer", "microcalcifications", "microcalcif"),
    ("george.miller", "varices?", "varic"),
    ("hannah.schmidt", "black holes?", "black hole"),
    ("maria.gonzalez", "microbleeds", "microbleed"),
    ("imran.khan", "blebs?", "bleb"),
    ("olivia.brown", "satellitosis", "satellit"),
    ("samuel.okafor", "ECE?", "ece"),
    ("fatima.zahra", "appendicolith?", "appendicolith"),
    ("priya.nair", "parapneumonic effusion?", "effusion"),
    ("rahul.mehta", "cor pulmonale", "cor pulmonale"),
]


@pytest.mark.parametrize(("user", "question", "stem"), TERSE_ABSENT)
def test_a_terse_finding_is_looked_up(demo: Runtime, user: str, question: str, stem: str) -> None:
    shown, _, _ = _ask(demo, user, question)
    assert not is_pointer(shown) and _states_not_recorded(shown, stem), shown

# Worry about a condition the evidence lacks is not a request for what to do ("should we" alone is no request):
# looked up, and stated as not recorded.
WORRY_ABSENT = [
    ("maria.gonzalez", "should we be worried about a bleed", "haemorrhage|bleed"),
    ("hannah.schmidt", "Should we be worried about lymphoma?", "lymphoma"),
    ("rahul.mehta", "should we be concerned about a mesothelioma", "mesothel"),
    ("ananya.iyer", "do we need to be worried about sarcoma", "sarcoma"),
    ("li.wei", "should I be worried about glaucoma", "glaucom"),
    ("james.oconnor", "should we be worried re osteomyelitis", "osteomyel"),
    ("george.miller", "should the team be concerned about cholangiocarcinoma", "cholangio"),
]


@pytest.mark.parametrize(("user", "question", "stem"), WORRY_ABSENT)
def test_worry_about_an_absent_condition_is_looked_up(demo: Runtime, user: str, question: str, stem: str) -> None:
    shown, _, _ = _ask(demo, user, question)
    assert not is_pointer(shown) and _states_not_recorded(shown, stem), shown


def test_these_tables_are_held_out() -> None:
    """No team training example is one of these questions (they measure classes, they never teach them)."""
    from core.askeval.train import TEAM_EXAMPLES
    from tests.test_ask_classes import _key

    team = {_key(t) for texts in json.loads(TEAM_EXAMPLES.read_text())["examples"].values() for t in texts}
    tables = [*TREATMENT_WORDINGS, *TREATMENT_WORDINGS_IN_SCOPE, *TERSE_TREATMENT, *TERSE_LONE_TREATMENT, *ABSENT_WORDINGS, *COMPOUND, *TERSE_ABSENT,
              *WORRY_ABSENT, *FRESH_TREATMENT, *FRESH_TREATMENT_IN_SCOPE, *FRESH_ABSENT, *FRESH_COMPOUND, *FRESH2_TREATMENT,
              *FRESH2_TREATMENT_IN_SCOPE, *FRESH2_ABSENT, *FRESH2_COMPOUND]  # fmt: skip
    rows = [getattr(r, "values", r) for r in tables]
    held_out = {_key(str(row[1])) for row in rows}
    assert len(held_out) == len(rows)  # no question twice
    assert not team & held_out, sorted(team & held_out)


@pytest.mark.parametrize(
    ("question", "parts"),
    [
        ("outcomes of the matches and advise whether she needs more", ("outcomes of the matches", "advise whether she needs more")),
        ("Hx: 70M, PSA 12. -> outcomes of similar?", ("outcomes of similar",)),
        ("how many recurred and the plan?", ("how many recurred", "the plan")),
        ("ddx and mx", ("ddx", "mx")),
        ("how many had surgery and chemo", ("how many had surgery and chemo",)),  # one count over two procedures
    ],
)
def test_a_request_or_the_plan_after_and_is_its_own_part(question: str, parts: tuple[str, ...]) -> None:
    from core.answer.split import split_question

    assert split_question(question).parts == parts


def test_two_english_words_run_together_are_not_a_typo() -> None:
    from core.answer.terms import correct_english

    assert correct_english("microbleeds") == "microbleeds" and correct_english("amyliod") == "amyloid"
    assert correct_english("perforaton") == "perforation"


# Written after the fifth step and measured once before any change for them: do the classes generalise? Main
# before this work (d2e673b) 39 of 47, the fifth step 43 of 47. Three misses were then fixed by class ("in his
# case" is this patient; "is he a X candidate" is a request); the fourth is a strict xfail, left as found.
FRESH_MISS = pytest.mark.xfail(strict=True, reason="'needs urgent decompression or can we wait': read as severity")
FRESH_TREATMENT = [
    ("rahul.mehta", "is there any role for a bullectomy in his case"),
    ("rahul.mehta", "we are thinking of roflumilast, reasonable?"),
    ("maria.gonzalez", "kindly advise on secondary prevention for her"),
    ("maria.gonzalez", "clopi monotherapy vs DAPT?"),
    ("hannah.schmidt", "high efficacy DMT upfront or escalate?"),
    ("hannah.schmidt", "does she qualify for natalizumab"),
    ("james.oconnor", "how would you manage his sciatica"),
    ("james.oconnor", "surgical decompression - yes/no?"),
    ("li.wei", "focal laser vs injections, your view"),
    ("li.wei", "he asks if he needs an operation on his eye"),
    ("ananya.iyer", "breast conserving surgery feasible?"),
    ("ananya.iyer", "would endocrine therapy be right for her"),
    ("george.miller", "is he a transplant candidate"),
    ("george.miller", "can we offer him immunotherapy"),
    ("olivia.brown", "what margin should the re-excision have"),
    ("olivia.brown", "does she need adjuvant treatment after excision"),
    ("samuel.okafor", "active surveillance appropriate for this man?"),
    ("samuel.okafor", "we need a treatment recommendation"),
    pytest.param("imran.khan", "needs urgent decompression or can we wait", marks=FRESH_MISS),
    ("imran.khan", "what should the ED team do now"),
    ("fatima.zahra", "should she go to theatre tonight"),
    ("fatima.zahra", "IV antibiotics and observe, or operate?"),
    ("rahul.mehta", "pls suggest inhaler regime"),
    ("george.miller", "whats the best approach for this lesion"),
    ("james.oconnor", "physiotherapy or injection first for him?"),
]
FRESH_TREATMENT_IN_SCOPE = [
    ("priya.nair", "kindly advise on antibiotic choice for her"),
    ("priya.nair", "is oral therapy enough or does she need IV"),
    ("priya.nair", "what's the plan for her pneumonia"),
]
FRESH_ABSENT = [
    ("rahul.mehta", "was pulmonary fibrosis seen in the similar patients", "fibrosis"),
    ("rahul.mehta", "any of the comparable cases with a lung nodule", "nodule"),
    ("maria.gonzalez", "subdural collections in the look alikes?", "subdural"),
    ("hannah.schmidt", "did the similar pts have spinal involvement recorded", "spinal"),
    ("james.oconnor", "infection in any of those backs?", "infect"),
    ("li.wei", "retinal vein occlusions recorded?", "occlusion"),
    ("ananya.iyer", "lobular ca among the matches", "lobular"),
    ("george.miller", "hepatic encephalopathy in any of his look-alikes", "encephalopathy"),
    ("olivia.brown", "in-transit disease any?", "in-transit|transit"),
    ("samuel.okafor", "nodal disease in any of them?", "nodal"),
    ("imran.khan", "haemopneumothorax in any of the cases", "haemopneumothorax"),
    ("fatima.zahra", "did any similar cases mention pregnancy", "pregnan"),
    ("fatima.zahra", "ovarian torsion among the similar?", "torsion"),
    ("rahul.mehta", "I'd like to know if alpha-1 antitrypsin deficiency was recorded", "antitrypsin|alpha"),
    ("maria.gonzalez", "cerebral venous thrombosis in any?", "venous thrombosis"),
]
FRESH_COMPOUND = [
    ("li.wei", "how many lost vision, and would you laser him", "pointer"),
    ("george.miller", "Clinical: cirrhotic, AFP 400. -> outcomes of similar, and is he a resection candidate", "pointer"),
    ("hannah.schmidt", "relapses in the matches? plus kindly advise on DMT choice", "pointer"),
    ("olivia.brown", "ages of the similar patients, and any in-transit mets recorded", "in-transit|transit"),
]


@pytest.mark.parametrize(("user", "question"), FRESH_TREATMENT)
def test_fresh_treatment_wordings(demo: Runtime, user: str, question: str) -> None:
    test_treatment_in_other_wordings_gets_the_pointer(demo, user, question)


@pytest.mark.parametrize(("user", "question"), FRESH_TREATMENT_IN_SCOPE)
def test_fresh_covered_treatment_wordings(demo: Runtime, user: str, question: str) -> None:
    test_a_covered_treatment_question_in_other_wordings_is_carried(demo, user, question)


@pytest.mark.parametrize(("user", "question", "stem"), FRESH_ABSENT)
def test_fresh_absent_wordings(demo: Runtime, user: str, question: str, stem: str) -> None:
    test_an_absent_term_in_other_wordings_is_stated_as_not_recorded(demo, user, question, stem)


@pytest.mark.parametrize(("user", "question", "expect"), FRESH_COMPOUND)
def test_fresh_compound_wordings(demo: Runtime, user: str, question: str, expect: str) -> None:
    test_a_handled_part_beside_answered_parts(demo, user, question, (expect,))

# A second fresh set, written after the sixth step and measured once (main before this work 18 of 22, the sixth
# step 19 of 22). "cavernomas" was then kept from becoming "cavernous" (a disease-shaped word keeps its shape);
# the two treatment misses are strict xfails, left as found.
FRESH2_MISS = pytest.mark.xfail(strict=True, reason="'would X help' / 'could he have X' with no treatment word: read as a summary")
FRESH2_TREATMENT = [
    ("hannah.schmidt", "is she eligible for ocrelizumab"),
    ("james.oconnor", "in his case would a fusion help"),  # passes since the second outside set's train split was learned
    ("li.wei", "should the eye team see him this week"),
    ("ananya.iyer", "what adjuvant plan do you propose"),
    pytest.param("george.miller", "could he have a liver transplant", marks=FRESH2_MISS),
    ("olivia.brown", "tell us the next management step"),
    ("samuel.okafor", "radical prostatectomy suitable for him?"),
    ("rahul.mehta", "do you reckon he needs home oxygen"),
    ("maria.gonzalez", "can she go back on her warfarin"),
    ("imran.khan", "aspiration versus chest drain for this lad"),
    ("fatima.zahra", "what would the surgeons normally do here"),
    ("james.oconnor", "is an epidural the right call for him"),
]
FRESH2_TREATMENT_IN_SCOPE = [("priya.nair", "what antibiotic course do you propose for her")]
FRESH2_ABSENT = [
    ("rahul.mehta", "any alveolar haemorrhage in the similar ones", "alveolar|haemorrhag|hemorrhag"),
    ("hannah.schmidt", "transverse myelitis in the look-alikes?", "myelitis"),
    ("li.wei", "were vitreous bleeds documented in any", "vitreous"),
    ("ananya.iyer", "any Phyllodes tumours among them", "phyllodes"),
    ("george.miller", "was Budd-Chiari found in any of them", "budd"),
    ("imran.khan", "did any of them have a tension haemothorax", "haemothorax|hemothorax"),
    ("fatima.zahra", "appendiceal neoplasm in the matched cases?", "neoplasm|appendiceal"),
]
FRESH2_COMPOUND = [
    ("samuel.okafor", "how many had biochemical recurrence; is he a brachytherapy candidate", "pointer"),
    ("maria.gonzalez", "worst severity and any cavernomas recorded", "cavernom"),
]


@pytest.mark.parametrize(("user", "question"), FRESH2_TREATMENT)
def test_fresh2_treatment_wordings(demo: Runtime, user: str, question: str) -> None:
    test_treatment_in_other_wordings_gets_the_pointer(demo, user, question)


@pytest.mark.parametrize(("user", "question"), FRESH2_TREATMENT_IN_SCOPE)
def test_fresh2_covered_treatment_wordings(demo: Runtime, user: str, question: str) -> None:
    test_a_covered_treatment_question_in_other_wordings_is_carried(demo, user, question)


@pytest.mark.parametrize(("user", "question", "stem"), FRESH2_ABSENT)
def test_fresh2_absent_wordings(demo: Runtime, user: str, question: str, stem: str) -> None:
    test_an_absent_term_in_other_wordings_is_stated_as_not_recorded(demo, user, question, stem)


@pytest.mark.parametrize(("user", "question", "expect"), FRESH2_COMPOUND)
def test_fresh2_compound_wordings(demo: Runtime, user: str, question: str, expect: str) -> None:
    test_a_handled_part_beside_answered_parts(demo, user, question, (expect,))
