"""Two documents that agree on the asked point are not shown as differing because of rows beside it (issue 24).

"adult TB meningitis - total duration of treatment?" was answered from both guidelines' duration-by-site tables;
both say 12 months for meningitis, but the pleural row beside it (6 months) was drafted too, and a document's
values were the union over its bullets, so "Sources differ on duration" was shown. A document's values for a
slot now come from its bullets that mention the most of the question's words. The tables and questions below
are our own (demo data): agreeing sites show no difference, and a site where the documents truly differ
still does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.guideline.types import QAAnswer
from core.kb.types import Hit
from core.settings import Settings
from tests.conftest import make_settings
from tests.test_guideline_pipeline import qa_with
from tests.test_guideline_sources import INTL, NATL, h

# Each document's duration section as separate passages: the asked site's, and others' beside it.
A = [("meningitis", "Tuberculous meningitis is treated for a total duration of 12 months (2HRZE/10HR)."),
     ("pleural", "Pleural TB is treated for a total duration of 6 months (2HRZE/4HR)."),
     ("pericardial", "Pericardial TB is treated for a total duration of 6 months, with corticosteroids."),
     ("bone", "Bone and joint TB is treated for a total duration of 12 months.")]  # fmt: skip
B = [("meningitis", "Meningitis: the total duration of treatment is 12 months in the programme."),
     ("lymph", "Lymph node TB: the total duration of treatment is 9 months in the programme."),
     ("pericardial", "Pericardial TB: the total duration of treatment is 6 months in the programme."),
     ("bone", "Bone and joint TB: the total duration of treatment is 9 months in the programme.")]  # fmt: skip


def docs_for(site: str) -> dict[str, list[Hit]]:
    """Both documents' passages, the asked site's first (as a search for it ranks them), the others after."""

    def ranked(doc: str, rows: list[tuple[str, str]], meta: dict[str, object], path: str) -> list[Hit]:
        rows = sorted(rows, key=lambda r: r[0] != site)
        return [h(doc, 30 + k, text, (path, f"{path} by site of disease"), meta, 17, 0.9 - k / 100)
                for k, (_, text) in enumerate(rows)]  # fmt: skip

    return {"guidelines": [], "user": ranked("intl", A, INTL, "3.3 Duration"),
            "user.u7": ranked("natl", B, NATL, "4.3 Duration")}  # fmt: skip


AGREE = [
    ("meningitis", "adult TB meningitis - total duration of treatment?"),
    ("meningitis", "How long is tuberculous meningitis treated?"),
    ("meningitis", "total treatment length for meningitis TB in adults"),
    ("pericardial", "pericardial TB: how many months in total?"),
    ("pericardial", "total duration of treatment for TB pericarditis"),
]
DIFFER = [
    ("bone", "How long is bone and joint TB treated in total?"),
    ("bone", "total duration for an adult with bone and joint TB?"),
]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return make_settings(tmp_path)


@pytest.mark.parametrize(("site", "question"), AGREE)
def test_documents_that_agree_on_the_asked_site_show_no_difference(settings: Settings, site: str, question: str) -> None:
    qa = qa_with(settings, docs_for(site), llm=None)
    result = qa.answer(question, spaces=("user.u7", "user"))
    assert isinstance(result, QAAnswer), result
    assert not result.disagreements, [d.line() for d in result.disagreements]


@pytest.mark.parametrize(("site", "question"), DIFFER)
def test_documents_that_differ_on_the_asked_site_still_show_it(settings: Settings, site: str, question: str) -> None:
    qa = qa_with(settings, docs_for(site), llm=None)
    result = qa.answer(question, spaces=("user.u7", "user"))
    assert isinstance(result, QAAnswer), result
    assert [d.topic for d in result.disagreements] == ["duration or timing"], [d.line() for d in result.disagreements]
    values = result.disagreements[0].values
    assert any("9 months" in v for v in values[NATL["title"]]), values  # type: ignore[index]
