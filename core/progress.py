"""Progress of a long job with an estimate of the time left, for pages and commands alike.

    eta = Eta(lambda fraction, text: print(f"{fraction:.0%} {text}"))
    eta("embed", 0, 480)        # 15% Embedding passages 0/480
    eta("embed", 120, 480)      # 36% Embedding passages 120/480, about 30 s left (10 s so far)

A job reports ``(stage, done, total)``; :class:`Eta` turns that into one fraction of the whole
job (stages weighted by :data:`STAGES`) and a sentence with the time left, estimated from the
stage's own rate so far. The command line shows tqdm bars (which carry their own ETA); pages
pass an :class:`Eta` over ``st.progress``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["STAGES", "Eta", "Progress", "StageProgress"]

Progress = Callable[[float, str], object]  # (fraction of the whole job 0..1, sentence to show); result unused
StageProgress = Callable[[str, int, int], None]  # (stage, done, total)

# stage -> (start, end) of its share of the bar; embedding is most of an ingestion's time
STAGES = {"parse": (0.0, 0.15, "Reading files"), "embed": (0.15, 1.0, "Embedding passages")}


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    return f"{seconds / 60:.0f} min" if seconds < 3600 else f"{seconds / 3600:.1f} h"


class Eta:
    """A :data:`StageProgress` that reports a fraction and an estimate of the time left."""

    def __init__(self, report: Progress, clock: Callable[[], float] = time.monotonic) -> None:
        self._report, self._clock = report, clock
        self._started: dict[str, tuple[float, int]] = {}  # stage -> (time, done) at its first report

    def __call__(self, stage: str, done: int, total: int) -> None:
        """Report ``done`` of ``total`` in ``stage`` as a fraction of the job and a sentence with the time left."""
        lo, hi, label = STAGES.get(stage, (0.0, 1.0, stage.capitalize()))
        now = self._clock()
        t0, d0 = self._started.setdefault(stage, (now, done))
        share = done / total if total else 1.0
        text = f"{label} {done}/{total}"
        if done > d0 and done < total:
            left = (now - t0) / (done - d0) * (total - done)
            text += f", about {_duration(left)} left"
        self._report(lo + (hi - lo) * min(share, 1.0), text)
