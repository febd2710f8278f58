"""Worklist paging over a generated store of a few hundred studies (issue 29), on SQLite and PostgreSQL.

Pages cut the filtered, ordered list: every study is on exactly one page, in priority order
(critical AI readings first, then the oldest); filters and search apply before paging; next /
previous study walks the whole order across page boundaries. The page itself is checked with
AppTest (Previous / Next page, a filter going back to page 1, Scan Review's next study across a
page boundary).
"""

from __future__ import annotations

import datetime as dt
import math

import pytest
from sqlalchemy import select

from core.errors import InvalidInputError
from core.runtime import Runtime
from core.store.models import Scan, User
from core.worklist import WorkItem, neighbours, page_of, paginate, worklist
from tests.test_app_support import page, texts, use_root, user_of

CRITICAL = ("tension pneumothorax", "pneumothorax", "ischemic stroke")
ANATOMIES = ("lung", "brain", "liver", "bone")
N = 300
BASE = dt.datetime(2026, 6, 1, 12, 0, 30, tzinfo=dt.UTC)  # 30 s: never the same instant as a demo scan


def _generated_diagnosis(k: int) -> str:
    return "Tension pneumothorax" if k % 7 == 0 else f"Generated finding {k:03d}"


def _generate(rt: Runtime, n: int = N) -> None:
    """``n`` studies over the demo patients: every 7th a critical AI reading, four anatomies, all different ages."""
    with rt.db.session() as s:
        patients = list(s.scalars(select(User.id).where(User.role == "patient").order_by(User.id)))
        for k in range(n):
            s.add(
                Scan(
                    id=f"scan_gen{k:05d}",
                    patient_id=patients[k % len(patients)],
                    anatomy=ANATOMIES[k % 4],
                    ai_diagnosis=_generated_diagnosis(k),
                    ai_confidence=0.5 + (k % 50) / 100,
                    # 7919 is prime to the minutes of a year: n distinct ages, not in insertion order
                    created_at=BASE - dt.timedelta(minutes=(k * 7919) % 525_600),
                )
            )


def _key(i: WorkItem) -> tuple[bool, bool, dt.datetime]:
    return (i.status == "signed", not i.critical, i.created_at)


