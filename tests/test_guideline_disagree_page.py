"""The Guideline QA page shows where sources differ side by side, each document named (issue 24, item 1).

A doctor uploads two short ward guidelines (written here, demo data) that disagree on when to start
antiretroviral therapy and on the pyrazinamide dose for a weight band, into their own space; the page
asks over the real demo knowledge bases and the real upload path. Before this change a weight band's
dose row was withheld as a conflict with the label (stated in mg/kg), and documents that agreed on
"12 air changes per hour" and "12 ACH" were reported as differing.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core.guideline.types import QAAnswer
from core.kb.spaces import DocumentSpaces, owner_key
from core.runtime import Runtime
from pages._text import inert
from tests.conftest import make_settings
from tests.test_app_support import page, texts, use_root, user_of

WARD_A = b"""# Ward A TB and HIV handbook

Demo data, not for clinical use.

## 4 Timing of antiretroviral therapy

Antiretroviral therapy should be started within 2 weeks of starting TB treatment in people living with HIV.

## 5 Pyrazinamide daily dose for adults by weight band

| Weight band | Pyrazinamide daily dose (adults) |
|---|---|
| 40-54 kg | 1200 mg |
| 55-74 kg | 1600 mg |
"""
WARD_B = b"""# Ward B TB and HIV handbook

Demo data, not for clinical use.

## 4 Timing of antiretroviral therapy

Antiretroviral therapy should be started within 8 weeks of starting TB treatment in people living with HIV.

## 5 Pyrazinamide daily dose for adults by weight band

| Weight band | Pyrazinamide daily dose (adults) |
|---|---|
| 40-55 kg | 1000 mg |
| 56-75 kg | 1500 mg |
"""


@pytest.fixture(scope="module")
def rt(demo_kb_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Runtime:
    """A private copy of the demo database and knowledge bases, with dr.chen's two uploads."""
    root = tmp_path_factory.mktemp("disagree")
    shutil.copytree(demo_kb_root / "data", root / "data")
    shutil.copytree(demo_kb_root / "indexes", root / "indexes", symlinks=True)
    rt = Runtime(make_settings(root, kb={"progress": False}))
    owner = owner_key(user_of(rt, "dr.chen").id)
    report = DocumentSpaces(rt.kb).upload(owner, [("ward-a.md", WARD_A), ("ward-b.md", WARD_B)])
    assert len(report.docs) == 2, report.to_json()
    return rt


def test_the_page_shows_each_documents_values_side_by_side(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    use_root(rt.settings.paths.resolve(rt.settings.paths.data_dir).parent, monkeypatch)
    monkeypatch.setenv("CASEBOOK_KB__PROGRESS", "false")
    at = page("guideline_qa", user_of(rt, "dr.chen")).run()
    at.toggle(key="guideline-only-mine").set_value(True).run()
    at.text_area(key="guideline-question").input("When should antiretroviral therapy be started in TB and HIV?")
    at.button[0].click()
    at = at.run()
    assert not at.exception
    result = at.session_state["guideline:result"]
    assert isinstance(result, QAAnswer), result
    assert {d.topic for d in result.disagreements} >= {"duration or timing (hiv)"}, result.disagreements
    # over the doctor's documents the number is the fitted chance of being right, and says so
    assert [m.label for m in at.metric][1] == inert("Chance right"), [m.label for m in at.metric]
    shown = texts(at)
    assert "Sources differ on duration or timing (hiv)" in shown, shown[:2000]
    for title, value in (("Ward A TB and HIV handbook", "2 weeks"), ("Ward B TB and HIV handbook", "8 weeks")):
        assert title in shown and value in shown, shown[:2000]  # each document named, with its own value
    column_texts = [" ".join(m.value for m in c.markdown) for c in at.columns]
    assert any("Ward A" in t and "2 weeks" in t and "8 weeks" not in t for t in column_texts), column_texts
    assert any("Ward B" in t and "8 weeks" in t and "2 weeks" not in t for t in column_texts), column_texts


def test_weight_band_rows_stay_under_their_documents_and_differ_band_by_band(rt: Runtime) -> None:
    spaces = (f"user.{owner_key(user_of(rt, 'dr.chen').id)}",)
    result = rt.guideline_qa.answer("What is the dose of pyrazinamide for adults?", spaces=spaces,
                                    only_spaces=True)  # fmt: skip
    assert isinstance(result, QAAnswer), result
    assert not result.conflicts  # a band's fixed dose against the label's mg/kg: not comparable, kept
    rows = " ".join(b.text for b in result.bullets if b.evidence.kb.startswith("user."))
    assert "1200 mg" in rows or "1000 mg" in rows, [b.text for b in result.bullets]
    bands = [d for d in result.disagreements if "by weight band" in d.topic]
    assert len(bands) == 1, result.disagreements  # one difference: the 40-54/40-55 kg band (55-74/56-75 kg too)
    assert bands[0].values["Ward A TB and HIV handbook"][0] == "1200 mg (40-54 kg)", bands[0]
    assert bands[0].values["Ward B TB and HIV handbook"][0] == "1000 mg (40-55 kg)", bands[0]
