"""core.config: the settings groups form a leaf package, so ``import core.settings`` stays light."""

from __future__ import annotations

import json
import subprocess
import sys

from core.settings import REPO_ROOT

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
    assert set(loaded) <= {"core", "core.errors", "core.settings"} | {m for m in loaded if m.startswith("core.config")}


def test_config_package_imports_no_feature_code() -> None:
    loaded = _modules_loaded_by(_PROBE.replace("import core.settings", "import core.config"))
    assert [m for m in loaded if not m.startswith("core.config") and m not in {"core", "core.errors"}] == []
