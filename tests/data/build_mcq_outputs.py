"""Builds tests/data/mcq_outputs.json: model outputs to multiple-choice questions and the letter each states.

Demo data, not for clinical use. Every question, option and output here was written by us; the outputs are
shaped like what chat models write for MedQA / MMLU / PubMedQA prompts (JSON answers, chain of thought with a
final statement, a leading letter, option text only, hedges, no answer at all), not copied from any model or
benchmark. ``expected`` is what a careful human reader takes the output to state (``null``: no single option).

The table was written once and frozen: run ``python tests/data/build_mcq_outputs.py`` only to regenerate it
deliberately (the seeded 30% test split is drawn here, before the extractor was tuned on the other 70%).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

Options = dict[str, str]
Row = tuple[str, str | None]

QUESTIONS: list[tuple[str, Options]] = [
    ("uti", {"A": "Ampicillin", "B": "Ceftriaxone", "C": "Doxycycline", "D": "Nitrofurantoin"}),
    ("ectopic", {"A": "Ovary", "B": "Fallopian tube", "C": "Cervix", "D": "Abdominal cavity"}),
    ("tst", {"A": ">5 mm", "B": ">10 mm", "C": ">15 mm", "D": ">20 mm"}),
    ("potassium", {"A": "3.5 mmol/L", "B": "5.5 mmol/L", "C": "6.5 mmol/L", "D": "7.5 mmol/L"}),
    ("dup", {"A": "Metformin", "B": "Insulin glargine", "C": "Metformin", "D": "Sitagliptin"}),
    ("nested", {"A": "Aspirin", "B": "Aspirin and clopidogrel", "C": "Clopidogrel", "D": "Warfarin"}),
    (
        "thyroid",
        {
            "A": "Hashimoto thyroiditis",
            "B": "Graves disease",
            "C": "Toxic multinodular goitre",
            "D": "Subacute thyroiditis",
            "E": "Factitious thyrotoxicosis",
        },
    ),
    ("pubmedqa", {"A": "yes", "B": "no", "C": "maybe"}),
    ("coronary", {"A": "Left anterior descending artery", "B": "Right coronary artery", "C": "Left circumflex artery",
                  "D": "Posterior descending artery"}),
    ("vitamin", {"A": "Vitamin B12", "B": "Vitamin B1", "C": "Folate", "D": "Vitamin B6"}),
    ("dose", {"A": "0.1 mg", "B": "1 mg", "C": "10 mg", "D": "100 mg"}),
    ("nerve", {"A": "Median nerve", "B": "Ulnar nerve", "C": "Radial nerve", "D": "Axillary nerve",
               "E": "Musculocutaneous nerve"}),
]

THOUGHTS = [
    "The patient is stable and the findings point to one option.",
    "Weighing the history, the examination and the laboratory values together.",
    "The key clue is the timing of the symptoms.",
    "Each option is considered against the presentation in turn.",
    "First rule out the dangerous causes, then pick the most likely one.",
]


def _json(letter_value: str, rng: random.Random, key: str = "answer_choice") -> str:
    thought = rng.choice(THOUGHTS)
    return json.dumps({"step_by_step_thinking": thought, key: letter_value})


def t_json_letter(o: Options, k: str, r: random.Random) -> Row:
    return _json(k, r), k


def t_json_letter_dot(o: Options, k: str, r: random.Random) -> Row:
    return _json(f"{k}.", r), k


def t_json_letter_text(o: Options, k: str, r: random.Random) -> Row:
    return _json(f"{k}. {o[k]}", r), k


def t_json_paren_text(o: Options, k: str, r: random.Random) -> Row:
    return _json(f"({k}) {o[k]}", r), k


def t_json_letter_paren_text(o: Options, k: str, r: random.Random) -> Row:
    return _json(f"{k}) {o[k]}", r), k


def t_json_colon_text(o: Options, k: str, r: random.Random) -> Row:
    return _json(f"{k}: {o[k]}", r, key=r.choice(["answer", "answer_choice"])), k


def t_json_option_word(o: Options, k: str, r: random.Random) -> Row:
    return _json(f"Option {k}", r), k


def t_json_lower(o: Options, k: str, r: random.Random) -> Row:
    return _json(k.lower(), r, key="answer"), k


def t_json_text_only(o: Options, k: str, r: random.Random) -> Row:
    dup = list(o.values()).count(o[k]) > 1
    return _json(o[k], r), None if dup else k


def t_json_fenced(o: Options, k: str, r: random.Random) -> Row:
    body = json.dumps({"step_by_step_thinking": r.choice(THOUGHTS), "answer_choice": f"{k}. {o[k]}"}, indent=2)
    return f"```json\n{body}\n```", k


def t_json_single_quotes(o: Options, k: str, r: random.Random) -> Row:
    return f"{{'step_by_step_thinking': '{r.choice(THOUGHTS)}', 'answer_choice': '{k}'}}", k


def t_json_cut(o: Options, k: str, r: random.Random) -> Row:
    return f'{{"step_by_step_thinking": "{r.choice(THOUGHTS)}", "answer_choice": "{k}. {o[k]}"', k


def t_json_thinking_mentions_other(o: Options, k: str, r: random.Random) -> Row:
    other = _other(o, k, r)
    thinking = f"At first the answer would be {other}, but the imaging changes that."
    return json.dumps({"step_by_step_thinking": thinking, "answer_choice": f"{k}. {o[k]}"}), k


def t_json_then_text(o: Options, k: str, r: random.Random) -> Row:
    return f"Here is my reasoning as JSON:\n{_json(k, r)}\nI hope this helps.", k


def t_final_over_hypothetical(o: Options, k: str, r: random.Random) -> Row:
    other = _other(o, k, r)
    lead = r.choice(["If the patient were younger", "Had the test been negative", "In a pregnant patient"])
    final = r.choice([f"Final answer: {k}", f"Final answer: {k}. {o[k]}", f"So the final answer is ({k})."])
    return f"{lead}, the answer would be {other}. However, {r.choice(THOUGHTS).lower()} {final}", k


def t_answer_is_corrected(o: Options, k: str, r: random.Random) -> Row:
    other = _other(o, k, r)
    return f"The answer is {other}. On second thought, {r.choice(THOUGHTS).lower()} The answer is {k}.", k


def t_answer_colon(o: Options, k: str, r: random.Random) -> Row:
    return r.choice([f"Answer: {k}", f"answer: {k}", f"ANSWER: {k}", f"Answer - {k}", f"Answer: {k}."]), k


def t_answer_bold(o: Options, k: str, r: random.Random) -> Row:
    return r.choice([f"**Answer:** {k}", f"**Answer: ({k}) {o[k]}**", f"**Final answer: {k}**"]), k


def t_answer_is_paren(o: Options, k: str, r: random.Random) -> Row:
    return r.choice([f"The answer is ({k}).", f"The answer is {k}.", f"The correct answer is {k}. {o[k]}",
                     f"The answer is option {k}.", f"the answer is ({k.lower()})"]), k  # fmt: skip


def t_cot_then_answer(o: Options, k: str, r: random.Random) -> Row:
    letters = sorted(o)
    walk = " ".join(f"Option {x} ({o[x]}) {'fits best' if x == k else 'is less likely'}." for x in letters)
    return f"{r.choice(THOUGHTS)} {walk}\nTherefore, the answer is {k}.", k


def t_correct_option_is(o: Options, k: str, r: random.Random) -> Row:
    return r.choice([f"The correct option is {k}.", f"The best choice is ({k}).", f"The right option is {k}"]), k


def t_letter_is_correct(o: Options, k: str, r: random.Random) -> Row:
    return r.choice([f"{r.choice(THOUGHTS)} Therefore, {k} is the correct answer.",
                     f"So ({k}) is correct.", f"{k} is the best answer here."]), k  # fmt: skip


def t_choose(o: Options, k: str, r: random.Random) -> Row:
    return r.choice([f"I would choose {k}.", f"I'd go with ({k}) {o[k]}.", f"I select option {k}."]), k


def t_leading_line(o: Options, k: str, r: random.Random) -> Row:
    return f"{k}. {o[k]}\n{r.choice(THOUGHTS)}", k


def t_leading_paren(o: Options, k: str, r: random.Random) -> Row:
    return r.choice([f"({k}) {o[k]}, because {r.choice(THOUGHTS).lower()}", f"{k}) {o[k]}",
                     f"**{k}. {o[k]}**\n\n{r.choice(THOUGHTS)}", f"{k}: {o[k]}"]), k  # fmt: skip


def t_lone_letter(o: Options, k: str, r: random.Random) -> Row:
    return r.choice([k, f" ({k}) ", f"{k}.", f"**{k}**"]), k


def t_answer_then_text(o: Options, k: str, r: random.Random) -> Row:
    return f"Answer: {k} ({o[k]})", k


def t_text_sentence(o: Options, k: str, r: random.Random) -> Row:
    dup = list(o.values()).count(o[k]) > 1
    return r.choice([f"{o[k]} is the most likely answer.", f"The best option here is {o[k].lower()}."]), None if dup else k


def t_answer_is_text(o: Options, k: str, r: random.Random) -> Row:
    dup = list(o.values()).count(o[k]) > 1
    return f"The answer is {o[k]}.", None if dup else k


def t_no_answer(o: Options, k: str, r: random.Random) -> Row:
    return r.choice([
        "I cannot determine the answer from the information given.",
        "A 45-year-old man presents with fever; more history is needed before choosing.",
        "There is not enough information to answer this question.",
        "Please consult a clinician; I cannot choose one of these options.",
        "",
        "The question is unclear.",
        "A careful history and examination are needed first.",
    ]), None  # fmt: skip


def t_two_letters(o: Options, k: str, r: random.Random) -> Row:
    other = _other(o, k, r)
    first, second = sorted((k, other))
    return r.choice([f"The answer is {first} or {second}.", f"Either {first} or {second} could be right.",
                     f"Answer: {first}/{second}"]), None  # fmt: skip


def t_two_texts(o: Options, k: str, r: random.Random) -> Row:
    other = _other(o, k, r)
    if o[other] in o[k] or o[k] in o[other]:
        return f"Both {o[k].lower()} and {o[other].lower()} seem reasonable; I cannot pick one.", None
    return f"Either {o[k].lower()} or {o[other].lower()} would be acceptable.", None


def t_letter_not_offered(o: Options, k: str, r: random.Random) -> Row:
    missing = "F" if "E" in o else "E"
    return r.choice([f"Answer: {missing}", f'{{"answer_choice": "{missing}"}}', f"The answer is {missing}."]), None


def t_would_be_only(o: Options, k: str, r: random.Random) -> Row:
    return f"{r.choice(THOUGHTS)} The answer would be {k}.", k


def t_final_after_listing(o: Options, k: str, r: random.Random) -> Row:
    lines = "\n".join(f"{x}. {o[x]} - {'consistent' if x == k else 'not consistent'}" for x in sorted(o))
    return f"Let us go through the options.\n{lines}\n\nFinal Answer: **{k}**", k


def t_answer_letter_text_dup(o: Options, k: str, r: random.Random) -> Row:
    return f"Answer: {k}. {o[k]}", k


def t_self_rag_clean(o: Options, k: str, r: random.Random) -> Row:
    return f"{k}. {o[k]} {r.choice(THOUGHTS)}", k


def _other(o: Options, k: str, r: random.Random) -> str:
    return r.choice([x for x in sorted(o) if x != k])


TEMPLATES: list[Callable[[Options, str, random.Random], Row]] = [
    t_json_letter, t_json_letter_dot, t_json_letter_text, t_json_paren_text, t_json_letter_paren_text,
    t_json_colon_text, t_json_option_word, t_json_lower, t_json_text_only, t_json_fenced, t_json_single_quotes,
    t_json_cut, t_json_thinking_mentions_other, t_json_then_text, t_final_over_hypothetical, t_answer_is_corrected,
    t_answer_colon, t_answer_bold, t_answer_is_paren, t_cot_then_answer, t_correct_option_is, t_letter_is_correct,
    t_choose, t_leading_line, t_leading_paren, t_lone_letter, t_answer_then_text, t_text_sentence, t_answer_is_text,
    t_no_answer, t_two_letters, t_two_texts, t_letter_not_offered, t_would_be_only, t_final_after_listing,
    t_answer_letter_text_dup, t_self_rag_clean,
]  # fmt: skip

# Hand-written rows for the traps: substrings of numbers and vitamin names, the article "A", option words in
# ordinary prose.
EXTRA: list[tuple[str, str, str | None, str]] = [
    ("tst", "Induration >5 mm counts as positive in a person living with HIV.", "A", "text_word_boundary"),
    ("tst", "In a healthy adult the cut-off is >15 mm.", "C", "text_word_boundary"),
    ("tst", "The threshold is >10 mm for a health-care worker.", "B", "text_word_boundary"),
    ("potassium", "Treat urgently when potassium exceeds 6.5 mmol/L.", "C", "text_word_boundary"),
    ("potassium", "The answer is 5.5 mmol/L.", "B", "text_word_boundary"),
    ("vitamin", "The answer is Vitamin B12.", "A", "text_word_boundary"),
    ("vitamin", "Thiamine, that is vitamin B1, is the deficient one.", "B", "text_word_boundary"),
    ("vitamin", "B12 deficiency explains the neuropathy. Answer: A", "A", "text_word_boundary"),
    ("vitamin", "B12 levels should be checked first.", None, "text_word_boundary"),
    ("dose", "Give 10 mg now.", "C", "text_word_boundary"),
    ("dose", "The usual dose is 100 mg once daily.", "D", "text_word_boundary"),
    ("dose", "Start at 0.1 mg and titrate.", "A", "text_word_boundary"),
    ("nested", "Start aspirin and clopidogrel today.", "B", "text_nested"),
    ("nested", "Warfarin is the choice here.", "D", "text_nested"),
    ("nested", "Aspirin alone is enough.", "A", "text_nested"),
    ("dup", "Metformin is the first-line agent.", None, "text_duplicate"),
    ("dup", "Answer: C", "C", "letter_with_duplicates"),
    ("dup", '{"answer_choice": "Metformin"}', None, "text_duplicate"),
    ("dup", '{"answer_choice": "A. Metformin"}', "A", "letter_with_duplicates"),
    ("uti", "A 23-year-old pregnant woman needs treatment; nitrofurantoin is appropriate.", "D", "article_a"),
    ("uti", "A pregnant patient with cystitis.", None, "article_a"),
    ("uti", "A urine culture should be sent before antibiotics.", None, "article_a"),
    ("uti", "The answer is Amoxicillin.", None, "article_a"),
    ("uti", "A: Ampicillin", "A", "leading_letter"),
    ("uti", "A. Ampicillin is the answer.", "A", "leading_letter"),
    ("uti", "a) ampicillin", "A", "leading_letter"),
    ("pubmedqa", "Answer: yes", "A", "pubmedqa"),
    ("pubmedqa", "The answer is no.", "B", "pubmedqa"),
    ("pubmedqa", '{"answer_choice": "maybe"}', "C", "pubmedqa"),
    ("pubmedqa", "There is no clear evidence either way, so the answer is maybe.", "C", "pubmedqa"),
    ("pubmedqa", "Final answer: B. no", "B", "pubmedqa"),
    ("pubmedqa", "The study shows a benefit. Answer: A", "A", "pubmedqa"),
    ("pubmedqa", "No conclusion can be drawn.", None, "pubmedqa"),
    ("thyroid", "The uptake scan is diffuse, which fits Graves disease.", "B", "text_sentence"),
    ("thyroid", "Low uptake with a tender gland: subacute thyroiditis. Final answer: D", "D", "final_statement"),
    ("thyroid", "The answer would be A if the gland were tender; the final answer is E.", "E", "final_over_hypothetical"),
    ("thyroid", "Answer: E. Factitious thyrotoxicosis", "E", "answer_colon"),
    ("coronary", "An inferior infarct points to the right coronary artery.", "B", "text_sentence"),
    ("coronary", "The answer is the left circumflex artery.", "C", "answer_is_text"),
    ("nerve", "Wrist drop after a humeral shaft fracture: radial nerve.", "C", "text_sentence"),
    ("nerve", "Answer: (E)", "E", "answer_colon"),
    ("nerve", "It is not the median nerve; the ulnar nerve is injured. The answer is B.", "B", "answer_is"),
    ("ectopic", "Most ectopic pregnancies implant in the fallopian tube.", "B", "text_sentence"),
    ("ectopic", "The answer is not A; the answer is B.", "B", "answer_is_corrected"),
    ("ectopic", '{"step_by_step_thinking": "Tubal implantation is most common.", "answer_choice": "B. Fallopian tube"}',
     "B", "json_letter_text"),
]

# Written after the table above was frozen and the extractor tuned, then measured once (27 of 32 agreed);
# kept as split "fresh" so later changes are checked against phrasings the extractor was not built from.
FRESH_QUESTIONS = {
 "asthma": {"A": "Salbutamol", "B": "Montelukast", "C": "Tiotropium", "D": "Omalizumab"},
 "bp": {"A": "<120/80 mmHg", "B": "<130/80 mmHg", "C": "<140/90 mmHg", "D": "<150/90 mmHg"},
 "gout": {"A": "Allopurinol", "B": "Colchicine", "C": "Febuxostat", "D": "Probenecid", "E": "Colchicine"},
 "yn": {"A": "yes", "B": "no", "C": "maybe"},
}
FRESH_ROWS = [
 ("asthma", "Step 1: the patient has acute wheeze. Step 2: a short-acting bronchodilator relieves it.\nConclusion: A", "A"),
 ("asthma", "My pick is C.", "C"),
 ("asthma", "Response: (D) Omalizumab, given the raised IgE.", "D"),
 ("asthma", "The correct response is B.", "B"),
 ("asthma", '{"reasoning": "allergic phenotype", "answer_choice": "D) Omalizumab"}', "D"),
 ("asthma", "Salbutamol would be my choice for acute relief.", "A"),
 ("asthma", "Not montelukast. Not tiotropium. The answer: A", "A"),
 ("asthma", "answer is **C**", "C"),
 ("asthma", "Options B and C are both controllers; neither fits an acute attack. Final answer - A", "A"),
 ("asthma", "I think tiotropium, although omalizumab is possible.", "C"),
 ("asthma", "A) Salbutamol\nB) is wrong\nC) is wrong", "A"),
 ("asthma", "The best answer is option (B) montelukast.", "B"),
 ("bp", "Target <130/80 mmHg for most adults.", "B"),
 ("bp", "The answer is <140/90 mmHg in this older adult.", "C"),
 ("bp", "Aim for a systolic under 120; diastolic under 80: <120/80 mmHg.", "A"),
 ("bp", '{"answer": "<150/90 mmHg"}', "D"),
 ("bp", "Final answer: E", None),
 ("gout", "Colchicine is the answer for the acute flare.", None),
 ("gout", "Answer: E. Colchicine", "E"),
 ("gout", "For urate lowering start allopurinol. Answer: A", "A"),
 ("gout", '{"answer_choice": "Febuxostat"}', "C"),
 ("gout", "The right choice here is D.", "D"),
 ("gout", "I'd say probenecid.", "D"),
 ("yn", "Yes. The trial met its primary end point.", "A"),
 ("yn", "Based on the abstract, the answer is yes.", "A"),
 ("yn", '{"answer_choice": "no"}', "B"),
 ("yn", "Final answer: maybe", "C"),
 ("yn", "The data are mixed; maybe.", "C"),
 ("yn", "Answer: (B) no", "B"),
 ("yn", "It is unclear whether the effect is real.", None),
 ("asthma", "Therefore the answer would have to be D. Omalizumab.", "D"),
 ("bp", "The correct option is (A) <120/80 mmHg.", "A"),
]


def build() -> list[dict[str, object]]:
    """All rows: every template on every question (a seeded letter each), then the hand-written rows."""
    rng = random.Random(19)
    by_name = dict(QUESTIONS)
    rows: list[dict[str, object]] = []
    for template in TEMPLATES:
        for name, options in QUESTIONS:
            if rng.random() < 0.25:
                continue  # not every pairing: keeps the table varied rather than a full grid
            letter = rng.choice(sorted(options))
            text, expected = template(options, letter, rng)
            rows.append({"question": name, "options": options, "text": text, "expected": expected,
                         "pattern": template.__name__.removeprefix("t_")})  # fmt: skip
    for name, text, expected, pattern in EXTRA:
        rows.append({"question": name, "options": by_name[name], "text": text, "expected": expected,
                     "pattern": pattern})  # fmt: skip
    split = random.Random(2026)
    for i, row in enumerate(rows):
        row["id"] = f"r{i:04d}"
        row["split"] = "test" if split.random() < 0.3 else "dev"
    for i, (name, text, expected) in enumerate(FRESH_ROWS):
        rows.append({"id": f"f{i:04d}", "question": name, "options": FRESH_QUESTIONS[name], "text": text,
                     "expected": expected, "pattern": "fresh", "split": "fresh"})  # fmt: skip
    return rows


if __name__ == "__main__":
    out = Path(__file__).with_name("mcq_outputs.json")
    rows = build()
    payload = {"_comment": "Demo data, not for clinical use: written by us (tests/data/build_mcq_outputs.py).",
               "rows": rows}  # fmt: skip
    out.write_text(json.dumps(payload, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(rows)} rows, {sum(r['split'] == 'test' for r in rows)} test, {sum(r['split'] == 'fresh' for r in rows)} fresh")
