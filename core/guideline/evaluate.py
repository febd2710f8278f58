"""The Guideline QA evaluation: safety and usefulness measured together.

Metrics (over ``tests/data/guideline_qa_eval.json``):

* **routing accuracy**: share of items whose route equals ``expected_route``;
* **answer rate**: share of answerable items that got an answer (not ABSTAIN);
* **out-of-domain abstention**: share of out-of-domain items that abstained;
* **cross-drug contamination**: share of answered items about a drug (the item's
  ``target_drug`` or a drug the question names) whose evidence includes a chunk
  of another drug's label (a label whose names share nothing with the allowed
  drugs and their synonyms);
* **unsupported-sentence rate**: share of delivered bullets that, re-checked here
  against the answer's evidence, contain a high-risk term absent from it, have
  token overlap below ``tau``, best-snippet Jaccard below ``min_alignment``, or
  cite a snippet that is not in the evidence;
* usefulness extras: keyword hit (any expected keyword in the bullets) and
  source hit (a bullet's snippet from the expected document or label section).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from core.guideline.calibration import fit_logistic
from core.guideline.gates import check_bullet, evidence_sentences
from core.guideline.pipeline import GuidelineQA
from core.guideline.router import drug_synonyms
from core.guideline.settings import GuidelineQASettings
from core.guideline.types import QAAnswer, QAResult, Route
from core.kb.lexicon import DrugLexicon
from core.kb.types import Hit

__all__ = [
    "EvalItem",
    "EvalReport",
    "ItemOutcome",
    "calibration_scores",
    "fit_calibration",
    "load_eval",
    "run_eval",
    "score_item",
    "summarize",
]

_CALIB_KBS = ("guidelines", "druglabels")


class EvalItem(BaseModel):
    """One evaluation question."""

    model_config = ConfigDict(extra="ignore")

    id: str
    question: str
    category: str
    expected_route: Route
    answerable: bool
    target_drug: str | None = None
    expected_keywords: list[str] = Field(default_factory=list)
    expected_source: dict[str, str] | None = None


class ItemOutcome(BaseModel):
    """What happened to one item."""

    id: str
    category: str
    route: Route
    route_ok: bool
    answered: bool
    reason: str = ""
    generator: str = Field(
        "", description="Who wrote the bullets: the LLM backend, or `extractive` (also on fallback)."
    )
    bullets: int = 0
    unsupported: int = 0
    contaminated: bool = False
    keyword_hit: bool = False
    source_hit: bool = False
    seconds: float = 0.0


class EvalReport(BaseModel):
    """Aggregate metrics, the targets and whether they are met."""

    backend: str
    items: int
    routing_accuracy: float
    answer_rate: float
    ood_abstention: float
    contamination: float
    unsupported_rate: float
    keyword_hit_rate: float
    source_hit_rate: float
    mean_seconds: float
    targets: dict[str, float]
    passed: bool
    outcomes: list[ItemOutcome]


def load_eval(path: Path) -> list[EvalItem]:
    """Items of the evaluation file (a list, or ``{"items": [...]}``)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return [EvalItem.model_validate(i) for i in (data["items"] if isinstance(data, dict) else data)]


# Label subsections stay in their parent's chunk: pregnancy, lactation, pediatric -> specific populations.
_PARENT_SECTION = {"42228-7": "43684-0", "77290-5": "43684-0", "34081-0": "43684-0", "34082-8": "43684-0",
                   "42229-5": "43685-7"}  # fmt: skip


def _norm(doc: str) -> str:
    return doc.lower().replace("-", "_")


def _source_hit(item: EvalItem, answer: QAAnswer, lexicon: DrugLexicon) -> bool:
    want = item.expected_source or {}
    used = {b.evidence.chunk_id for b in answer.bullets}
    for ev in answer.evidence:
        if ev.chunk_id not in used:
            continue
        if "doc" in want and _norm(ev.chunk_id).startswith(_norm(want["doc"])):
            return True
        if "drug" in want and want["drug"] in drug_synonyms(lexicon, ev.drug_names, {}):
            section = want.get("section")
            if section is None or ev.section_code in (section, _PARENT_SECTION.get(section)):
                return True
    return False


def score_item(item: EvalItem, result: QAResult, lexicon: DrugLexicon, cfg: GuidelineQASettings) -> ItemOutcome:
    """Score one result against its item (the support checks are re-run here, independently of the pipeline)."""
    out = ItemOutcome(id=item.id, category=item.category, route=result.route,
                      route_ok=result.route == item.expected_route, answered=isinstance(result, QAAnswer))  # fmt: skip
    generate = result.trace.step("generate")
    out.generator = str(generate.detail.get("backend", "")) if generate else ""
    if not isinstance(result, QAAnswer):
        out.reason = result.reason
        return out
    hits = [Hit(chunk_id=e.chunk_id, doc_id=e.chunk_id, kb=e.kb, text=e.text, title=e.source) for e in result.evidence]
    sentences = evidence_sentences(hits, cfg.stopwords)
    evidence_text = "\n".join(e.text for e in result.evidence)
    ids = {e.chunk_id for e in result.evidence}
    out.bullets = len(result.bullets)
    out.unsupported = sum(
        1 for b in result.bullets
        if b.evidence.chunk_id not in ids or not check_bullet(b.text, evidence_text, sentences, cfg).ok
    )  # fmt: skip
    drugs = [d for d in (item.target_drug,) if d] + [e.name for e in lexicon.find_in(item.question)]
    allowed = drug_synonyms(lexicon, drugs, cfg.drug_aliases)
    out.contaminated = bool(allowed) and any(
        e.drug_names and not allowed.intersection(e.drug_names) for e in result.evidence if e.kb == "druglabels"
    )
    text = " ".join(b.text for b in result.bullets).lower()
    out.keyword_hit = any(k.lower() in text for k in item.expected_keywords) or not item.expected_keywords
    out.source_hit = _source_hit(item, result, lexicon)
    return out


