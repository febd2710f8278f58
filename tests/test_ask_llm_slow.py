"""The golden set on the real local LLM (slow): zero invalid citations, zero forbidden content.

A representative subset keeps the suite inside its time budget on 2 cores: the four contract
questions and the first no-hallucination checks. Questions answered by the fixed responses never
reach the model, so they are covered by the extractive golden test.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from core.answer.service import ask_question
from core.cases import build_context_bundle
from core.contracts import INSUFFICIENT_DATA
from core.llm.base import LLM
from core.llm.factory import make_llm
from core.llm.models import ensure_default_model
from core.runtime import Runtime, open_runtime
from core.settings import REPO_ROOT
from tests.conftest import copy_data, make_settings, scan_of
from tests.test_ask import _doctor, check_grounded

pytest.importorskip("xllamacpp")
pytestmark = pytest.mark.slow

ITEMS = [
    i
    for i in json.loads((REPO_ROOT / "tests" / "data" / "ask_golden.json").read_text())["items"]
    if i["id"] in {"c1", "c2", "c3", "c4", "h2", "h5", "h9", "h14"}
]


@pytest.fixture(scope="module")
def llm_rt(demo_root, tmp_path_factory: pytest.TempPathFactory) -> tuple[Runtime, LLM]:  # type: ignore[no-untyped-def]
    import shutil

    root = tmp_path_factory.mktemp("askllm")
    copy_data(demo_root / "data", root / "data")
    shutil.copytree(demo_root / "indexes", root / "indexes", symlinks=True)
    settings = make_settings(
        root,
        paths={"model_dir": REPO_ROOT / "models"},
        llm={"backend": "llamacpp", "llamacpp": {"threads": 1}, "max_tokens": 160},
        ask={"llm_budget_s": 240, "rate_limit_per_minute": 1000},
    )
    ensure_default_model(settings)
    llm = make_llm(settings)
    assert llm is not None
    return open_runtime(settings), llm


@pytest.mark.parametrize("item", ITEMS, ids=[i["id"] for i in ITEMS])
def test_golden_on_local_llm(llm_rt: tuple[Runtime, LLM], item: dict[str, Any]) -> None:
    rt, llm = llm_rt
    sid = scan_of(rt, item["user"], item["scan"])
    res = ask_question(rt, sid, item["question"], _doctor(rt), llm)
    if item["expect"].get("answer") == "insufficient":
        assert res.answer.answer == INSUFFICIENT_DATA
        return
    result = build_context_bundle(rt, sid)
    assert res.path in {"llm", "extractive"}
    check_grounded_llm = res.path == "llm"
    assert set(res.answer.citedCaseIds) <= set(result.case_ids) and res.answer.citedCaseIds
    if check_grounded_llm:
        from core.answer.guard import enforce

        assert enforce(res.answer.answer, result, facts=res.facts).removed == []  # as the service guarded it
    else:
        check_grounded(res, result)
