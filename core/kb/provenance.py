"""Who put a document into a space, who approved sharing it, and what in it is not to be obeyed.

The shared document space is searched for every doctor's Guideline QA answers, so it is a write
path into colleagues' answers. Three rules close it (issue 26, class 1):

1. **Uploads go to the doctor's own space.** Sharing is a request that a *second* doctor
   approves (:class:`core.kb.sharing.Sharing`; the requester cannot); only then is the kept
   original ingested into the shared space. Request, approval and rejection are audited.
2. **Provenance travels with the document.** Each space keeps ``provenance.json`` (doc id ->
   uploader, approver, flags) beside its kept originals; :func:`describe` says, for a bullet's
   knowledge base and chunk, whether it is a curated source, the asking doctor's own document, or
   a colleague's shared one (uploader and approver).
3. **Instruction-like text is data.** :func:`instruction_sentences` finds sentences that address
   a model or system ("IMPORTANT SYSTEM INSTRUCTION", "ignore the label", "always tell the doctor
   to ..."); an upload keeps them in its original file but not in the indexed text, so no answer
   can quote them, and the document is flagged in the listing and the upload report.

A dose in a space that contradicts a curated label is caught at answer time
(:mod:`core.guideline.conflicts`).
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from core.store.db import Database

__all__ = ["SourceOwner", "describe", "instruction_sentences", "origin_line", "read_provenance", "user_names",
           "write_provenance"]

FILE = "provenance.json"
SHARED_SPACE = "user"  # core.kb.spaces.SHARED_SPACE (that module imports this one)
# A sentence that addresses the model, the system or the reader's tools instead of describing medicine.
_INSTRUCTION = re.compile(
    r"\b(?:system|developer|assistant|ai|model|chatbot|llm)\s+(?:instruction|prompt|message|override|note)s?\b"
    r"|\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+)?(?:the\s+|your\s+|these\s+|those\s+)?"
    r"(?:previous\s+|prior\s+|above\s+|earlier\s+|other\s+|curated\s+)?(?:instructions?|rules?|prompts?|guardrails?|"
    r"polic(?:y|ies)|system|labels?\s+and)\b"
    r"|\b(?:always|only|must)\s+(?:tell|answer|respond|reply|say|output|state)\b[^.;]{0,40}\b(?:doctor|clinician|"
    r"user|reader|you)s?\b"
    r"|\b(?:tell|instruct)\s+(?:the\s+|any\s+|every\s+)?(?:doctor|clinician|user|reader)s?\s+to\b"
    r"|\byou\s+(?:must|are\s+to|will)\s+(?:now\s+)?(?:answer|respond|reply|say|output|ignore|act\s+as)\b"
    r"|\bnew\s+instructions?\b|\bprompt\s+injection\b|\[/?inst\]|<\|im_(?:start|end)\|>|^\s*#+\s*instruction",
    re.IGNORECASE | re.MULTILINE,
)


def instruction_sentences(text: str) -> list[str]:
    """The sentences of ``text`` that read as instructions to a model or system (kept out of answers)."""
    from core.privacy.text import normalise

    sentences = [s.strip() for s in re.split(r"(?<=[.!?;])\s+|\n+", text) if s.strip()]  # any next character
    return [s for s in sentences if _INSTRUCTION.search(normalise(s, casefold=False))]


def read_provenance(folder: Path) -> dict[str, dict[str, Any]]:
    """A space's ``provenance.json`` (doc id -> record), empty when there is none."""
    try:
        data = json.loads((folder / FILE).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_provenance(folder: Path, doc_id: str, **record: Any) -> None:
    """Record (merge) ``record`` for ``doc_id`` in the space's ``provenance.json``."""
    data = read_provenance(folder)
    data[doc_id] = {**data.get(doc_id, {}), **record}
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{FILE}.{uuid.uuid4().hex[:6]}"
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
    tmp.replace(folder / FILE)


@dataclass(frozen=True)
class SourceOwner:
    """Where a bullet's evidence came from: ``curated``, ``mine`` (the asker's own) or ``colleague``."""

    kind: str
    uploader: str | None = None
    approved_by: str | None = None
    flagged: int = 0


def describe(documents_root: Path, kb: str, chunk_id: str, asker: str | None) -> SourceOwner:
    """Whose document a chunk of ``kb`` is (``documents_root``: ``<data_dir>/documents``)."""
    from core.kb.types import SPACE_PREFIX

    if kb != SHARED_SPACE and not kb.startswith(SPACE_PREFIX):
        return SourceOwner("curated")
    doc_id = chunk_id.split("#", 1)[0]
    record = read_provenance(documents_root / kb).get(doc_id, {})
    uploader = record.get("uploader") or (kb.removeprefix(SPACE_PREFIX) if kb != SHARED_SPACE else None)
    kind = "mine" if uploader is not None and uploader == asker and kb != SHARED_SPACE else "colleague"
    return SourceOwner(kind, uploader, record.get("approved_by"), int(record.get("flagged", 0)))


def origin_line(owner: SourceOwner, name_of: Callable[[str], str], curated: str) -> str:
    """Whose document a bullet came from, in words ("Your document", "Dr Chen's document, shared with ...")."""
    if owner.kind == "curated":
        return f"Curated source: {curated}"
    who = name_of(owner.uploader) if owner.uploader else "an unknown uploader"
    flagged = f" ({owner.flagged} instruction-like sentence(s) in it kept out of answers)" if owner.flagged else ""
    if owner.kind == "mine":
        return f"Your own uploaded document: {curated}{flagged}"
    approved = f", shared with the approval of {name_of(owner.approved_by)}" if owner.approved_by else ""
    return f"Uploaded by {who}, not a curated source{approved}: {curated}{flagged}"


def user_names(db: Database) -> Callable[[str], str]:
    """Owner key (``u12``) -> the user's display name, read once from ``db``."""
    from sqlalchemy import select

    from core.store.models import User

    with db.read_only() as s:
        names = {f"u{i}": str(n) for i, n in s.execute(select(User.id, User.display_name)).all()}
    return lambda key: names.get(key, key)
