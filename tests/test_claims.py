"""Issue 26, class 2: quantified and negated claims are checked against the facts computed from the bundle.

The review's model sentences ("none of the similar patients died", "every similar patient
recovered", "most such patients died within weeks") were kept when 2 of 5 similar cases died.
Here claims are generated from the facts: a bundle of outcomes whose events the test knows
(its own labels, not the checker's reading), then sentences built from a grammar of quantifiers,
subjects and predicates, true and false. A false claim must be found, a true one never. On main
before this change there was no claim checker, so every false one was kept.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.answer.claims import CaseOutcomes, contradiction
from core.answer.guard import enforce
from core.contracts import BundleResult, ContextBundle, CurrentScan, PatientContextOut, SimilarCaseBrief

# Outcomes (demo wording, our own) and the events each records, labelled by hand for the oracle.
POOL: list[tuple[str | None, frozenset[str]]] = [
    ("Died of respiratory failure", frozenset({"death"})),
    ("Died at 3 weeks", frozenset({"death"})),
    ("Full recovery", frozenset({"recovery"})),
    ("Recovered after admission to hospital", frozenset({"recovery", "admission"})),
    ("Stable lung function at 12 months", frozenset({"stable course"})),
    ("Admitted to intensive care, then recovered", frozenset({"admission", "intensive care", "recovery"})),
    ("No recurrence at 2 years", frozenset()),
    ("Relapse at 6 months", frozenset({"relapse"})),
    (None, frozenset()),
]
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]

# event -> (verb after a plural subject, after a singular one, whether it says the event did not happen)
PREDICATES: dict[str, list[tuple[str, str, bool]]] = {
    "death": [("died", "died", False), ("did not die", "did not die", True), ("survived", "survived", True),
              ("never died", "never died", True)],
    "recovery": [("recovered", "recovered", False), ("made a full recovery", "made a full recovery", False),
                 ("did not recover", "did not recover", True)],
    "admission": [("were admitted", "was admitted", False), ("were not admitted", "was not admitted", True)],
}  # fmt: skip
PLURAL = ["similar patients", "such patients", "similar cases", "matched cases", "patients in the similar cases"]
SINGULAR = ["similar patient", "such patient", "similar case", "matched case"]

Truth = Callable[[int, int], bool]


def _quantified(n: int, k_said: int) -> list[tuple[str, bool, Truth]]:
    """(template with {p} plural / {s} singular subject, singular verb?, truth over (k, n))."""
    w = WORDS[k_said] if k_said < len(WORDS) else str(k_said)
    pct = round(100 * k_said / n)
    return [
        ("None of the {p}", False, lambda k, _n: k == 0),
        ("No {s}", True, lambda k, _n: k == 0),
        ("Not a single {s}", True, lambda k, _n: k == 0),
        ("All {p}", False, lambda k, n: k == n),
        ("All of the {p}", False, lambda k, n: k == n),
        ("Every {s}", True, lambda k, n: k == n),
        ("Each {s}", True, lambda k, n: k == n),
        ("Not all {p}", False, lambda k, n: k < n),
        ("Most {p}", False, lambda k, n: 2 * k > n),
        ("The majority of {p}", False, lambda k, n: 2 * k > n),
        ("More than half of the {p}", False, lambda k, n: 2 * k > n),
        ("A minority of {p}", False, lambda k, n: 2 * k < n),
        ("Fewer than half of the {p}", False, lambda k, n: 2 * k < n),
        ("Some {p}", False, lambda k, _n: k >= 1),
        ("At least one of the {p}", True, lambda k, _n: k >= 1),
        (f"{k_said} of the {n} {{p}}", False, lambda k, _n: k == k_said),
        (f"{w.capitalize()} of the {WORDS[n] if n < len(WORDS) else n} {{p}}", False, lambda k, _n: k == k_said),
        (f"{k_said} out of {n} {{p}}", False, lambda k, _n: k == k_said),
        (f"{pct}% of the {{p}}", False, lambda k, n: abs(100 * k / n - pct) <= 1),
        (f"Exactly {k_said} of the {{p}}", False, lambda k, _n: k == k_said),
        (f"At least {k_said} of the {{p}}", False, lambda k, _n: k >= k_said),
        (f"Fewer than {k_said} of the {{p}}", False, lambda k, _n: k < k_said),
    ]


def _result(outcomes: list[int]) -> BundleResult:
    ids = [f"HC-{i + 11:05d}" for i in range(len(outcomes))]
    bundle = ContextBundle(
        currentScan=CurrentScan(anatomy="lung", region="bilateral_lungs", diagnosis="COPD with emphysema", confidence=0.9),
        patientContext=PatientContextOut(age=66, sex="M", pastConditions=["COPD"]),
        similarCases=[
            SimilarCaseBrief(diagnosis="COPD with emphysema", outcome=POOL[o][0], similarity=0.9 - i / 100)
            for i, o in enumerate(outcomes)
        ],
        priorReports=[],
    )
    return BundleResult(bundle=bundle, case_ids=ids, severities=["high"] * len(outcomes))


@st.composite
def claims(draw: st.DrawFn) -> tuple[list[int], str, bool]:
    """A bundle (outcome indexes), a generated claim sentence about it, and whether the claim is true."""
    outcomes = draw(st.lists(st.integers(0, len(POOL) - 1), min_size=1, max_size=8))
    n = len(outcomes)
    event = draw(st.sampled_from(sorted(PREDICATES)))
    plural_verb, singular_verb, negated = draw(st.sampled_from(PREDICATES[event]))
    template, singular, truth = draw(st.sampled_from(_quantified(n, draw(st.integers(0, n)))))
    subject = template.format(p=draw(st.sampled_from(PLURAL)), s=draw(st.sampled_from(SINGULAR)))
    verb = singular_verb if singular else plural_verb
    k = sum((event in POOL[o][1]) != negated for o in outcomes)
    tail = draw(st.sampled_from(["", " within weeks", " in the end", " according to the records"]))
    return outcomes, f"{subject} {verb}{tail}.", truth(k, n)


@settings(max_examples=600, deadline=None)
@given(claims())
def test_generated_claims_are_judged_by_the_facts(case: tuple[list[int], str, bool]) -> None:
    outcomes, sentence, true = case
    why = contradiction(sentence.casefold(), CaseOutcomes.of(_result(outcomes)))
    assert (why is None) == true, (sentence, [POOL[o][0] for o in outcomes], why)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, len(POOL) - 1), min_size=2, max_size=6), st.data())
def test_claims_about_cited_cases_are_judged_by_their_own_outcomes(outcomes: list[int], data: st.DataObject) -> None:
    """ "HC-00012 died", "HC-00013 did not recover", "only HC-00012 and HC-00014 died"."""
    result = _result(outcomes)
    event = data.draw(st.sampled_from(sorted(PREDICATES)))
    _plural, verb, negated = data.draw(st.sampled_from(PREDICATES[event]))
    picked = data.draw(st.lists(st.integers(0, len(outcomes) - 1), min_size=1, max_size=2, unique=True))
    holds = [(event in POOL[o][1]) != negated for o in outcomes]
    only = data.draw(st.booleans())
    ids = " and ".join(result.case_ids[i] for i in picked)
    verb = verb.replace("was ", "were ") if len(picked) > 1 else verb
    sentence = f"{'Only ' if only else ''}{ids} {verb}."
    true = all(holds[i] for i in picked) and (not only or sum(holds) == len(picked))
    why = contradiction(sentence.casefold(), CaseOutcomes.of(result))
    assert (why is None) == true, (sentence, [POOL[o][0] for o in outcomes], why)


# -- through the guard: the review's three sentences, with 2 of 5 similar cases dead ----------------------------
@pytest.fixture()
def two_of_five_died() -> BundleResult:
    return _result([0, 4, 2, 1, 3])


@pytest.mark.parametrize(
    "text",
    [
        "None of the similar patients died.",
        "Every similar patient recovered.",
        "Most such patients died within weeks.",
        "No patient died.",
        "All similar patients recovered.",
        "3 of the 5 similar patients died.",
        "HC-00012 made a full recovery.",
        "Only HC-00011 died.",
    ],
)
def test_the_guard_removes_a_contradicted_sentence(two_of_five_died: BundleResult, text: str) -> None:
    report = enforce(text, two_of_five_died)
    assert report.kept == [] and "contradicts the computed facts" in report.removed[0][1], report.removed


@pytest.mark.parametrize(
    "text",
    [
        "2 of the 5 similar patients died.",
        "Two of five similar cases died.",
        "Some similar patients died.",
        "A minority of similar patients died.",
        "Not all similar patients recovered.",
        "HC-00011 died of respiratory failure; HC-00013 made a full recovery.",
        "Only HC-00011 and HC-00014 died.",
        "40% of similar patients died.",
    ],
)
def test_the_guard_keeps_a_claim_the_facts_support(two_of_five_died: BundleResult, text: str) -> None:
    report = enforce(text, two_of_five_died)
    assert report.removed == [] and report.kept, report.removed
