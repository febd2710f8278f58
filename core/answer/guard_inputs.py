"""The lists the output guard refuses by name, beside its allow-list: people and drugs.

``enforce(text, result, **refusal_lists(rt.settings))`` adds the user table's
names and the drug-label knowledge base's lexicon (proprietary, generic and
ingredient names, :class:`core.kb.lexicon.DrugLexicon`) to the guard's built-in
drug list. Both are read lazily and re-read every ``privacy.names_refresh_s``;
a database or knowledge base that cannot be read gives an empty list (the
allow-list still drops such words, with a less specific reason).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import TYPE_CHECKING, TypedDict

from core.errors import CasebookError
from core.privacy.egress import NamesFromDatabase

if TYPE_CHECKING:
    from core.settings import Settings

__all__ = ["RefusalLists", "refusal_lists"]

log = logging.getLogger(__name__)


class _Lists:
    """Names and drugs for one database and one knowledge-base root, refreshed on a timer."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
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
            root = self.settings.paths.resolve(self.settings.paths.index_dir)
            if not kb_link(root, "druglabels").exists():
                return self._drugs
            try:
                from core.kb import KnowledgeBase

                self._drugs = KnowledgeBase(self.settings).drug_lexicon().names()
            except (CasebookError, OSError) as exc:
                log.warning("Guard could not read the drug lexicon (%s); the allow-list still applies", exc)
            return self._drugs


@functools.lru_cache(maxsize=8)
def _lists(settings_json: str) -> _Lists:
    from core.settings import Settings

    return _Lists(Settings.model_validate_json(settings_json))


class RefusalLists(TypedDict):
    """The keyword arguments :func:`refusal_lists` gives ``enforce`` (typed, so ``**`` unpacks precisely)."""

    names: list[str]
    drugs: list[str]


def refusal_lists(settings: Settings) -> RefusalLists:
    """``{"names": [...], "drugs": [...]}`` for :func:`core.answer.guard.enforce` and ``guard_draft_sections``."""
    lists = _lists(settings.model_dump_json())  # one cache per distinct settings, like the pages' resources
    return {"names": lists.names(), "drugs": lists.drugs()}
