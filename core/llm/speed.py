"""The local model's measured speed: learned from every call, persisted, aged, and re-tried when the load drops.

:class:`SpeedMeter` keeps the prompt-reading and generation speed (tokens per second)
the local model showed on this machine, with the load average when it was measured
(issue 27). It learns from every call, finished, cut at its budget or cancelled: the
llama.cpp backend reports what it read and wrote up to the moment it stopped.

* **Regimes.** Speed on a shared machine follows the load. A measurement taken at a load
  far from the stored one (by more than ``load_ratio`` either way) or with another thread
  count replaces the estimate instead of being averaged into it, so one call after the
  load changes is enough to follow it, up or down.
* **Age.** Within a regime, measurements are averaged exponentially; an older estimate
  weighs less by ``0.5 ** (age / half_life_s)``, so a fresh call dominates a stale one.
* **Re-try.** :meth:`SpeedMeter.stale` says when a slow estimate should not refuse work:
  the load now is at most ``load_ratio`` times the load it was measured under, or it is
  older than ``retry_after_s``. :func:`core.llm.plan.plan_call` then runs a trial call
  with the feature's budget as its cap, and that call's measurement replaces the estimate.
* **Persisted.** :meth:`SpeedMeter.attach` names a JSON file (``<data_dir>/llm_speed.json``):
  the estimate is read from it at start and written after every measurement, so a restart
  does not forget the machine and Settings / Status can say when it was measured.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

__all__ = ["SpeedMeter", "SpeedReading", "load_for_retry", "load_now", "runnable_now"]

log = logging.getLogger(__name__)
MIN_PROMPT_TOKENS = 16  # a tiny (cached) prompt says little about reading speed
MIN_GEN_TOKENS = 4
GEN_PER_PROMPT = 0.5  # generation against prompt-reading speed, when only the latter is known (0.45 measured here)


def load_now() -> float | None:
    """The 1-minute load average (None where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def runnable_now(sample_s: float = 0.25, reads: int = 10) -> float | None:
    """Tasks runnable on this machine now, besides the caller: ``procs_running`` of /proc/stat, averaged.

    The 1-minute load average trails a change by a minute or more (it halves about 40 s after a
    burner stops); this reading follows it at once. None where /proc/stat is missing.
    """
    counts = []
    for i in range(reads):
        try:
            with open("/proc/stat", encoding="ascii") as f:
                line = next((ln for ln in f if ln.startswith("procs_running")), None)
        except OSError:
            return None
        if line is None:
            return None
        counts.append(max(0, int(line.split()[1]) - 1))  # the reading thread is itself running
        if i < reads - 1:
            time.sleep(sample_s / reads)
    return sum(counts) / len(counts)


def load_for_retry() -> float | None:
    """The load a slow estimate's re-try is judged against: the lower of the load average and :func:`runnable_now`.

    A load that just dropped shows at once (so the estimate is re-tried on the next call, not a
    minute later); one that just rose still shows in the load average's lag only, which costs at
    most one call cut at its budget, as an estimate with no measurement does.
    """
    readings = [x for x in (load_now(), runnable_now()) if x is not None]
    return min(readings) if readings else None


@dataclass(frozen=True)
class SpeedReading:
    """The current estimate, as Settings / Status shows it."""

    prompt_tps: float | None
    gen_tps: float | None
    threads: int | None
    load: float | None  # the load average the estimate was measured under
    measured_at: float | None  # epoch seconds of the last measurement
    partial: bool  # the last measurement came from a call cut at its budget or cancelled
    samples: int


class SpeedMeter:
    """Prompt-reading and generation speed of the local model, from its own timings (thread-safe)."""

    def __init__(
        self,
        smoothing: float = 0.5,
        *,
        half_life_s: float = 3600.0,
        load_ratio: float = 0.5,
        retry_after_s: float = 600.0,
    ) -> None:
        self._lock = threading.Lock()
        self._a = smoothing
        self.half_life_s = half_life_s
        self.load_ratio = load_ratio
        self.retry_after_s = retry_after_s
        self.prompt_tps: float | None = None
        self.gen_tps: float | None = None
        self.threads: int | None = None
        self.load: float | None = None
        self.measured_at: float | None = None
        self.partial = False
        self.samples = 0
        self._path: Path | None = None

    def configure(self, *, half_life_s: float, load_ratio: float, retry_after_s: float) -> None:
        """Take the ``llm.speed_*`` settings."""
        with self._lock:
            self.half_life_s, self.load_ratio, self.retry_after_s = half_life_s, load_ratio, retry_after_s

    def attach(self, path: Path) -> None:
        """Persist to ``path`` from now on, starting from what it holds when this meter has measured nothing."""
        with self._lock:
            self._path = path
            if self.measured_at is not None or not path.is_file():
                return
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.prompt_tps, self.gen_tps = _num(data.get("prompt_tps")), _num(data.get("gen_tps"))
                self.threads = int(data["threads"]) if data.get("threads") is not None else None
                self.load, self.measured_at = _num(data.get("load")), _num(data.get("measured_at"))
                self.partial, self.samples = bool(data.get("partial")), int(data.get("samples") or 0)
            except (OSError, ValueError, TypeError, KeyError) as exc:  # a damaged file: start afresh, say so
                log.warning("speed estimate in %s unreadable (%s): measuring again", path, exc)

    def _different_regime(self, threads: int, load: float | None) -> bool:
        if threads != self.threads or (self.prompt_tps is None and self.gen_tps is None):
            return True
        if load is None or self.load is None:
            return False
        low, high = sorted((max(load, 0.01), max(self.load, 0.01)))
        return low <= high * self.load_ratio

    def record(
        self,
        prompt_tokens: int,
        prompt_ms: float,
        gen_tokens: int,
        gen_ms: float,
        threads: int,
        *,
        load: float | None = None,
        partial: bool = False,
        bound: bool = False,
        now: float | None = None,
    ) -> None:
        """Fold one call's timings in (``partial``: the call was cut at its budget or cancelled).

        ``bound``: the call was cut before its first token, so the prompt reads *at most* this fast; the
        estimate is never left faster than that, whatever it averaged before.
        """
        now = time.time() if now is None else now
        prompt = prompt_tokens / (prompt_ms / 1000) if prompt_tokens >= MIN_PROMPT_TOKENS and prompt_ms > 0 else None
        gen = gen_tokens / (gen_ms / 1000) if gen_tokens >= MIN_GEN_TOKENS and gen_ms > 0 else None
        if prompt is None and gen is None:
            return
        with self._lock:
            if self._different_regime(threads, load):
                self.prompt_tps = self.gen_tps = None
            age = 0.0 if self.measured_at is None else max(0.0, now - self.measured_at)
            keep = (1 - self._a) * 0.5 ** (age / self.half_life_s) if self.half_life_s > 0 else 1 - self._a
            self.prompt_tps = _blend(self.prompt_tps, prompt, self._a, keep)
            if bound and prompt is not None and self.prompt_tps is not None:
                self.prompt_tps = min(self.prompt_tps, prompt)
            self.gen_tps = _blend(self.gen_tps, gen, self._a, keep)
            self.threads, self.measured_at, self.partial = threads, now, partial
            self.load = load if load is not None else self.load
            self.samples += 1
            self._save()

    def _save(self) -> None:
        if self._path is None:
            return
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._path.with_suffix(".tmp")
            tmp.write_text(json.dumps(asdict(self._reading())), encoding="utf-8")
            tmp.replace(self._path)
        except OSError as exc:  # a read-only data folder: the estimate still works in memory
            log.warning("could not save the speed estimate to %s: %s", self._path, exc)

    def _reading(self) -> SpeedReading:
        return SpeedReading(
            self.prompt_tps, self.gen_tps, self.threads, self.load, self.measured_at, self.partial, self.samples
        )

    def reading(self) -> SpeedReading:
        """The estimate and when and under what load it was measured."""
        with self._lock:
            return self._reading()

    def stale(self, load: float | None, now: float | None = None) -> bool:
        """True when the estimate should be re-tried rather than trusted: the load fell well below it, or it is old."""
        now = time.time() if now is None else now
        with self._lock:
            if self.measured_at is None:
                return False
            if self.retry_after_s > 0 and now - self.measured_at >= self.retry_after_s:
                return True
            return load is not None and self.load is not None and load <= self.load * self.load_ratio

    def seconds(self, prompt_tokens: int, new_tokens: int) -> tuple[float | None, float | None]:
        """(total, prompt-only) seconds for a call, or (None, None) before any measurement of prompt reading."""
        with self._lock:
            if self.prompt_tps is None:
                return None, None
            prompt_s = prompt_tokens / self.prompt_tps
            # generation not measured yet (every call so far was cut while reading its prompt): taken as
            # GEN_PER_PROMPT times the prompt speed, never as free
            gen_tps = self.gen_tps or self.prompt_tps * GEN_PER_PROMPT
            return prompt_s + new_tokens / gen_tps, prompt_s


def _blend(old: float | None, new: float | None, a: float, keep: float) -> float | None:
    """Exponential average of ``old`` (weight ``keep``) and ``new`` (weight ``a``)."""
    if new is None:
        return old
    if old is None or a + keep <= 0:
        return new
    return (a * new + keep * old) / (a + keep)


def _num(value: Any) -> float | None:
    return None if value is None else float(value)
