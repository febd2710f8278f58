"""``train-ask-intent``: train the intent classifier on the train splits, choose by cross-validation on train.

Training examples are the question parts of both outside sets' train splits (each part's
text and intent; the second set, ``ask_outside2_questions.json``, from issue 23's second
outside tester), the doctor-question set's train items and the team's own examples
(``core/askeval/data/intent_examples.json``: classes of phrasing the train splits lack,
written in the team's words, never taken from either set), normalised as the reader
normalises them and embedded with the project's embedder (``embed`` settings). The
outside set's intents map onto the reader's (``absent_term`` -> count, ``ai_reading`` ->
differential, ``out_of_scope`` -> off_topic, ...); parts on the fail-closed scans carry
no intent and are left out.

Two learned designs are compared by 5-fold cross-validated intent accuracy on the train
examples alone, and the better one is kept; the test splits never choose anything. All three
designs are then scored on both sets' test splits, which are never trained on, to report:

* ``cues``: the cue patterns alone (the design before the classifier);
* ``centroid``: cosine to each intent's mean embedding;
* ``logreg``: multinomial logistic regression over the embedding and the cue indicators.

The kept design is written to ``core/answer/data/intent_model.npz`` with the
comparison beside it (``intent_model.json``). Deterministic: the same inputs give the
same file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from core.answer.intent_model import INTENTS, MODEL_PATH, WORD_KIND_PATH, IntentModel, features
from core.answer.lexicon import ConditionLexicon, default_lexicon
from core.answer.outcome_concepts import OUTCOME_MODEL_PATH, concept_phrase
from core.answer.split import split_question
from core.answer.understand import cue_intent, normalise

__all__ = ["OUTCOME_EXAMPLES", "OUTSIDE_TO_INTENT", "TEAM_EXAMPLES", "WORD_KINDS", "examples", "train", "train_outcome_kind",
           "train_word_kind"]

# Common words that name a patient's state or a measurement, and everyday words (the word-kind model's data).
WORD_KINDS = Path(__file__).parent / "data" / "word_kinds.json"
# Parts the team wrote in its own words for phrasing classes the train splits lack (see its description).
TEAM_EXAMPLES = Path(__file__).parent / "data" / "intent_examples.json"
# Counts of outcomes in the team's words, one list per outcome concept (the outcome-concept model's own examples).
OUTCOME_EXAMPLES = Path(__file__).parent / "data" / "outcome_examples.json"
# The outside sets' count concepts (their train splits) as outcome concepts; a concept left out is not trained on,
# a finding or procedure is "other" (as is every absent-term part).
_SET_CONCEPTS = {
    "death": "death", "stable": "stable course", "relapse": "relapse", "admission": "admission",
    "progression": "progression", "disease progression": "progression", "recurrence": "recurrence",
    "recurrent exacerbations": "exacerbation", "exacerbation": "exacerbation", "ICU or intubation": "intensive care",
    "resolved": "resolution", "consolidation cleared": "resolution", "recovered": "recovery", "full recovery": "recovery",
    "disability": "disability", "increasing disability": "disability", "moderate disability": "disability",
    "persistent pain": "persistent pain", "perforation": "perforation", "vision loss": "vision loss",
    "residual changes": "residual changes", "biochemical recurrence": "biochemical recurrence",
    "metastasis": "distant recurrence", "distant recurrence": "distant recurrence", "distant metastasis": "distant recurrence",
    "brain metastases": "distant recurrence", "local recurrence": "local recurrence",
    "decline in lung function": "decline in function", "weakness": "weakness", "mild weakness": "weakness",
    "surgery": "other", "chest drain": "other", "cavitation": "other", "lymph node dissection": "other",
}  # fmt: skip

OUTSIDE_TO_INTENT = {
    "count": "count",
    "absent_term": "count",
    "demographics": "demographics",
    "outcomes": "outcomes",
    "treatment": "treatment",
    "prediction": "prediction",
    "severity": "severity",
    "prior_comparison": "prior",
    "ai_reading": "differential",
    "injection": "injection",
    "out_of_scope": "off_topic",
    "similarity_why": "why_similar",
    "differential": "differential",
}


def _as_read(text: str, lex: ConditionLexicon) -> str:
    """``text`` as the reader classifies it: the part :func:`split_question` yields (no closing "?"), normalised."""
    parts = split_question(text).parts
    return normalise(parts[0] if len(parts) == 1 else text, lex)[0]


def examples(data: Path, split: str) -> list[tuple[str, str, str]]:
    """(set, normalised text, intent) of both question sets' ``split`` (and, for train, the team's examples)."""
    out: list[tuple[str, str, str]] = []
    lex = default_lexicon()
    outside = json.loads((data / "ask_outside_questions.json").read_text())["items"]
    for item in outside:
        if item["split"] != split:
            continue
        for part in item["parts"]:
            if (intent := OUTSIDE_TO_INTENT.get(part["intent"])) is not None:
                out.append(("outside", _as_read(part["text"], lex), intent))
    second = data / "ask_outside2_questions.json"  # the second outside set (issue 23): its train split teaches too
    for item in json.loads(second.read_text())["items"] if second.is_file() else []:
        if item["split"] != split:
            continue
        for part in item["parts"]:
            if (intent := OUTSIDE_TO_INTENT.get(part["intent"])) is not None:
                out.append(("outside2", _as_read(part["text"], lex), intent))
    doctor = json.loads((data / "doctor_questions.json").read_text())["items"]
    for item in doctor:
        if item["split"] == split and item.get("intent") in INTENTS and item["expect"]["behaviour"] != "no_comparable":
            out.append(("doctor", _as_read(item["question"], lex), item["intent"]))
    if split == "train":  # the team's own examples of phrasing classes the sets' train splits lack
        team = json.loads(TEAM_EXAMPLES.read_text())["examples"]
        out += [("team", _as_read(text, lex), intent) for intent, texts in team.items() for text in texts]
    return out


def _choose_c(x: np.ndarray, y: list[str]) -> float:
    """The regularisation strength with the best 5-fold cross-validated accuracy on the train split alone."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    scores = {c: cross_val_score(LogisticRegression(C=c, max_iter=5000), x, y, cv=folds).mean() for c in (1.0, 4.0, 16.0, 64.0)}
    return max(scores, key=lambda c: (round(scores[c], 4), -c))


