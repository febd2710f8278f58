"""Retrieval quality on the in-repo evaluation set (slow), and the evaluation's own matching rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.kb import Hit, KnowledgeBase
from core.kb.evaluate import EvalItem, evaluate, hit_matches, load_eval
from core.settings import REPO_ROOT
from tests.conftest import make_settings

EVAL = REPO_ROOT / "tests" / "data" / "kb_retrieval_eval.json"
ASSETS = REPO_ROOT / "assets"


def _hit(**kw: object) -> Hit:
    base: dict[str, object] = {"chunk_id": "x#0", "doc_id": "x", "kb": "druglabels", "text": "t"}
    return Hit(**{**base, **kw})  # type: ignore[arg-type]


def test_label_match_needs_drug_and_loinc() -> None:
    hit = _hit(title="Glucophage", drug_names=("glucophage", "metformin"), section_code="34070-3")
    assert hit_matches(hit, {"drug": "Metformin", "section": "34070-3"})
    assert not hit_matches(hit, {"drug": "metformin", "section": "34084-4"})
    assert not hit_matches(hit, {"drug": "warfarin", "section": "34070-3"})


def test_guideline_match_needs_doc_and_heading() -> None:
    hit = _hit(kb="guidelines", doc_id="tb-latent-infection-testing-f54e1365", chunk_id="tb-latent-infection-testing-f54e1365#c3",
               source="assets/kb/guidelines/tb_latent_infection_testing.md", title="Testing and Treatment of LTBI",
               section_path=("Tests for TB Infection", "Choosing between TST and IGRA"))  # fmt: skip
    assert hit_matches(hit, {"doc": "tb_latent_infection_testing", "section": "Choosing between TST and IGRA"})
    assert hit_matches(hit, {"doc": "tb_latent_infection_testing", "section": "Tests for TB Infection"})
    assert not hit_matches(hit, {"doc": "tb_active_diagnosis", "section": "Tests for TB Infection"})
    assert not hit_matches(hit, {"doc": "tb_latent_infection_testing", "section": "Overview"})


class _Fixed:
    """A retriever returning fixed rankings, to pin recall@k and MRR arithmetic."""

    def search(self, query: str, kb: str, top_k: int, mode: str = "hybrid") -> list[Hit]:
        good = _hit(drug_names=("a",), section_code="1")
        bad = _hit(drug_names=("b",), section_code="1")
        ranking = {"q1": [good], "q2": [bad, bad, good], "q3": [bad] * 6 + [good]}[query]
        return ranking[:top_k]


def test_recall_and_mrr_arithmetic() -> None:
    items = [EvalItem(q, q, "druglabels", {"drug": "a", "section": "1"}) for q in ("q1", "q2", "q3")]
    score = evaluate(_Fixed(), items, ["hybrid"], k=5, depth=10)["all"]["hybrid"]
    assert score.recall_at_k == pytest.approx(2 / 3)
    assert score.mrr == pytest.approx((1 + 1 / 3 + 1 / 7) / 3)
    assert score.misses == ("q3",)


@pytest.mark.slow
def test_hybrid_is_not_worse_than_dense_or_bm25(demo_kb_root: Path) -> None:
    settings = make_settings(demo_kb_root, kb={"progress": False})
    items = load_eval(EVAL)
    scores = evaluate(KnowledgeBase(settings), items, ["dense", "bm25", "hybrid"], k=5, depth=10)["all"]
    hybrid, dense, bm25 = scores["hybrid"], scores["dense"], scores["bm25"]
    assert hybrid.recall_at_k >= max(dense.recall_at_k, bm25.recall_at_k), scores
    assert hybrid.mrr >= max(dense.mrr, bm25.mrr), scores
    assert hybrid.recall_at_k >= 0.8, hybrid.misses
