"""``python -m core setup``: prepare everything the app needs, idempotently.

Seeds the demo database when it is empty, builds (or verifies) the similar-case
index (re-embedding stored image vectors that another image encoder made), builds the demo
knowledge bases and assembles the default local model.
Each step is quick when its result already exists and verifies.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

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
    _reembed_stale(settings, rt, say)
    index = rt.case_search.open()
    say(f"Similar-case index {index.version}: {index.manifest['count']} cases")
    for step in EXTRA_STEPS:
        module, _, func = step.partition(":")
        say(f"Running {step}")
        getattr(importlib.import_module(module), func)(settings)
    say("Set-up complete.")


def _reembed_stale(settings: Settings, rt: Any, say: Callable[[str], None]) -> None:
    """Re-embed from the pixels when stored vectors come from another image encoder (say, data seeded before an upgrade).

    Without this, the index would be rebuilt from the old vectors under the new encoder's name, and
    every imported scan would be compared with vectors of another space (similarity 0 everywhere).
    """
    from core.cases.reembed import reembed, stale_encoders
    from core.imaging.encoders import make_image_encoder

    encoder = make_image_encoder(settings)
    if encoder is None:
        return
    stale = stale_encoders(rt.db, encoder.encoder_id)
    if not stale:
        return
    said = ", ".join(f"{n} from {enc}" for enc, n in sorted(stale.items()))
    say(
        f"Stored image vectors come from another encoder ({said}); re-embedding them from their pixels with {encoder.encoder_id}"
    )
    done = reembed(settings, rt.db, encoder, progress=say, only_stale=True)
    rt.case_search.refresh()
    say(f"Re-embedded {done.cases} cases and {done.scans} scans")
