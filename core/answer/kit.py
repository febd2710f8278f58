"""What Ask AI and report drafts are handed: one small object built by the runtime.

``core/answer`` and ``core/reports`` never import :mod:`core.runtime` or :mod:`core.demo`
(``tests/test_import_boundaries.py``). They receive an :class:`AskKit` holding the
parts they use: the settings, the database, the case search, the guard's refusal lists,
the condition lexicon built from the case store's own diagnoses, and the question
reader (the intent classifier over the project's sentence embeddings). The runtime builds
one per process (``Runtime.ask_kit``); a caller may pass the runtime itself, which the
features turn into its kit with :func:`kit_of`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from core.answer.guard_inputs import GuardLists
    from core.answer.lexicon import ConditionLexicon
    from core.answer.reader import QuestionReader
    from core.cases.search import CaseSearch
    from core.settings import Settings
    from core.store.db import Database

__all__ = ["AskKit", "HasAskKit", "kit_of"]


@dataclass(frozen=True)
class AskKit:
    """The parts Ask AI and drafts use, built once by the runtime."""

    settings: Settings
    db: Database
    case_search: CaseSearch
    guard_lists: GuardLists
    conditions: ConditionLexicon
    reader: QuestionReader


@runtime_checkable
class HasAskKit(Protocol):
    """Anything that can hand out an :class:`AskKit` (the runtime)."""

    @property
    def ask_kit(self) -> AskKit:
        """The kit for Ask AI and drafts."""
        ...


def kit_of(source: AskKit | HasAskKit) -> AskKit:
    """``source`` itself when it is a kit, else the kit it holds."""
    return source if isinstance(source, AskKit) else source.ask_kit
