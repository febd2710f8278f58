"""The one settings object, assembled from the groups in :mod:`core.config`.

Every weight, threshold, path and backend name lives here, once, with a
description. Values come from (highest priority first):

1. keyword arguments to :func:`load_settings` (tests, the CLI's ``--set``),
2. environment variables ``CASEBOOK_<GROUP>__<FIELD>`` (for example
   ``CASEBOOK_STORE__URL=postgresql+psycopg://...``),
3. a YAML preset: ``core/presets/<name>.yaml`` or a path, chosen by the
   ``preset`` argument or ``CASEBOOK_PRESET``,
4. the field defaults of the groups.

Unknown keys anywhere are an error (``extra="forbid"``). ``docs/SETTINGS.md``
is generated from this module (``python -m core settings-doc``) and a test
keeps the two in step.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    InitSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from core.config import (
    REPO_ROOT,
    AskSettings,
    DemoSettings,
    EmbedSettings,
    GuidelineQASettings,
    ImagingSettings,
    KBSettings,
    LLMSettings,
    PacsSettings,
    PathSettings,
    PrivacySettings,
    ReportSettings,
    SafetySettings,
    SearchSettings,
    SelfRagSettings,
    StoreSettings,
    UISettings,
)
from core.errors import ConfigError

__all__ = [
    "PRESET_DIR",
    "REPO_ROOT",
    "DemoSettings",
    "EmbedSettings",
    "PathSettings",
    "SafetySettings",
    "SearchSettings",
    "Settings",
    "StoreSettings",
    "load_settings",
]

PRESET_DIR = Path(__file__).resolve().parent / "presets"
EMBEDDING_DIM = 512


class Settings(BaseSettings):
    """All Casebook settings. Build with :func:`load_settings`."""

    model_config = SettingsConfigDict(
        env_prefix="CASEBOOK_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    preset: str = Field("default", description="YAML preset: a name in core/presets/ or a path to a .yaml file.")
    paths: PathSettings = Field(default_factory=PathSettings, description="File locations.")
    store: StoreSettings = Field(default_factory=StoreSettings, description="Relational store.")
    embed: EmbedSettings = Field(default_factory=EmbedSettings, description="Text embedding model.")
    search: SearchSettings = Field(default_factory=SearchSettings, description="Similar-case search.")
    safety: SafetySettings = Field(default_factory=SafetySettings, description="Fail-closed thresholds.")
    demo: DemoSettings = Field(default_factory=DemoSettings, description="Demo data generation.")
    ask: AskSettings = Field(default_factory=AskSettings, description="Ask AI answers, confidence rule and rate limit.")
    llm: LLMSettings = Field(default_factory=LLMSettings, description="Language-model backends.")
    kb: KBSettings = Field(default_factory=KBSettings, description="Knowledge bases (guidelines, drug labels).")
    guideline: GuidelineQASettings = Field(
        default_factory=GuidelineQASettings, description="Guideline QA over guidelines and drug labels."
    )
    selfrag: SelfRagSettings = Field(default_factory=SelfRagSettings, description="Self-reflective RAG pipeline.")
    ui: UISettings = Field(default_factory=UISettings, description="Web workbench.")
    imaging: ImagingSettings = Field(
        default_factory=ImagingSettings, description="Medical images: store, import, de-identification."
    )
    privacy: PrivacySettings = Field(
        default_factory=PrivacySettings, description="De-identified egress to external language models."
    )
    pacs: PacsSettings = Field(
        default_factory=PacsSettings, description="Hospital PACS (DICOMweb) and FHIR endpoint: import and report export."
    )
    reports: ReportSettings = Field(
        default_factory=ReportSettings, description="Reading workflow: worklist, critical results, signing."
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Order: init kwargs, environment, YAML preset, defaults."""
        preset = None
        if isinstance(init_settings, InitSettingsSource):
            preset = init_settings.init_kwargs.get("preset")
        preset = preset or os.environ.get("CASEBOOK_PRESET") or "default"
        yaml_source = YamlConfigSettingsSource(settings_cls, yaml_file=preset_path(str(preset)))
        return (init_settings, env_settings, yaml_source)

    @property
    def database_url(self) -> str:
        """The effective SQLAlchemy URL."""
        if self.store.url:
            return self.store.url
        return f"sqlite:///{self.paths.resolve(self.paths.data_dir) / 'casebook.db'}"

    @property
    def record_key_path(self) -> Path:
        """The effective record key file (``store.record_key_file`` or ``<data_dir>/keys/records.key``)."""
        return self.paths.resolve(self.store.record_key_file or self.paths.data_dir / "keys" / "records.key")


def preset_path(preset: str) -> Path:
    """Resolve a preset name or path to an existing YAML file."""
    candidate = Path(preset)
    if candidate.suffix in {".yaml", ".yml"}:
        path = candidate if candidate.is_absolute() else Path.cwd() / candidate
    else:
        path = PRESET_DIR / f"{preset}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))
        raise ConfigError(f"Unknown settings preset {preset!r}; known presets: {', '.join(known)}")
    return path


def load_settings(preset: str | None = None, **overrides: Any) -> Settings:
    """Build the settings from overrides, environment, preset and defaults.

    Raises :class:`ConfigError` with every invalid field listed.
    """
    kwargs = dict(overrides)
    if preset is not None:
        kwargs["preset"] = preset
    try:
        return Settings(**kwargs)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"Invalid settings: {problems}") from exc
