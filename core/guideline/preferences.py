"""Which sources a doctor wants Guideline QA to use, persisted per doctor.

A :class:`SourceChoice` names documents (by ``doc_id``) in the doctor's order of preference;
``only`` means "use these and nothing else" (e.g. the national manual only), otherwise the listed
documents' answers come first and the others follow. :class:`SourceChoices` keeps one JSON file
per doctor under ``<data_dir>/guideline_sources/`` (written atomically; a damaged file is a typed
error, never a silent reset).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from core.errors import CasebookError, InvalidInputError

if TYPE_CHECKING:
    from core.settings import Settings

__all__ = ["SourceChoice", "SourceChoices", "choices_for"]


class SourceChoice(BaseModel):
    """The documents a doctor chose, best first, and whether to use only them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    doc_ids: tuple[str, ...] = Field((), description="Chosen documents, in the doctor's order of preference.")
    only: bool = Field(False, description="Use only the chosen documents (else: chosen first, then the others).")

    def allows(self, doc_id: str) -> bool:
        """Whether evidence from ``doc_id`` may be used."""
        return not (self.only and self.doc_ids) or doc_id in self.doc_ids

    def rank(self, doc_id: str) -> int:
        """Where ``doc_id``'s answer goes: its place in the choice, after every chosen one when not chosen."""
        return self.doc_ids.index(doc_id) if doc_id in self.doc_ids else len(self.doc_ids)


class SourceChoices:
    """One :class:`SourceChoice` per doctor (owner key ``u<id>``), as JSON files in ``folder``."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def _path(self, owner: str) -> Path:
        if not re.fullmatch(r"u\d{1,12}", owner):
            raise InvalidInputError(f"not an owner key: {owner!r}", hint="Owner keys look like u12.")
        return self.folder / f"{owner}.json"

    def get(self, owner: str) -> SourceChoice:
        """The doctor's choice (the default, all documents, when none was saved)."""
        path = self._path(owner)
        if not path.exists():
            return SourceChoice()
        try:
            return SourceChoice.model_validate_json(path.read_text(encoding="utf-8"))
        except (ValidationError, OSError, UnicodeDecodeError) as exc:
            raise CasebookError(f"unreadable source choice {path.name}: {exc}",
                               hint="Choose the sources again; the file will be replaced.") from exc  # fmt: skip

    def put(self, owner: str, choice: SourceChoice) -> None:
        """Save the doctor's choice (atomically)."""
        path = self._path(owner)
        self.folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(choice.model_dump(mode="json"), fh)
        os.replace(tmp, path)


def choices_for(settings: Settings) -> SourceChoices:
    """The doctors' source choices of this installation (``<data_dir>/guideline_sources``)."""
    return SourceChoices(settings.paths.resolve(settings.paths.data_dir) / "guideline_sources")
