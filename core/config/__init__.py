"""Every settings group, in one leaf package that imports no feature code.

Each module holds the group (or groups) of one area; :mod:`core.settings`
assembles them into the one ``Settings`` object and loads it. Importing this
package costs pydantic and the standard library only, so ``import core.settings``
stays light (a test checks that it loads no ``core.kb``, ``core.llm`` or
``core.selfrag`` module).

| module            | group(s)                                                                  |
|-------------------|---------------------------------------------------------------------------|
| ``common``        | paths, store, embed, search, safety, demo, ui (the application shell)     |
| ``ask``           | ``ask``: Ask AI answers and report drafts                                 |
| ``llm``           | ``llm``: language-model backends                                          |
| ``kb``            | ``kb``: knowledge bases                                                   |
| ``guideline``     | ``guideline``: Guideline QA (defaults of its word lists: ``guideline_vocab``) |
| ``selfrag``       | ``selfrag``: self-reflective RAG                                          |
| ``imaging``       | ``imaging``: medical images                                               |
| ``privacy``       | ``privacy``: de-identified egress                                         |
| ``pacs``          | ``pacs``: the hospital PACS (DICOMweb) and FHIR endpoint                  |
| ``reports``       | ``reports``: worklist priority, critical results, signing                 |
"""

from __future__ import annotations

from core.config.ask import AskSettings
from core.config.common import (
    REPO_ROOT,
    DemoSettings,
    EmbedSettings,
    Group,
    PathSettings,
    SafetySettings,
    SearchSettings,
    StoreSettings,
    UISettings,
)
from core.config.guideline import GuidelineQASettings
from core.config.imaging import ImagingSettings
from core.config.kb import KBSettings
from core.config.llm import LLMBackendName, LLMSettings
from core.config.pacs import PacsSettings
from core.config.privacy import PrivacySettings
from core.config.reports import ReportSettings
from core.config.selfrag import CriticName, RetrievalMode, SelfRagSettings

__all__ = [
    "REPO_ROOT",
    "AskSettings",
    "CriticName",
    "DemoSettings",
    "EmbedSettings",
    "Group",
    "GuidelineQASettings",
    "ImagingSettings",
    "KBSettings",
    "LLMBackendName",
    "LLMSettings",
    "PacsSettings",
    "PathSettings",
    "PrivacySettings",
    "ReportSettings",
    "RetrievalMode",
    "SafetySettings",
    "SearchSettings",
    "SelfRagSettings",
    "StoreSettings",
    "UISettings",
]
