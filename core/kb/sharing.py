"""Sharing a document of a doctor's own space: a request that a second doctor approves, audited.

See :mod:`core.kb.provenance` for why (the shared space is a write path into every doctor's
answers) and for the provenance each shared document keeps (uploader and approver).
"""

from __future__ import annotations

import json
import re
import shutil
import time
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from core import audit as audit_events
from core.errors import AccessDeniedError, InvalidInputError, NotFoundError
from core.kb.provenance import SHARED_SPACE, read_provenance

if TYPE_CHECKING:
    from core.kb.index.ingest import IngestReport
    from core.kb.spaces import DocumentSpaces
    from core.store.db import Database

__all__ = ["Sharing"]


class Sharing:
    """Requests to share a document of a doctor's own space, approved by a second doctor."""

    def __init__(self, spaces: DocumentSpaces, db: Database | None = None) -> None:
        self.spaces, self.db = spaces, db
        self.folder = spaces.files_root / "share-requests"

    def _audit(self, event: str, owner: str, request: str, outcome: str = "ok", **ids: Any) -> None:
        if self.db is not None:
            audit_events.record(self.db, event, int(owner.lstrip("u")), request, outcome=outcome, **ids)

    def request(self, owner: str, doc_id: str) -> str:
        """Ask to share ``doc_id`` of ``owner``'s own space; returns the request id (audited)."""
        from core.kb.spaces import space_of

        space = space_of(owner)
        docs = {d.doc_id: d for d in self.spaces.documents(owner, include_shared=False)}
        if doc_id not in docs:
            raise NotFoundError(f"No document {doc_id!r} in your documents", hint="Upload it to your space first.")
        sha = next(d[3] for d in self.spaces.kb.index(space).store.docs() if d[0] == doc_id)
        rid = uuid.uuid4().hex[:12]
        self.folder.mkdir(parents=True, exist_ok=True)
        # the identity the owner corrected (core.kb.docidentity) as of this request: what the approver sees
        identity = read_provenance(self.spaces.files_root / space).get(doc_id, {}).get("identity")
        entry = {"id": rid, "owner": owner, "space": space, "doc_id": doc_id, "sha": str(sha)[:16],
                 "title": docs[doc_id].title, "requested_at": time.time(), "identity": identity}  # fmt: skip
        (self.folder / f"{rid}.json").write_text(json.dumps(entry))
        self._audit(audit_events.SHARE_REQUEST, owner, rid, doc=doc_id)
        return rid

    def upload_and_request(
        self, owner: str, files: Sequence[tuple[str, bytes]], space: str = SHARED_SPACE
    ) -> tuple[IngestReport, list[str]]:
        """What a command-line ingest into a document space does: the page's path, never a shortcut.

        The files go to ``owner``'s own space as an upload does (size limit, bounded parsing,
        instruction-like sentences kept out, the uploader recorded); for the shared ``space`` a
        share request is filed for each document (audited), and nothing is shared until a
        second doctor approves it. A doctor's own space other than ``owner``'s is refused.
        """
        from core.kb.spaces import space_of

        self._doctor(owner)
        if space not in (SHARED_SPACE, space_of(owner)):
            raise AccessDeniedError(
                f"{space!r} is another doctor's document space",
                hint=f"Documents go to the owner's own space ({space_of(owner)}) or, after approval, the shared one.",
            )
        report = self.spaces.upload(owner, files)
        return report, [self.request(owner, doc_id) for doc_id in report.docs] if space == SHARED_SPACE else []

    def _doctor(self, owner: str) -> None:
        """Refuse an owner key that is not ``u<id>`` of a doctor (checked when a database is at hand)."""
        if not re.fullmatch(r"u\d{1,12}", owner):
            raise InvalidInputError(f"{owner!r} is not an owner key", hint="Use u<user id>, e.g. u3.")
        if self.db is None:
            return
        from sqlalchemy import select

        from core.store.models import User

        with self.db.read_only() as s:
            role = s.scalar(select(User.role).where(User.id == int(owner[1:])))
        if role != "doctor":
            raise AccessDeniedError(f"{owner} is not a doctor", hint="Documents are uploaded and shared by doctors.")

    def pending(self) -> list[dict[str, Any]]:
        """Open requests, oldest first."""
        out = [json.loads(p.read_text()) for p in self.folder.glob("*.json")] if self.folder.is_dir() else []
        return sorted(out, key=lambda e: e["requested_at"])

    def _take(self, rid: str) -> dict[str, Any]:
        path = self.folder / f"{re.sub(r'[^0-9a-f]', '', rid)}.json"
        if not path.is_file():
            raise NotFoundError(f"No open share request {rid!r}", hint="Reload the list of requests.")
        return dict(json.loads(path.read_text()))

    def approve(self, approver: str, rid: str) -> list[str]:
        """Ingest the requested original into the shared space; the requester may not approve (audited)."""
        from core.kb.index.ingest import IngestReport

        entry = self._take(rid)
        if approver == entry["owner"]:
            self._audit(audit_events.SHARE_APPROVE, approver, rid, outcome="refused", doc=entry["doc_id"])
            raise AccessDeniedError("Sharing needs a second doctor: you cannot approve your own request")
        originals = sorted((self.spaces.files_root / entry["space"] / entry["sha"]).glob("*"))
        if not originals:
            raise NotFoundError("The requested document is no longer kept", hint="Ask for it to be uploaded again.")
        kept = self.spaces.files_root / SHARED_SPACE / entry["sha"] / originals[0].name  # the shared space keeps its own
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(originals[0], kept)
        report = IngestReport(kb=SHARED_SPACE)
        self.spaces.ingest_named(SHARED_SPACE, self.spaces.kind_of(kept), [(kept, kept.name)], report,
                                 uploader=entry["owner"], approved_by=approver,
                                 identities={entry["doc_id"]: entry["identity"]} if entry.get("identity") else None)  # fmt: skip
        (self.folder / f"{rid}.json").unlink(missing_ok=True)
        self._audit(audit_events.SHARE_APPROVE, approver, rid, doc=entry["doc_id"], requester=entry["owner"], docs=len(report.docs))
        return report.docs

    def reject(self, approver: str, rid: str) -> None:
        """Close a request without sharing (audited)."""
        entry = self._take(rid)
        (self.folder / f"{rid}.json").unlink(missing_ok=True)
        self._audit(audit_events.SHARE_REJECT, approver, rid, doc=entry["doc_id"], requester=entry["owner"])
