"""How often a model's Ask AI answers pass the output guard unchanged, per backend and model (issue 27 item 4).

Every model answer that reaches the guard (:func:`core.answer.guard.enforce`) is one verdict:
*passed* when the guard kept it whole, with a citation (no sentence dropped, not the
insufficient-data reply); anything else (a sentence dropped, no citation left, the model's
insufficient-data reply) is not. Timeouts, failures and Cancels never reached the guard
and are not counted here (the speed meter, :mod:`core.llm.speed`, sees those).

* **Persisted** like the speed meter: ``<data_dir>/ask_guard_verdicts.json``, written
  atomically (a temporary file, then a rename) after every verdict; a damaged file is
  logged and counting starts again from none. One :class:`VerdictStore` per data folder
  per process (:func:`verdict_store`), thread-safe. Two processes on one data folder each
  keep their own counts in memory and the last one to write wins on disk.
* **A prior from our own measurement.** A model in ``core/llm/models.json`` may carry
  ``ask_guard_prior``: what ``bench/guard_bench.py`` measured for it (passed, of, the command,
  date, machine and load). It is pooled with this machine's counts as if those answers had
  been given here: rate = (prior passed + passed here) / (prior answers + answers here), the
  plain pooled proportion (the Beta posterior mean under the Haldane Beta(0, 0) prior). So
  the shipped figure decides until this machine has said more, and every answer here moves it.
  A model without a prior (remote backends, operator models) has no opinion until
  ``ask.min_guard_samples`` answers were counted.
* **The decision** (:func:`hold_reason`): under ``ask.model_answers: auto``, a model whose
  pooled rate is below ``ask.min_guard_pass_rate`` is not asked on its own; the instant
  answer is final and the page says why, with the figures, and offers to ask it anyway.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.llm.models import CATALOG_PATH

if TYPE_CHECKING:
    from core.llm.base import LLM
    from core.settings import Settings

__all__ = ["VERDICTS_FILE", "GuardPrior", "PassRate", "VerdictStore", "hold_reason", "pass_rate", "rate_rows",
           "verdict_store"]  # fmt: skip

log = logging.getLogger(__name__)
VERDICTS_FILE = "ask_guard_verdicts.json"  # under paths.data_dir
PRIOR_KEY = "ask_guard_prior"  # the models.json field
LOCAL_BACKEND = "llamacpp"  # models.json catalogues llama.cpp models; its model name is the file's stem


@dataclass(frozen=True)
class GuardPrior:
    """What ``bench/guard_bench.py`` measured for one catalogued model."""

    passed: int
    total: int
    command: str
    date: str
    machine: str
    load: str


@dataclass(frozen=True)
class PassRate:
    """One model's verdicts here, and the prior they are pooled with."""

    key: str  # "<backend>/<model>"
    passed: int  # counted on this machine
    total: int
    prior: GuardPrior | None = None

    @property
    def pooled_passed(self) -> int:
        """Passed answers, the prior's included."""
        return self.passed + (self.prior.passed if self.prior else 0)

    @property
    def pooled_total(self) -> int:
        """Answers judged, the prior's included."""
        return self.total + (self.prior.total if self.prior else 0)

    @property
    def rate(self) -> float | None:
        """The pooled share that passed unchanged (None: nothing judged yet)."""
        return self.pooled_passed / self.pooled_total if self.pooled_total else None

    def provenance(self) -> str:
        """Where the figures come from, e.g. "Counted: 5 of 8 by bench/... on 2026-11-27 (...); 0 of 0 on this machine"."""
        here = f"{self.passed} of {self.total} on this machine"
        if self.prior is None:
            return f"Counted: {here}"
        p = self.prior
        return f"Counted: {p.passed} of {p.total} by {p.command} on {p.date} ({p.machine}, {p.load}); {here}"


