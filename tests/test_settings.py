"""Settings: one object, documented, strict, layered."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ConfigError
from core.settings import REPO_ROOT, load_settings
from core.settings_doc import render_settings_doc, undocumented_fields


def test_every_setting_has_a_description() -> None:
    assert undocumented_fields() == []


def test_settings_doc_is_current() -> None:
    doc = (REPO_ROOT / "docs" / "SETTINGS.md").read_text()
    assert doc == render_settings_doc(), "run `python -m core settings-doc > docs/SETTINGS.md`"


def test_unknown_keys_are_rejected() -> None:
    with pytest.raises(ConfigError, match=r"search\.bogus"):
        load_settings(search={"bogus": 1})


def test_environment_overrides_preset_and_kwargs_override_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    preset = tmp_path / "p.yaml"
    preset.write_text("search:\n  top_k: 9\nsafety:\n  min_scan_confidence: 0.4\n")
    assert load_settings(str(preset)).search.top_k == 9
    monkeypatch.setenv("CASEBOOK_SEARCH__TOP_K", "11")
    s = load_settings(str(preset))
    assert (s.search.top_k, s.safety.min_scan_confidence) == (11, 0.4)
    assert load_settings(str(preset), search={"top_k": 3}).search.top_k == 3


def test_unknown_preset_names_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="default"):
        load_settings("no-such-preset")


def test_invalid_value_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASEBOOK_SAFETY__MIN_SCAN_CONFIDENCE", "1.5")
    with pytest.raises(ConfigError, match="min_scan_confidence"):
        load_settings()


def test_default_database_is_sqlite_under_data_dir(tmp_path: Path) -> None:
    s = load_settings(paths={"data_dir": tmp_path})
    assert s.database_url == f"sqlite:///{tmp_path / 'casebook.db'}"
