"""core.config: a leaf package (``import core.settings`` stays light); renamed settings keep their old names."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from core.cli import build_parser, settings_from_args
from core.errors import ConfigError
from core.settings import REPO_ROOT, Settings, load_settings
from core.settings_doc import renamed_settings

_PROBE = """
import json, sys
import core.settings
print(json.dumps(sorted(m for m in sys.modules if m == "core" or m.startswith("core."))))
"""


def _modules_loaded_by(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True, timeout=120
    )
    loaded: list[str] = json.loads(out.stdout.strip().splitlines()[-1])
    return loaded


def test_import_core_settings_loads_no_feature_package() -> None:
    loaded = _modules_loaded_by(_PROBE)
    heavy = [m for m in loaded if m.split(".")[:2] in (["core", "kb"], ["core", "selfrag"], ["core", "llm"])]
    assert heavy == [], f"import core.settings pulled in feature code: {heavy}"
    # Only the config package, the error tree and the settings module itself.
    # core.text (stdlib only) gives the guideline stop words their shared English base.
    light = {"core", "core.errors", "core.settings", "core.text"}
    assert set(loaded) <= light | {m for m in loaded if m.startswith("core.config")}


def test_config_package_imports_no_feature_code() -> None:
    loaded = _modules_loaded_by(_PROBE.replace("import core.settings", "import core.config"))
    assert [m for m in loaded if not m.startswith("core.config") and m not in {"core", "core.errors", "core.text"}] == []


def _get(settings: Settings, dotted: str) -> Any:
    node: Any = settings
    for part in dotted.split("."):
        node = getattr(node, part)
    return node


def test_new_nested_names_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASEBOOK_KB__CORPUS__SHARD_ROWS", "1234")
    monkeypatch.setenv("CASEBOOK_LLM__LLAMACPP__N_CTX", "2048")
    monkeypatch.setenv("CASEBOOK_LLM__OPENAI__BASE_URL", "http://127.0.0.1:9/v1")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the new names raise no deprecation warning
        s = load_settings()
    assert (s.kb.corpus.shard_rows, s.llm.llamacpp.n_ctx, s.llm.openai.base_url) == (1234, 2048, "http://127.0.0.1:9/v1")


@pytest.mark.parametrize(("old", "new"), renamed_settings())
def test_every_old_flat_name_still_sets_its_new_field(old: str, new: str) -> None:
    group, flat = old.split(".", 1)
    value = _get(Settings(), new)  # the default, so every field type accepts it
    probe = {"llm.llamacpp.threads": 3, "kb.corpus.shard_rows": 7, "llm.openai.model": "m-7"}.get(new, value)
    with pytest.warns(FutureWarning, match=rf"{re.escape(old)} is deprecated; use {re.escape(new)}"):
        s = load_settings(**{group: {flat: probe}})
    assert _get(s, new) == probe


def test_old_names_work_from_environment_preset_and_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("CASEBOOK_LLM__GROQ_MODEL", "env-model")
    monkeypatch.setenv("CASEBOOK_KB__CORPUS_QUERY_EMBED", '{"pubmed": {"query_prefix": "query: "}}')
    preset = tmp_path / "old.yaml"
    preset.write_text("llm:\n  threads: 1\n  hf_model_path: /models/x\nkb:\n  corpus_ann: hnsw-sq\n")
    with pytest.warns(FutureWarning):
        s = load_settings(str(preset))
    assert s.llm.groq.model == "env-model"
    assert s.kb.corpus.query_embed == {"pubmed": {"query_prefix": "query: "}}
    assert (s.llm.llamacpp.threads, str(s.llm.transformers.model_path), s.kb.corpus.ann) == (1, "/models/x", "hnsw-sq")
    args = build_parser().parse_args(["--set", "llm.n_ctx=1024", "--set", "kb.corpus_rerank=9", "settings-doc"])
    with pytest.warns(FutureWarning):
        s = settings_from_args(args)
    assert (s.llm.llamacpp.n_ctx, s.kb.corpus.rerank) == (1024, 9)


def test_new_name_wins_over_old_and_unknown_names_are_still_rejected(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CASEBOOK_LLM__THREADS", "1")
    monkeypatch.setenv("CASEBOOK_LLM__LLAMACPP__THREADS", "2")
    with pytest.warns(FutureWarning):
        assert load_settings().llm.llamacpp.threads == 2
    monkeypatch.delenv("CASEBOOK_LLM__THREADS")
    with pytest.raises(ConfigError, match=r"kb\.corpus\.bogus"):
        load_settings(kb={"corpus": {"bogus": 1}})
    with pytest.raises(ConfigError, match=r"corpus_bogus"):
        load_settings(kb={"corpus_bogus": 1})