def test_pages_cover_every_study_once_in_priority_order(rw: Runtime) -> None:
    _generate(rw)
    doctor = user_of(rw, "dr.chen")
    full = worklist(rw.db, doctor, CRITICAL)
    assert len(full) >= N and [_key(i) for i in full] == sorted(_key(i) for i in full)
    size = 25
    pages = [paginate(full, n, size) for n in range(1, math.ceil(len(full) / size) + 1)]
    assert [i.scan_id for p in pages for i in p.items] == [i.scan_id for i in full], "no study lost or repeated"
    assert all(len(p.items) == size for p in pages[:-1]) and 0 < len(pages[-1].items) <= size
    assert [(p.first, p.last) for p in pages[:2]] == [(1, size), (size + 1, 2 * size)]
    assert pages[-1].last == len(full) and not pages[-1].has_next and not pages[0].has_previous
    critical = sum(1 for k in range(N) if k % 7 == 0)  # the generated ones; the demo adds its own
    assert all(i.critical for p in pages[: critical // size] for i in p.items), "critical readings fill the first pages"
    assert paginate(full, 0, size).number == 1 and paginate(full, 10_000, size).number == len(pages)
    empty = paginate([], 3, size)
    assert (empty.items, empty.number, empty.pages, empty.first, empty.last) == ([], 1, 1, 0, 0)
    with pytest.raises(InvalidInputError):
        paginate(full, 1, 0)
    # next / previous study crosses the boundary between page 1 and page 2
    order = [i.scan_id for i in full]
    end_of_one, start_of_two = pages[0].items[-1].scan_id, pages[1].items[0].scan_id
    assert neighbours(order, end_of_one)[1] == start_of_two and neighbours(order, start_of_two)[0] == end_of_one
    assert (page_of(order, end_of_one, size), page_of(order, start_of_two, size), page_of(order, "nope", size)) == (1, 2, 1)


def test_filters_and_search_apply_before_paging(rw: Runtime) -> None:
    _generate(rw)
    doctor = user_of(rw, "dr.chen")
    brain = worklist(rw.db, doctor, CRITICAL, anatomy=["brain"], query="generated finding")
    expected = {f"scan_gen{k:05d}" for k in range(N) if ANATOMIES[k % 4] == "brain" and k % 7}
    assert {i.scan_id for i in brain} == expected
    pages = [paginate(brain, n, 10) for n in range(1, paginate(brain, 1, 10).pages + 1)]
    assert pages[0].total == len(expected) and sum(len(p.items) for p in pages) == len(expected)
    assert [i.scan_id for p in pages for i in p.items] == [i.scan_id for i in brain]
    assert [i.created_at for i in brain] == sorted(i.created_at for i in brain), "oldest first within the filter"
    critical = worklist(rw.db, doctor, CRITICAL, critical_only=True, query="tension")
    assert {f"scan_gen{k:05d}" for k in range(0, N, 7)} <= {i.scan_id for i in critical}
    assert paginate(critical, 2, 20).items == critical[20:40]


@pytest.fixture()
def paged(fresh: Runtime, monkeypatch: pytest.MonkeyPatch) -> Runtime:
    """The demo store with the generated studies, served with 20 studies a page."""
    _generate(fresh)
    use_root(fresh.settings.paths.data_dir.parent, monkeypatch)
    monkeypatch.setenv("CASEBOOK_UI__PAGE_SIZE", "20")
    return fresh


def _shown(at: object) -> list[str]:
    """The generated diagnoses on the page, top to bottom (each names its study)."""
    import re

    return re.findall(r"AI reading: (Generated finding \d{3})", texts(at))  # type: ignore[arg-type]


def test_worklist_page_pages_and_filters_first(paged: Runtime) -> None:
    doctor = user_of(paged, "dr.chen")
    full = worklist(paged.db, doctor, CRITICAL, status=["unread", "draft"])
    at = page("app", doctor).run()  # through app.py (the rows link to Scan Review): log-in lands here
    assert not at.exception
    pages = math.ceil(len(full) / 20)
    assert f"Page 1 of {pages} · studies 1–20 of {len(full)}" in texts(at)
    assert at.session_state["worklist_order"] == [i.scan_id for i in full], "next study walks every page"
    assert at.button(key="wl-prev").disabled and not at.button(key="wl-next").disabled
    at.button(key="wl-next").click().run()
    assert f"Page 2 of {pages} · studies 21–40" in texts(at)
    assert _shown(at) == [i.diagnosis for i in full[20:40] if i.diagnosis.startswith("Generated")]
    at.text_input(key="wl-query").set_value("generated finding 2").run()  # a filter starts again at page 1
    matching = [i for i in full if "generated finding 2" in i.diagnosis.lower()]
    assert f"Page 1 of {math.ceil(len(matching) / 20)} · studies 1–20 of {len(matching)}" in texts(at)
    assert _shown(at) == [i.diagnosis for i in matching[:20]]


def test_next_study_crosses_a_page_boundary_and_the_worklist_opens_on_its_page(paged: Runtime) -> None:
    doctor = user_of(paged, "dr.chen")
    order = [i.scan_id for i in worklist(paged.db, doctor, CRITICAL, status=["unread", "draft"])]
    review = page("scan_review", doctor, order[19])  # the last study of page 1
    review.session_state["worklist_order"] = order
    review.run()
    assert not review.exception and "study 20 of" in texts(review)
    review.button(key="next-study").click().run()
    assert review.session_state["scan_id"] == order[20] and "study 21 of" in texts(review)
    back = page("app", doctor)
    back.session_state["scan_id"] = order[20]
    back.run()
    assert "Page 2 of" in texts(back), "back from a study on page 2, the worklist shows page 2"