def _rate(num: int, den: int) -> float:
    return num / den if den else 1.0


def summarize(outcomes: list[ItemOutcome], backend: str, cfg: GuidelineQASettings) -> EvalReport:
    """Aggregate the outcomes and compare them with the targets in settings."""
    answerable = [o for o in outcomes if o.category != "out_of_domain"]
    ood = [o for o in outcomes if o.category == "out_of_domain"]
    answered = [o for o in outcomes if o.answered]
    sentences = sum(o.bullets for o in answered)
    report: dict[str, Any] = {
        "routing_accuracy": _rate(sum(o.route_ok for o in outcomes), len(outcomes)),
        "answer_rate": _rate(sum(o.answered for o in answerable), len(answerable)),
        "ood_abstention": _rate(sum(not o.answered for o in ood), len(ood)),
        "contamination": sum(o.contaminated for o in answered) / len(answered) if answered else 0.0,
        "unsupported_rate": sum(o.unsupported for o in answered) / sentences if sentences else 0.0,
        "keyword_hit_rate": _rate(sum(o.keyword_hit for o in answered), len(answered)),
        "source_hit_rate": _rate(sum(o.source_hit for o in answered), len(answered)),
    }
    targets = {"answer_rate": cfg.target_answer_rate, "ood_abstention": cfg.target_ood_abstention,
               "contamination": cfg.target_contamination, "unsupported_rate": cfg.target_unsupported}  # fmt: skip
    passed = (
        report["answer_rate"] >= targets["answer_rate"]
        and report["ood_abstention"] >= targets["ood_abstention"]
        and report["contamination"] <= targets["contamination"]
        and report["unsupported_rate"] <= targets["unsupported_rate"]
    )
    mean_s = sum(o.seconds for o in outcomes) / len(outcomes) if outcomes else 0.0
    return EvalReport(backend=backend, items=len(outcomes), targets=targets, passed=passed, outcomes=outcomes,
                      mean_seconds=round(mean_s, 3), **report)  # fmt: skip


def run_eval(qa: GuidelineQA, items: list[EvalItem]) -> EvalReport:
    """Answer every item with ``qa`` and score it."""
    outcomes = []
    for item in items:
        start = time.perf_counter()
        result = qa.answer(item.question)
        outcome = score_item(item, result, qa.lexicon, qa.cfg)
        outcome.seconds = round(time.perf_counter() - start, 3)
        outcomes.append(outcome)
    return summarize(outcomes, qa.backend, qa.cfg)


def calibration_scores(qa: GuidelineQA, items: list[EvalItem]) -> dict[str, dict[str, list[float]]]:
    """Best dense cosine per KB: after the filters for answerable items (in the KB of their expected
    source), over the raw candidates for out-of-domain items (which the router stops before retrieval)."""
    open_cfg = qa.cfg.model_copy(update={"thresholds": {}, "default_threshold": 0.0})
    probe = GuidelineQA(qa.settings.model_copy(update={"guideline": open_cfg}), qa.retriever, qa.lexicon, llm=None)
    out: dict[str, dict[str, list[float]]] = {kb: {"answerable": [], "out_of_domain": []} for kb in _CALIB_KBS}
    for item in items:
        if item.category == "out_of_domain":
            for kb in _CALIB_KBS:
                hits = qa.retriever.search(item.question, kb=kb, top_k=qa.cfg.candidates, mode=qa.cfg.search_mode)
                out[kb]["out_of_domain"].append(max((h.dense_score or 0.0 for h in hits), default=0.0))
            continue
        if not item.answerable or not item.expected_source:
            continue
        kb = "druglabels" if "drug" in item.expected_source else "guidelines"
        step = next((s for s in probe.answer(item.question).trace.steps
                     if s.name == "confidence" and s.detail["kb"] == kb), None)  # fmt: skip
        if step is not None:
            out[kb]["answerable"].append(float(step.detail["best_cosine"]))
    return out


def fit_calibration(scores: dict[str, dict[str, list[float]]], l2: float) -> dict[str, dict[str, Any]]:
    """Per KB: the fitted ``(midpoint, scale)`` and the quantiles of both score distributions."""
    fitted: dict[str, dict[str, Any]] = {}
    for kb, groups in scores.items():
        pos, neg = groups["answerable"], groups["out_of_domain"]
        mid, scale = fit_logistic(pos + neg, [1] * len(pos) + [0] * len(neg), l2)
        fitted[kb] = {
            "midpoint": round(mid, 4),
            "scale": round(scale, 5),
            "answerable": _quantiles(pos),
            "out_of_domain": _quantiles(neg),
        }
    return fitted


def _quantiles(values: list[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=float)
    qs = {"n": float(len(arr)), "min": arr.min(), "p10": np.quantile(arr, 0.1), "median": np.median(arr),
          "p90": np.quantile(arr, 0.9), "max": arr.max()}  # fmt: skip
    return {k: round(float(v), 4) for k, v in qs.items()}
