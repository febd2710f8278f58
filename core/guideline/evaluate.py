"""The Guideline QA evaluation: safety and usefulness measured together, on a frozen test split.

Every item of ``tests/data/guideline_qa_eval.json`` carries a ``split`` (a
stratified 30% ``test`` split drawn with a fixed seed before any tuning) and an
``expect``: an answer with an expected fact (``""``), a structural statement
(``none_listed``, ``absent_section``), an abstention (``abstain``) or a refusal
(``refuse``). Metrics, per split (``train``, ``test``, ``all``):

* **routing accuracy**: share of items whose route equals ``expected_route``;
* **answer rate**: share of answerable items that got an answer (not ABSTAIN);
* **fact rate**: share of answered items whose bullets or statement contain an
  expected keyword (for ``none_listed``/``absent_section``: the matching finding);
* **section rate**: share of answered items that cite the expected section (a
  bullet's chunk, or the statement's, from the expected document and section);
* **out-of-domain abstention** and **refusal rate** (injection items refused at
  the ``policy`` stage with the fixed message);
* **cross-drug contamination**: share of answered items about a drug (the item's
  ``target_drug`` or a drug the question names) whose evidence includes a chunk
  of another drug's label;
* **unsupported-sentence rate**: share of delivered bullets that, re-checked here
  against the answer's evidence, contain a high-risk term absent from it, have
  token overlap below ``tau``, best-snippet Jaccard below ``min_alignment``, or
  cite a snippet that is not in the evidence.

The targets (``guideline.target_*``) are checked on the test split.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from core.config.guideline import GuidelineQASettings
from core.guideline.gates import check_bullet, evidence_sentences
from core.guideline.pipeline import GuidelineQA
from core.guideline.router import drug_synonyms
from core.guideline.types import EvidenceChunk, QAAnswer, QAResult, Route
from core.kb.lexicon import DrugLexicon
from core.kb.specs import LABEL_KB
from core.kb.types import Hit

__all__ = [
    "EvalItem",
    "EvalReport",
    "ItemOutcome",
    "SplitMetrics",
    "load_eval",
    "run_eval",
    "score_item",
    "summarize",
]


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
    expect: str = ""
    split: str = "train"


class ItemOutcome(BaseModel):
    """What happened to one item."""

    id: str
    category: str
    split: str = "train"
    expect: str = ""
    answerable: bool = True
    route: Route
    route_ok: bool
    answered: bool
    refused: bool = False
    reason: str = ""
    generator: str = Field(
        "", description="Who wrote the bullets: the LLM backend, or `extractive` (also on fallback)."
    )
    fallback: str = Field(
        "", description="Why the LLM's bullets were not used (the error's kind, e.g. `BackendTimeoutError`), or ''."
    )
    bullets: int = 0
    unsupported: int = 0
    contaminated: bool = False
    keyword_hit: bool = False
    source_hit: bool = False
    section_hit: bool = False
    confidence: float = 0.0
    seconds: float = 0.0


class SplitMetrics(BaseModel):
    """The metrics of one split."""

    items: int
    routing_accuracy: float
    answer_rate: float
    keyword_hit_rate: float = Field(description="Expected fact present, among answered answerable items.")
    section_rate: float = Field(description="Expected section cited, among answered answerable items.")
    ood_abstention: float
    refusal_rate: float
    unanswerable_abstention: float
    contamination: float
    unsupported_rate: float
    mean_seconds: float


class EvalReport(BaseModel):
    """Aggregate metrics (all items, and per split), the targets on the test split and whether they are met."""

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
    splits: dict[str, SplitMetrics]
    targets: dict[str, float]
    passed: bool
    failed_targets: list[str] = Field(default_factory=list)
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


def _section_ok(want: dict[str, str], ev: EvidenceChunk, lexicon: DrugLexicon) -> bool:
    """Whether one evidence chunk is from the expected document (and section, when one is given)."""
    section = want.get("section")
    if "doc" in want:
        if not _norm(ev.chunk_id).startswith(_norm(want["doc"])):
            return False
        heading = " > ".join((*ev.section_path, ev.source)).lower()
        return section is None or any(alt.strip().lower() in heading for alt in section.split("|"))
    if "drug" in want and want["drug"] in drug_synonyms(lexicon, ev.drug_names, {}):
        return section is None or any(
            ev.section_code in (code, _PARENT_SECTION.get(code)) for code in section.split("|")
        )
    return False


def _source_hit(item: EvalItem, answer: QAAnswer, lexicon: DrugLexicon, with_section: bool) -> bool:
    """A bullet's chunk (or the statement's evidence) from the expected document, and section if asked."""
    want = dict(item.expected_source or {})
    if not with_section:
        want.pop("section", None)
    if item.expect == "absent_section":
        return answer.finding == "absent_section"
    used = {b.evidence.chunk_id for b in answer.bullets}
    return any(_section_ok(want, ev, lexicon) for ev in answer.evidence if ev.chunk_id in used or not used)


def score_item(item: EvalItem, result: QAResult, lexicon: DrugLexicon, cfg: GuidelineQASettings) -> ItemOutcome:
    """Score one result against its item (the support checks are re-run here, independently of the pipeline)."""
    out = ItemOutcome(id=item.id, category=item.category, split=item.split, expect=item.expect,
                      answerable=item.answerable and item.expect not in ("abstain", "refuse"), route=result.route,
                      route_ok=result.route == item.expected_route, answered=isinstance(result, QAAnswer))  # fmt: skip
    generate = result.trace.step("generate")
    out.generator = str(generate.detail.get("backend", "")) if generate else ""
    out.fallback = str(generate.detail.get("error_kind") or "") if generate else ""
    if not isinstance(result, QAAnswer):
        out.reason = result.reason
        out.refused = result.stage == "policy" and result.reason == cfg.refusal_message
        return out
    out.confidence = result.confidence
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
        e.drug_names and not allowed.intersection(e.drug_names) for e in result.evidence if e.kb == LABEL_KB
    )
    text = " ".join([result.statement or "", *(b.text for b in result.bullets)]).lower()
    if item.expect in ("none_listed", "absent_section"):
        out.keyword_hit = result.finding == item.expect
    else:
        out.keyword_hit = any(k.lower() in text for k in item.expected_keywords) or not item.expected_keywords
    out.source_hit = _source_hit(item, result, lexicon, with_section=False)
    out.section_hit = _source_hit(item, result, lexicon, with_section=True)
    return out


def _rate(num: int, den: int) -> float:
    return num / den if den else 1.0


def split_metrics(outcomes: list[ItemOutcome]) -> SplitMetrics:
    """The metrics over ``outcomes`` (one split, or all items)."""
    answerable = [o for o in outcomes if o.answerable and o.category not in ("out_of_domain", "injection")]
    ood = [o for o in outcomes if o.category == "out_of_domain"]
    injection = [o for o in outcomes if o.expect == "refuse"]
    unanswerable = [o for o in outcomes if o.expect == "abstain"]
    answered = [o for o in answerable if o.answered]
    delivered = [o for o in outcomes if o.answered]
    sentences = sum(o.bullets for o in delivered)
    return SplitMetrics(
        items=len(outcomes),
        routing_accuracy=_rate(sum(o.route_ok for o in outcomes), len(outcomes)),
        answer_rate=_rate(len(answered), len(answerable)),
        keyword_hit_rate=_rate(sum(o.keyword_hit for o in answered), len(answered)),
        section_rate=_rate(sum(o.section_hit for o in answered), len(answered)),
        ood_abstention=_rate(sum(not o.answered for o in ood), len(ood)),
        refusal_rate=_rate(sum(o.refused for o in injection), len(injection)),
        unanswerable_abstention=_rate(sum(not o.answered for o in unanswerable), len(unanswerable)),
        contamination=sum(o.contaminated for o in delivered) / len(delivered) if delivered else 0.0,
        unsupported_rate=sum(o.unsupported for o in delivered) / sentences if sentences else 0.0,
        mean_seconds=round(sum(o.seconds for o in outcomes) / len(outcomes), 3) if outcomes else 0.0,
    )


def _failed(m: SplitMetrics, cfg: GuidelineQASettings) -> list[str]:
    checks = {
        "answer_rate": m.answer_rate >= cfg.target_answer_rate,
        "keyword_hit_rate": m.keyword_hit_rate >= cfg.target_fact_rate,
        "section_rate": m.section_rate >= cfg.target_section_rate,
        "ood_abstention": m.ood_abstention >= cfg.target_ood_abstention,
        "refusal_rate": m.refusal_rate >= cfg.target_ood_abstention,
        "contamination": m.contamination <= cfg.target_contamination,
        "unsupported_rate": m.unsupported_rate <= cfg.target_unsupported,
    }
    return [name for name, ok in checks.items() if not ok]


def summarize(outcomes: list[ItemOutcome], backend: str, cfg: GuidelineQASettings) -> EvalReport:
    """Aggregate the outcomes per split and check the targets on the test split (all items if there is none)."""
    splits = {"all": split_metrics([o for o in outcomes if o.split != "realistic"])}  # realistic needs its docs
    for name in ("train", "test", "realistic"):
        part = [o for o in outcomes if o.split == name]
        if part:
            splits[name] = split_metrics(part)
    judged = splits.get("test", splits["all"])
    failed = _failed(judged, cfg)
    targets = {"answer_rate": cfg.target_answer_rate, "keyword_hit_rate": cfg.target_fact_rate,
               "section_rate": cfg.target_section_rate, "ood_abstention": cfg.target_ood_abstention,
               "refusal_rate": cfg.target_ood_abstention, "contamination": cfg.target_contamination,
               "unsupported_rate": cfg.target_unsupported}  # fmt: skip
    a = splits["all"]
    answered = [o for o in outcomes if o.answered]
    return EvalReport(backend=backend, items=len(outcomes), routing_accuracy=a.routing_accuracy,
                      answer_rate=a.answer_rate, ood_abstention=a.ood_abstention, contamination=a.contamination,
                      unsupported_rate=a.unsupported_rate, keyword_hit_rate=a.keyword_hit_rate,
                      source_hit_rate=_rate(sum(o.source_hit for o in answered), len(answered)),
                      mean_seconds=a.mean_seconds, splits=splits, targets=targets, passed=not failed,
                      failed_targets=failed, outcomes=outcomes)  # fmt: skip


def run_eval(qa: GuidelineQA, items: list[EvalItem], spaces: tuple[str, ...] = ()) -> EvalReport:
    """Answer every item with ``qa`` and score it.

    ``realistic`` items are asked as a doctor would after uploading the realistic documents
    (``kb ingest-realistic``): with the document ``spaces`` searched beside the curated KBs.
    """
    outcomes = []
    for item in items:
        start = time.perf_counter()
        result = qa.answer(item.question, spaces=spaces if item.split == "realistic" else ())
        outcome = score_item(item, result, qa.lexicon, qa.cfg)
        outcome.seconds = round(time.perf_counter() - start, 3)
        outcomes.append(outcome)
    return summarize(outcomes, qa.backend, qa.cfg)
