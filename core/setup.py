"""``python -m core setup``: prepare everything the app needs, idempotently.

Seeds the demo database when it is empty, builds (or verifies) the similar-case
index, builds the demo knowledge bases and assembles the default local model.
Each step is quick when its result already exists and verifies.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from core.demo.seed import seed_demo
from core.runtime import open_runtime
from core.settings import Settings

__all__ = ["EXTRA_STEPS", "prepare"]

# Steps owned by other areas: "module:function", each taking the settings.
EXTRA_STEPS: tuple[str, ...] = (
    "core.llm.models:ensure_default_model",
    "core.kb:ensure_demo_kb",
)


def prepare(settings: Settings, say: Callable[[str], None] = print) -> None:
    """Run every set-up step in order, reporting progress through ``say``."""
    rt = open_runtime(settings)
    say(f"Database: {rt.db.engine.url.render_as_string(hide_password=True)}")
    summary = seed_demo(settings, rt.db, progress=say)
    say(summary.message)
    index = rt.case_search.open()
    say(f"Similar-case index {index.version}: {index.manifest['count']} cases")
    for step in EXTRA_STEPS:
        module, _, func = step.partition(":")
        say(f"Running {step}")
        getattr(importlib.import_module(module), func)(settings)
    say("Set-up complete.")