class VerdictStore:
    """Passed / judged counts per ``backend/model``, persisted in one JSON file (thread-safe)."""

    def __init__(self, path: Path | None = None) -> None:
        self._lock = threading.Lock()
        self._path = path
        self._counts: dict[str, dict[str, Any]] = {}
        if path is not None and path.is_file():
            try:
                self._counts = _parse(json.loads(path.read_text(encoding="utf-8")))
            except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:  # damaged: count afresh, say so
                log.warning("guard verdicts in %s unreadable (%s): counting again from none", path, exc)

    def record(self, backend: str, model: str, passed: bool, now: float | None = None) -> None:
        """Count one model answer's verdict and write the file."""
        with self._lock:
            row = self._counts.setdefault(f"{backend}/{model}", {"passed": 0, "total": 0, "updated_at": 0.0})
            row["passed"] += int(passed)
            row["total"] += 1
            row["updated_at"] = time.time() if now is None else now
            self._save()

    def counts(self, backend: str, model: str) -> tuple[int, int]:
        """(passed, judged) on this machine for ``backend/model``."""
        with self._lock:
            row = self._counts.get(f"{backend}/{model}", {})
            return int(row.get("passed", 0)), int(row.get("total", 0))

    def keys(self) -> list[str]:
        """Every ``backend/model`` counted here."""
        with self._lock:
            return sorted(self._counts)

    def _save(self) -> None:
        if self._path is None:
            return
        try:
            self._path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self._path.with_name(f"{self._path.name}.{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"version": 1, "models": self._counts}, indent=1), encoding="utf-8")
            tmp.replace(self._path)  # a reader sees the old file or the new one, never half of one
        except OSError as exc:  # a read-only data folder: the counts still work in memory
            log.warning("could not save the guard verdicts to %s: %s", self._path, exc)


def _parse(data: Any) -> dict[str, dict[str, Any]]:
    counts: dict[str, dict[str, Any]] = {}
    for key, row in data["models"].items():
        passed, total = int(row["passed"]), int(row["total"])
        if not 0 <= passed <= total:
            raise ValueError(f"{key}: {passed} passed of {total}")
        counts[str(key)] = {"passed": passed, "total": total, "updated_at": float(row.get("updated_at") or 0.0)}
    return counts


_STORES: dict[Path, VerdictStore] = {}
_STORES_LOCK = threading.Lock()


def verdict_store(settings: Settings) -> VerdictStore:
    """This process's store for the settings' data folder (read from its file on first use)."""
    path = settings.paths.resolve(settings.paths.data_dir) / VERDICTS_FILE
    with _STORES_LOCK:
        if path not in _STORES:
            _STORES[path] = VerdictStore(path)
        return _STORES[path]


@lru_cache(maxsize=1)
def _priors() -> dict[str, GuardPrior]:
    catalog = json.loads(CATALOG_PATH.read_text(encoding="utf-8"))
    return {
        f"{LOCAL_BACKEND}/{name}": GuardPrior(**{k: entry[PRIOR_KEY][k] for k in GuardPrior.__dataclass_fields__})
        for name, entry in catalog.items()
        if PRIOR_KEY in entry
    }


def pass_rate(settings: Settings, backend: str, model: str) -> PassRate:
    """``backend/model``'s verdicts here, with its prior when models.json has one."""
    passed, total = verdict_store(settings).counts(backend, model)
    key = f"{backend}/{model}"
    return PassRate(key, passed, total, _priors().get(key))


def hold_reason(settings: Settings, llm: LLM) -> str | None:
    """Why Ask AI should not ask ``llm`` on its own (``ask.model_answers``), or None to ask it."""
    mode = settings.ask.model_answers
    who = "the local model's" if llm.backend == LOCAL_BACKEND else f"the {llm.backend} model's"
    if mode == "always":
        return None
    if mode == "on_request":
        return f"Instant answer only: {who} answers are given on request here (ask.model_answers is on_request)."
    r = pass_rate(settings, llm.backend, llm.model)
    floor = settings.ask.min_guard_pass_rate
    if r.rate is None or r.pooled_total < settings.ask.min_guard_samples or r.rate >= floor:
        return None
    return (
        f"Instant answer only: {who} answers passed the grounding check {r.pooled_passed} of {r.pooled_total} "
        f"times ({r.rate:.0%}; {floor:.0%} needed). {r.provenance()}."
    )


def rate_rows(settings: Settings) -> list[dict[str, Any]]:
    """One row per model with a prior or a verdict here, for Settings / Status."""
    a = settings.ask
    rows = []
    for key in sorted(set(_priors()) | set(verdict_store(settings).keys())):
        backend, _, model = key.partition("/")
        r = pass_rate(settings, backend, model)
        if r.rate is None or r.pooled_total < a.min_guard_samples:
            asked = "no opinion yet: asked"
        else:
            asked = "asked" if r.rate >= a.min_guard_pass_rate else "instant only"
        rows.append({
            "model": key,
            "passed unchanged": r.pooled_passed,
            "answers judged": r.pooled_total,
            "pass rate": None if r.rate is None else f"{r.rate:.0%}",
            "on this machine": f"{r.passed} of {r.total}",
            "from our measurement": f"{r.prior.passed} of {r.prior.total} ({r.prior.date})" if r.prior else "none",
            "Ask AI under auto": asked if a.model_answers == "auto" else a.model_answers,
        })  # fmt: skip
    return rows
