"""Drafts that survive a reload: the editor's text kept as the doctor's own unsigned draft, and reopened.

The draft editor calls :func:`autosave_draft` each time the doctor commits an edit (a text area
commits when it loses focus): the first autosave creates an open draft owned by the doctor, each
later one updates that same draft from the version the editor holds. It goes through
:func:`~core.reports.store.save_draft`, so it never signs, changes only the author's open draft,
and a draft signed meanwhile (elsewhere) is refused, not overwritten; signed reports are never
touched at all (and the database refuses any change to one: migration 0003's triggers).

When a page opens a scan with no draft in the editor (a reload, a new session),
:func:`restorable_draft` gives the doctor's newest open draft of that scan, and :func:`restored_note`
the sentence the editor shows above it.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import InvalidInputError
from core.reports.drafts import DraftText, join_findings
from core.reports.reads import DraftRow, restorable_draft
from core.reports.store import save_draft
from core.store.db import Database

__all__ = ["Autosaved", "autosave_draft", "restorable_draft", "restored_note"]


@dataclass(frozen=True)
class Autosaved:
    """What an autosave did: the draft and its version now, or ``skipped`` with the reason nothing was written."""

    draft_id: int | None
    version: int
    skipped: str | None = None


def autosave_draft(
    db: Database,
    scan_id: str,
    doctor_id: int,
    sections: dict[str, str],
    *,
    draft_id: int | None,
    version: int,
) -> Autosaved:
    """Keep the editor's ``sections`` (comparison, findings, impression, recommendations) as the doctor's draft.

    ``draft_id`` and ``version`` are what the editor holds (``None`` and 0 before the first save).
    Text a draft cannot hold yet (no findings or no impression) is skipped, not refused: the
    doctor is still typing. A draft changed or signed elsewhere raises the error ``save_draft``
    raises (:class:`~core.errors.ConflictError`, :class:`~core.errors.ImmutableRecordError`).
    """
    draft = DraftText(
        join_findings(sections.get("comparison", ""), sections.get("findings", "")),
        sections.get("impression", ""),
        sections.get("recommendations", ""),
    )
    if not (draft.findings.strip() and draft.impression.strip()):
        return Autosaved(draft_id, version, skipped="a draft needs findings and an impression")
    if draft_id is not None and version < 1:
        raise InvalidInputError("An autosave of a saved draft needs the version the editor holds")
    saved = save_draft(
        db, scan_id, doctor_id, draft, draft_id=draft_id, expected_version=version if draft_id else None, autosave=True
    )
    return Autosaved(saved, version + 1 if draft_id else 1)


def restored_note(draft: DraftRow) -> str:
    """The line above a reopened draft, e.g. "Restored your unsigned draft #4, last saved 2026-11-27 12:04 UTC."."""
    return (
        f"Restored your unsigned draft #{draft.id:d}, last saved {draft.updated_at:%Y-%m-%d %H:%M} UTC. "
        "Edits are saved as you go; it is not signed."
    )
