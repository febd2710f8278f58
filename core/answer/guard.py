"""Enforce the answer rules after generation, not only in the prompt.

Each sentence of a model's answer is kept only if every case ID it cites is in
the bundle, every number it states comes from the bundle, it names no condition
the bundle lacks, and it carries no treatment advice, outside knowledge or
definitive recommendation. Verbatim bundle text (an outcome such as "Recovered
after chest drain") is history, not advice, and is exempt from the word lists;
prior-report text is exempt only when it passes the advice rules itself, so a
signed report carrying injected advice cannot smuggle it into an answer.
An answer left with no valid citation is rejected so the caller falls back.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from core.answer.rules import (
    CASE_ID_RE,
    allowed_numbers,
    forbidden_reason,
    numbers_in,
    split_sentences,
    unsupported_conditions,
)
from core.contracts import INSUFFICIENT_DATA, BundleResult

__all__ = ["GuardReport", "enforce"]

log = logging.getLogger(__name__)


@dataclass
class GuardReport:
    """What the guard kept and removed, and why."""

    kept: list[str] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)
    invalid_ids: list[str] = field(default_factory=list)
    cited: list[str] = field(default_factory=list)
    insufficient: bool = False

    @property
    def text(self) -> str:
        """The kept sentences joined."""
        return " ".join(self.kept)


def _without_bundle_text(sentence: str, phrases: list[str]) -> str:
    out = sentence
    for p in phrases:
        if p:
            out = out.replace(p, " ")
    return out


def enforce(text: str, result: BundleResult) -> GuardReport:
    """Check every sentence of ``text`` against ``result``; see the module docstring."""
    bundle = result.bundle
    report = GuardReport()
    if bundle is None:
        report.insufficient = True
        return report
    if INSUFFICIENT_DATA.lower().rstrip(".") in text.lower():
        report.insufficient = True
        return report
    valid = set(result.case_ids)
    reported = {r.findings for r in bundle.priorReports} | {r.impression for r in bundle.priorReports}
    phrases = sorted(
        {c.outcome or "" for c in bundle.similarCases}
        | {c.diagnosis for c in bundle.similarCases}
        | {p for p in reported if forbidden_reason(p) is None}
        | {bundle.currentScan.diagnosis},
        key=len,
        reverse=True,
    )
    present = {c.diagnosis for c in bundle.similarCases} | {bundle.currentScan.diagnosis}
    numbers = allowed_numbers(bundle)
    for sentence in split_sentences(text):
        ids = CASE_ID_RE.findall(sentence)
        bad_ids = [i for i in ids if i not in valid]
        plain = _without_bundle_text(sentence, phrases)
        reason = None
        if bad_ids:
            report.invalid_ids += bad_ids
            reason = f"cites case IDs not in the evidence: {', '.join(bad_ids)}"
        elif (why := forbidden_reason(plain)) is not None:
            reason = why
        elif stray := [n for n in numbers_in(plain) if n not in numbers]:
            reason = f"numbers not in the evidence: {', '.join(stray)}"
        elif extra := unsupported_conditions(plain, present):
            reason = f"diagnoses not in the evidence: {', '.join(extra)}"
        if reason:
            report.removed.append((sentence, reason))
            continue
        report.kept.append(sentence)
        report.cited += [i for i in ids if i not in report.cited]
    if report.invalid_ids:
        log.warning("Stripped %d invalid case citations: %s", len(report.invalid_ids), report.invalid_ids)
    if report.removed:
        log.info("Guard removed %d sentences: %s", len(report.removed), [r for _, r in report.removed])
    return report
