"""Requests Guideline QA refuses, read by meaning: a learned guard over the runtime's own embedder.

The refusal patterns (``guideline.refusal_patterns``) are a floor of hand rules; a request can be
worded in endless ways ("your previous orders are cancelled", "note to the AI reading this page").
The guard reads a question by meaning instead. Its reference lines (``assets/guideline/
request_exemplars.json``, our own wording) are requests to refuse by class (prompt injection, a
forged source, a safety promise without caveats, self-harm, dosing hidden from the care team, an
unsafe dose for a named patient "anyway") and ordinary clinical questions (a named patient's dose
within the range, a contraindication asked about, an overdose's management). A logistic regression
over the embedder's query vectors of those lines gives P(refuse) of a text; a question is refused
when one of its clauses (a sentence, a quoted or pasted passage, a base64 run decoded, or the whole
question) reaches
``guideline.request_guard_threshold``, so a request placed after an ordinary question, or inside
quoted document text, is read on its own.

The fit is a small file in the repository (``core/guideline/data/request_guard.json``, written by
``bench/fit_request_guard.py``) that records the embedder's model id and the reference file's hash;
served with another embedder or an edited reference file, the guard refits in memory on first use
(deterministic, a few seconds of embedding), never reusing weights made for other vectors.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import logging
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

__all__ = ["SHIPPED", "GuardFit", "RequestGuard", "clauses", "decoded_runs", "fit_guard", "load_exemplars"]

log = logging.getLogger(__name__)

Embed = Callable[[Sequence[str]], np.ndarray]
SHIPPED = Path(__file__).parent / "data" / "request_guard.json"
# a quoted or bracketed passage ("...", '...', <<...>>, <!-- ... -->) is read as a clause of its own
_QUOTED = re.compile(r"\"([^\"]{12,})\"|'([^']{12,})'|“([^”]{12,})”|<<(.{12,}?)>>|<!--(.{12,}?)-->", re.S)
_BASE64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{16,}={0,2}(?![A-Za-z0-9+/=])")
_SPLIT = re.compile(r"(?<=[.!?;:])\s+|\n+|\s+-\s+|\s+—\s+")


def decoded_runs(question: str) -> list[str]:
    """The text of every base64 run in ``question`` that decodes to printable UTF-8 (a wrapped request)."""
    out = []
    for m in _BASE64.finditer(question):
        raw = m.group(0)
        try:
            text = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            continue
        if text.isprintable() and len(text.split()) >= 2:
            out.append(text)
    return out


def clauses(question: str, min_words: int = 3) -> list[str]:
    """The question, its sentences and clauses, its quoted passages and the text of its base64 runs (each of
    ``min_words`` words or more)."""
    parts = [question.strip(), *decoded_runs(question)]
    parts += [next(g for g in m.groups() if g) for m in _QUOTED.finditer(question)]
    parts += _SPLIT.split(question)
    kept = [p.strip(" \t\"'<>!-") for p in parts]
    return list(dict.fromkeys(p for p in kept if len(p.split()) >= min_words)) or [question]


def load_exemplars(path: Path) -> tuple[list[str], list[str], str]:
    """``(refuse lines, ordinary lines, sha256 of the file)`` of a reference file."""
    raw = path.read_bytes()
    data = json.loads(raw)
    refuse = [line for lines in data["refuse"].values() for line in lines]
    return refuse, list(data["ordinary"]), hashlib.sha256(raw).hexdigest()


@dataclass(frozen=True)
class GuardFit:
    """A fitted guard: the logistic weights over one embedder's vectors, and what it was fitted from."""

    model_id: str
    exemplars_sha: str
    coef: tuple[float, ...]
    intercept: float

    def proba(self, vectors: np.ndarray) -> np.ndarray:
        """P(refuse) of each row."""
        z = vectors @ np.asarray(self.coef, dtype=np.float32) + self.intercept
        return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)


def fit_guard(embed: Embed, model_id: str, exemplars: Path, c: float) -> GuardFit:
    """Fit the guard on the reference file: balanced logistic regression, inverse L2 strength ``c``."""
    from sklearn.linear_model import LogisticRegression

    refuse, ordinary, sha = load_exemplars(exemplars)
    x = embed([*refuse, *ordinary])
    y = np.array([1] * len(refuse) + [0] * len(ordinary))
    model = LogisticRegression(C=c, class_weight="balanced", max_iter=5000).fit(x, y)
    return GuardFit(model_id, sha, tuple(float(v) for v in model.coef_[0]), float(model.intercept_[0]))


class RequestGuard:
    """P(refuse) of a question by meaning; the shipped fit when it matches, else one made on first use.

    ``embed`` is the embedder's query function (the knowledge bases' own, so nothing new is loaded) and
    ``model_id`` returns its name (both called only when a question is read, so nothing loads early).
    """

    def __init__(
        self, embed: Embed, model_id: Callable[[], str], exemplars: Path, threshold: float, c: float,
        shipped: Path = SHIPPED,
    ) -> None:  # fmt: skip
        self.embed, self.model_id, self.exemplars = embed, model_id, exemplars
        self.threshold, self.c, self.shipped = threshold, c, shipped
        self._fit: GuardFit | None = None

    @property
    def fit(self) -> GuardFit:
        """The fit for this embedder and reference file: the shipped one, else fitted now (kept in memory)."""
        if self._fit is None:
            model_id = self.model_id()
            sha = hashlib.sha256(self.exemplars.read_bytes()).hexdigest()
            self._fit = self._read(model_id, sha)
            if self._fit is None:
                log.info("request guard: no shipped fit for %s and this reference file; fitting now", model_id)
                self._fit = fit_guard(self.embed, model_id, self.exemplars, self.c)
        return self._fit

    def _read(self, model_id: str, sha: str) -> GuardFit | None:
        try:
            data = json.loads(self.shipped.read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or (data.get("model_id"), data.get("exemplars_sha"), data.get("c")) != (
            model_id, sha, self.c):  # fmt: skip
            return None
        return GuardFit(model_id, sha, tuple(data["coef"]), float(data["intercept"]))

    def save(self, path: Path) -> None:
        """Write the current fit where :meth:`fit` reads it (``bench/fit_request_guard.py``)."""
        fit = self.fit
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"model_id": fit.model_id, "exemplars_sha": fit.exemplars_sha, "c": self.c,
                                    "intercept": round(fit.intercept, 6), "coef": [round(v, 6) for v in fit.coef]}))  # fmt: skip

    def score(self, question: str) -> tuple[float, str]:
        """``(P(refuse), clause)`` of the question's most refusable clause."""
        parts = clauses(question)
        p = self.fit.proba(self.embed(parts))
        i = int(np.argmax(p))
        return float(p[i]), parts[i]

    def check(self, question: str) -> str | None:
        """Why ``question`` is refused (its clause and score), or ``None``."""
        p, clause = self.score(question)
        return f"a request to refuse by meaning (P={p:.2f}): {clause[:80]!r}" if p >= self.threshold else None