def _fit_logreg(x: np.ndarray, y: list[str], model_id: str) -> IntentModel:
    from sklearn.linear_model import LogisticRegression

    clf = LogisticRegression(C=_choose_c(x, y), max_iter=5000)  # lbfgs: deterministic
    clf.fit(x, y)
    labels = tuple(str(c) for c in clf.classes_)
    return IntentModel(labels, clf.coef_.astype(np.float32), clf.intercept_.astype(np.float32), model_id, "logreg")


def _fit_centroid(x: np.ndarray, y: list[str], model_id: str) -> IntentModel:
    labels = tuple(sorted(set(y)))
    dim = x.shape[1] - len(INTENTS)  # the embedding only: the cue indicators are not part of this design
    cents = []
    for label in labels:
        c = x[[i for i, t in enumerate(y) if t == label], :dim].mean(axis=0)
        cents.append(c / (np.linalg.norm(c) or 1.0))
    w = np.hstack([np.array(cents, dtype=np.float32), np.zeros((len(labels), len(INTENTS)), np.float32)])
    return IntentModel(labels, w, np.zeros(len(labels), np.float32), model_id, "centroid")


def _cv_accuracy(fit: Any, x: np.ndarray, y: list[str], model_id: str) -> float:
    """5-fold stratified cross-validated accuracy of one design on the train examples (every fold refits all)."""
    from sklearn.model_selection import StratifiedKFold

    labels = np.asarray(y)
    hits = 0
    for fit_rows, held in StratifiedKFold(n_splits=5, shuffle=True, random_state=0).split(x, labels):
        model = fit(x[fit_rows], labels[fit_rows].tolist(), model_id)
        hits += sum(p == g for (p, _), g in zip(model.predict(x[held]), labels[held], strict=True))
    return round(hits / len(y), 4)


def _accuracy(pred: list[str], gold: list[str]) -> float:
    return round(sum(p == g for p, g in zip(pred, gold, strict=True)) / len(gold), 4) if gold else 0.0


