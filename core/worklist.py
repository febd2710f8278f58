"""The reading worklist: a doctor's studies with their report status, most urgent first.

Status per scan: ``signed`` when a signed report exists, ``draft`` when the doctor has an
open saved draft, else ``unread``. Priority: a critical AI reading (a finding named in
``reports.critical_findings``) before the rest; signed studies last; within a group the
oldest study first (it has waited longest). Filters by status, anatomy and critical only,
and a search over patient name, anatomy and AI reading. Doctors only: a patient's list
is :func:`core.auth.visible_scans`.

Paging (:func:`paginate`, ``ui.page_size`` rows a page) cuts the filtered, ordered list: filters
and search apply to every study before a page is cut, so page 2 continues page 1's order.
Next / previous study walks the whole filtered order (:func:`neighbours`), across pages;
:func:`page_of` finds the page holding a study.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select

from core.auth import CurrentUser, visible_scans
from core.errors import AccessDeniedError, InvalidInputError
from core.store.db import Database
from core.store.models import Report, ReportDraft

__all__ = [
    "STATUSES",
    "WorkItem",
    "WorkPage",
    "is_critical",
    "neighbours",
    "page_of",
    "paginate",
    "reading_findings",
    "worklist",
]

Status = Literal["unread", "draft", "signed"]
STATUSES: tuple[Status, ...] = ("unread", "draft", "signed")


@dataclass(frozen=True)
class WorkItem:
    """One study on the worklist (``patient`` is the display name: PHI, doctors only)."""

    scan_id: str
    patient: str
    anatomy: str
    diagnosis: str
    confidence: float
    created_at: dt.datetime
    status: Status
    critical: bool


def reading_findings(diagnosis: str, critical_findings: Iterable[str]) -> set[str]:
    """The findings of the critical list (lower case) that the AI reading names (case-insensitive substring)."""
    text = diagnosis.lower()
    return {term.strip().lower() for term in critical_findings if term.strip() and term.strip().lower() in text}


def is_critical(diagnosis: str, critical_findings: Iterable[str]) -> bool:
    """True when the AI reading names a finding on the critical list (:func:`reading_findings`)."""
    return bool(reading_findings(diagnosis, critical_findings))


def _priority(item: WorkItem) -> tuple[int, int, dt.datetime]:
    return (item.status == "signed", not item.critical, item.created_at)


def worklist(
    db: Database,
    user: CurrentUser,
    critical_findings: Sequence[str],
    *,
    status: Iterable[str] | None = None,
    anatomy: Iterable[str] | None = None,
    critical_only: bool = False,
    query: str = "",
) -> list[WorkItem]:
    """The doctor's studies, filtered, in priority order (critical first, then the oldest)."""
    if not user.is_doctor:
        raise AccessDeniedError("The worklist is for doctors")
    scans = visible_scans(db, user)
    with db.read_only() as s:
        signed = set(s.scalars(select(Report.scan_id).where(Report.signed_at.is_not(None))))
        drafted = set(
            s.scalars(
                select(ReportDraft.scan_id).where(ReportDraft.author_id == user.id, ReportDraft.status == "open")
            )
        )
    items = [
        WorkItem(
            r.scan_id, r.patient, r.anatomy, r.diagnosis, r.confidence, r.created_at,
            "signed" if r.scan_id in signed else "draft" if r.scan_id in drafted else "unread",
            is_critical(r.diagnosis, critical_findings),
        )
        for r in scans
    ]
    wanted_status = set(status) if status else None
    wanted_anatomy = set(anatomy) if anatomy else None
    q = query.strip().lower()
    out = [
        i
        for i in items
        if (wanted_status is None or i.status in wanted_status)
        and (wanted_anatomy is None or i.anatomy in wanted_anatomy)
        and (not critical_only or i.critical)
        and (not q or q in f"{i.patient} {i.anatomy} {i.diagnosis}".lower())
    ]
    return sorted(out, key=_priority)


def neighbours(ids: Sequence[str], scan_id: str) -> tuple[str | None, str | None]:
    """The previous and next scan id around ``scan_id`` in worklist order (None at either end; absent: the first)."""
    if scan_id not in ids:
        return None, (ids[0] if ids else None)
    k = ids.index(scan_id)
    return (ids[k - 1] if k > 0 else None), (ids[k + 1] if k + 1 < len(ids) else None)


@dataclass(frozen=True)
class WorkPage:
    """One page of the worklist: its ``items``, page ``number`` (1-based) of ``pages``, and ``total`` studies."""

    items: list[WorkItem]
    number: int
    pages: int
    total: int
    first: int  # 1-based position of the page's first study in the whole list (0 when the list is empty)

    @property
    def last(self) -> int:
        """1-based position of the page's last study (0 when the list is empty)."""
        return self.first + len(self.items) - 1 if self.items else 0

    @property
    def has_previous(self) -> bool:
        """A page comes before this one."""
        return self.number > 1

    @property
    def has_next(self) -> bool:
        """A page comes after this one."""
        return self.number < self.pages


def _size(page_size: int) -> int:
    if page_size < 1:
        raise InvalidInputError(f"A worklist page holds at least one study, not {page_size}", hint="Set ui.page_size.")
    return page_size


def paginate(items: Sequence[WorkItem], number: int, page_size: int) -> WorkPage:
    """Page ``number`` of ``items`` in their order, ``page_size`` a page; a number out of range is clamped."""
    size = _size(page_size)
    pages = max(1, math.ceil(len(items) / size))
    number = min(max(1, number), pages)
    start = (number - 1) * size
    return WorkPage(list(items[start : start + size]), number, pages, len(items), start + 1 if items else 0)


def page_of(ids: Sequence[str], scan_id: str, page_size: int) -> int:
    """The page (1-based) that holds ``scan_id`` in worklist order ``ids``; 1 when it is not there."""
    size = _size(page_size)
    return ids.index(scan_id) // size + 1 if scan_id in ids else 1
