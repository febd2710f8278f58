"""The lists the output guard refuses by name, beside its allow-list: people and drugs.

``enforce(text, result, **refusal_lists(rt))`` adds the user table's
names and the drug-label knowledge base's lexicon (proprietary, generic and
ingredient names, :class:`core.kb.lexicon.DrugLexicon`) to the guard's built-in
drug list. Both are read lazily and re-read every ``privacy.names_refresh_s``;
a database or knowledge base that cannot be read gives an empty list (the
allow-list still drops such words, with a less specific reason).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Protocol, TypedDict

from core.errors import CasebookError
from core.privacy.egress import NamesFromDatabase

if TYPE_CHECKING:
    from core.kb.base import KnowledgeBase
    from core.settings import Settings

__all__ = ["GuardLists", "HasGuardLists", "RefusalLists", "refusal_lists"]

log = logging.getLogger(__name__)


class GuardLists:
    """Names and drugs for one database and the runtime's knowledge bases, refreshed on a timer."""

    def __init__(self, settings: Settings, kb: KnowledgeBase) -> None:
        self.settings = settings
        self.kb = kb
        self.names = NamesFromDatabase(settings.database_url, settings.privacy.names_refresh_s)
        self._drugs: list[str] = []
        self._read_at = -float("inf")
        self._lock = threading.Lock()

    def drugs(self) -> list[str]:
        """The drug-label lexicon's names (empty when no drug-label knowledge base is built)."""
        from core.kb.index.builder import kb_link

        with self._lock:
            if time.monotonic() - self._read_at < self.settings.privacy.names_refresh_s:
                return self._drugs
            self._read_at = time.monotonic()
            if not kb_link(self.kb.root, "druglabels").exists():
                return self._drugs
            try:
                self._drugs = self.kb.drug_lexicon().names()  # the open index, re-opened when a new version is in
            except (CasebookError, OSError) as exc:
                log.warning("Guard could not read the drug lexicon (%s); the allow-list still applies", exc)
            return self._drugs


class RefusalLists(TypedDict):
    """The keyword arguments :func:`refusal_lists` gives ``enforce`` (typed, so ``**`` unpacks precisely)."""

    names: list[str]
    drugs: list[str]


class HasGuardLists(Protocol):
    """Anything holding the guard's lists (the runtime, or the kit it hands to Ask AI and drafts)."""

    @property
    def guard_lists(self) -> GuardLists:
        """The names and drugs the guard refuses."""
        ...


def refusal_lists(rt: HasGuardLists) -> RefusalLists:
    """``{"names": [...], "drugs": [...]}`` for :func:`core.answer.guard.enforce` and ``guard_draft_sections``."""
    lists = rt.guard_lists  # one per runtime, over its knowledge bases
    return {"names": lists.names(), "drugs": lists.drugs()}