def train_word_kind(embedder: Any, out: Path = WORD_KIND_PATH) -> dict[str, float]:
    """Fit the word-kind model (clinical or everyday, over a word's e5 query embedding) and write it."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    kinds = json.loads(WORD_KINDS.read_text())
    words = [*kinds["clinical"], *kinds["everyday"]]
    y = ["clinical"] * len(kinds["clinical"]) + ["everyday"] * len(kinds["everyday"])
    x = embedder.embed_queries(words)
    c = _choose_c(x, y)
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    cv = float(cross_val_score(LogisticRegression(C=c, max_iter=5000), x, y, cv=folds).mean())
    clf = LogisticRegression(C=c, max_iter=5000).fit(x, y)
    labels = tuple(str(k) for k in clf.classes_)
    w = np.vstack([-clf.coef_, clf.coef_]).astype(np.float32)  # binary: one row per label, softmax = the logistic
    b = np.array([-clf.intercept_[0], clf.intercept_[0]], np.float32) / 2
    IntentModel(labels, w / 2, b, embedder.model_id, "logreg").save(out)
    return {"words": len(words), "C": c, "cv_accuracy": round(cv, 4)}


def _outcome_examples(data: Path) -> tuple[list[str], list[str]]:
    """(phrase, concept) pairs: the team's examples, then the outside sets' train count and absent-term parts."""
    lex = default_lexicon()
    texts: list[str] = []
    labels: list[str] = []
    for concept, said in json.loads(OUTCOME_EXAMPLES.read_text())["examples"].items():
        texts += said
        labels += [concept] * len(said)
    for name in ("ask_outside_questions.json", "ask_outside2_questions.json"):
        for item in json.loads((data / name).read_text())["items"] if (data / name).is_file() else []:
            for part in item["parts"] if item["split"] == "train" else []:
                concept = _SET_CONCEPTS.get(part["expect"].get("concept", "")) if part["expect"]["behaviour"] == "count" else None
                if part["intent"] == "absent_term":
                    concept = "other"
                if concept is not None:
                    texts.append(part["text"])
                    labels.append(concept)
    return [concept_phrase(normalise(t, lex)[0]) for t in texts], labels


def train_outcome_kind(embedder: Any, data: Path, out: Path = OUTCOME_MODEL_PATH) -> dict[str, Any]:
    """Fit the outcome-concept model (:mod:`core.answer.outcome_concepts`) on train data alone and write it."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    phrases, y = _outcome_examples(data)
    x = embedder.embed_queries(phrases)
    c = _choose_c(x, y)
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
    cv = float(cross_val_score(LogisticRegression(C=c, max_iter=5000), x, y, cv=folds).mean())
    clf = LogisticRegression(C=c, max_iter=5000).fit(x, y)
    labels = tuple(str(k) for k in clf.classes_)
    IntentModel(labels, clf.coef_.astype(np.float32), clf.intercept_.astype(np.float32), embedder.model_id, "logreg").save(out)
    return {"examples": len(y), "concepts": len(labels), "C": c, "cv_accuracy": round(cv, 4)}


def train(embedder: Any, data: Path, out: Path = MODEL_PATH) -> dict[str, Any]:
    """Train, keep the design with the better cross-validated accuracy on train, report the test splits."""
    train_ex, test_ex = examples(data, "train"), examples(data, "test")

    def embed(ex: list[tuple[str, str, str]]) -> np.ndarray:
        texts = [t for _, t, _ in ex]
        return features(embedder.embed_queries(texts), [cue_intent(t) for t in texts])

    x_train, x_test = embed(train_ex), embed(test_ex)
    y_train = [i for _, _, i in train_ex]
    gold = [i for _, _, i in test_ex]
    model_id = embedder.model_id
    designs = {"logreg": _fit_logreg(x_train, y_train, model_id), "centroid": _fit_centroid(x_train, y_train, model_id)}
    report: dict[str, Any] = {"train_examples": len(train_ex), "test_examples": len(test_ex), "model_id": model_id}
    scores: dict[str, dict[str, float]] = {}
    cue_preds: list[str] = [cue_intent(t) for _, t, _ in test_ex]
    for name, preds in [("cues", cue_preds)] + [
        (n, [p for p, _ in m.predict(x_test)]) for n, m in designs.items()
    ]:
        scores[name] = {"all": _accuracy(preds, gold)}
        for s in ("outside", "outside2", "doctor"):
            idx = [i for i, (src, _, _) in enumerate(test_ex) if src == s]
            scores[name][s] = _accuracy([preds[i] for i in idx], [gold[i] for i in idx])
    report["test_intent_accuracy"] = scores  # reported only: the choice below never sees the test splits
    fits = {"logreg": _fit_logreg, "centroid": _fit_centroid}
    cv = {n: _cv_accuracy(fit, x_train, y_train, model_id) for n, fit in fits.items()}
    report["train_cv_accuracy"] = cv
    best = max(designs, key=lambda n: cv[n])
    report["kept"] = best
    designs[best].save(out)
    if out == MODEL_PATH:
        report["word_kind"] = train_word_kind(embedder)
        report["outcome_kind"] = train_outcome_kind(embedder, data)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    return report
