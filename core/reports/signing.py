"""What signing settles: every AI-derived sentence edited or confirmed, and a critical result communicated.

* An AI-derived sentence is one still carrying ``AI_MARK`` ("AI reading, not verified").
  The doctor either edits it (the mark goes with the edit) or confirms it; signing with
  one left unconfirmed is refused. Confirmed sentences lose the mark in the signed text,
  which ends with the doctor's ATTESTATION; the saved draft (with the marks) and the
  audit row keep the AI provenance.
* A critical finding (the AI reading names one of ``reports.critical_findings``, the
  report's text does, or the doctor flags it) needs a :class:`CriticalCommunication`:
  to whom, when, how, and read-back confirmed. It is written into the signed text
  (CRITICAL RESULT) and into the audit.
* An amendment that names a critical finding no earlier version's record covers (or that the
  doctor flags) needs its own record, written into the new version and the audit the same way
  (:func:`amendment_critical`).
* An amendment goes through the same attestation: its AI-derived sentences are confirmed
  or edited, the earlier signer's ATTESTATION paragraph is dropped from the new text
  (:func:`without_attestation`; it stays in the version it belongs to) and the amending
  doctor's own ATTESTATION ends the new version.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from core.errors import InvalidInputError
from core.reports.drafts import AI_MARK

__all__ = [
    "METHODS",
    "CriticalCommunication",
    "ai_sentences",
    "amendment_critical",
    "attest",
    "attestation_line",
    "communication_line",
    "critical_named",
    "names_critical",
    "needs_communication",
    "without_attestation",
]

METHODS = ("phone", "in person", "secure message")
_SENTENCE = re.compile(r"[^.!?\n]*" + re.escape(AI_MARK) + r"[^.!?\n]*[.!?]?")
_MARK = re.compile(r"\s*\(" + re.escape(AI_MARK) + r"\)|" + re.escape(AI_MARK) + r":\s*")


def ai_sentences(*texts: str) -> list[str]:
    """The sentences still marked as AI-derived, in order, each once."""
    out: list[str] = []
    for text in texts:
        for m in _SENTENCE.finditer(text or ""):
            s = m.group(0).strip()
            if s and s not in out:
                out.append(s)
    return out


def _unmark(sentence: str) -> str:
    plain = _MARK.sub(" ", sentence).strip()
    plain = re.sub(r"\s+([.,;:])", r"\1", re.sub(r"\s{2,}", " ", plain))
    return plain[:1].upper() + plain[1:]


def attest(texts: dict[str, str], confirmed: Iterable[str]) -> tuple[dict[str, str], int]:
    """``texts`` with every AI-derived sentence confirmed (its mark removed); refuses any left unconfirmed.

    Returns the attested texts and how many sentences were confirmed.
    """
    wanted = ai_sentences(*texts.values())
    given = {c.strip() for c in confirmed}
    missing = [s for s in wanted if s not in given]
    if missing:
        raise InvalidInputError(
            f"{len(missing)} AI-derived statement(s) are neither edited nor confirmed",
            hint="Edit each sentence marked 'AI reading, not verified' or tick it as confirmed before signing.",
        )
    out = {}
    for key, text in texts.items():
        for s in wanted:
            text = text.replace(s, _unmark(s))
        out[key] = text
    return out, len(wanted)


@dataclass(frozen=True)
class CriticalCommunication:
    """A critical result told to a responsible clinician: to whom, when, how, and that they read it back."""

    recipient: str
    method: str
    communicated_at: dt.datetime
    read_back: bool

    def checked(self, now: dt.datetime) -> CriticalCommunication:
        """This record, or :class:`InvalidInputError` naming what is missing."""
        if not self.recipient.strip():
            raise InvalidInputError("A critical-result record needs the name of the person told")
        if self.method not in METHODS:
            raise InvalidInputError(f"A critical result is communicated by one of: {', '.join(METHODS)}")
        if not self.read_back:
            raise InvalidInputError(
                "The critical result was not read back", hint="Ask the recipient to read the result back, then tick it."
            )
        when = self.communicated_at if self.communicated_at.tzinfo else self.communicated_at.replace(tzinfo=dt.UTC)
        if when > now + dt.timedelta(minutes=5):
            raise InvalidInputError("A critical result cannot be recorded as communicated in the future")
        return self


_NEGATION = re.compile(r"\b(no|not|without|negative for|free of|resolved|excluded)\b[^.;]*$", re.I)


def critical_named(text: str, critical_findings: Sequence[str]) -> set[str]:
    """The critical findings (lower case) that ``text`` affirms: the COMPARISON paragraph (prior reports)
    and negated mentions ("no pneumothorax", "without free air") do not count. The AI mark is not read
    (its "not verified" is no negation)."""
    from core.reports.drafts import split_findings

    current = _MARK.sub(" ", split_findings(text)[1]).lower()
    named: set[str] = set()
    for term in (t.strip().lower() for t in critical_findings):
        for m in re.finditer(re.escape(term), current) if term else ():
            sentence_start = max(current.rfind(".", 0, m.start()), current.rfind("\n", 0, m.start())) + 1
            if not _NEGATION.search(current[sentence_start : m.start()]):
                named.add(term)
                break
    return named


def names_critical(text: str, critical_findings: Sequence[str]) -> bool:
    """True when ``text`` affirms a critical finding (:func:`critical_named`)."""
    return bool(critical_named(text, critical_findings))


def needs_communication(
    diagnosis: str, texts: Sequence[str], critical_findings: Sequence[str], *, flagged: bool = False
) -> bool:
    """True when the AI reading, the report's own text (affirmed, current scan) or the doctor's flag makes it critical."""
    from core.worklist import is_critical

    return (
        flagged
        or is_critical(diagnosis, critical_findings)
        or any(names_critical(t, critical_findings) for t in texts)
    )


def amendment_critical(
    texts: Sequence[str], critical_findings: Sequence[str], covered: set[str], *, flagged: bool = False
) -> tuple[bool, list[str]]:
    """Whether an amendment needs its own communication record, and the critical findings it newly names.

    The amendment's ``texts`` are read as at signing (:func:`critical_named`); a finding in ``covered``
    (named by an earlier version that has a record, :func:`core.reports.critical.covered_findings`)
    needs none. The doctor's flag always needs one, as at signing.
    """
    named = set().union(*(critical_named(t, critical_findings) for t in texts)) if texts else set()
    new = sorted(named - covered)
    return flagged or bool(new), new


def communication_line(c: CriticalCommunication) -> str:
    """The CRITICAL RESULT paragraph of the signed report."""
    return (
        f"CRITICAL RESULT: communicated to {c.recipient.strip()} by {c.method} at "
        f"{c.communicated_at:%Y-%m-%d %H:%M}; read-back confirmed."
    )


def attestation_line(doctor: str, confirmed: int, when: dt.datetime, *, amends_version: int | None = None) -> str:
    """The ATTESTATION paragraph that ends the signed report (or an amended version of it)."""
    ai = f" Its {confirmed} AI-derived statement(s) were reviewed and confirmed by me." if confirmed else ""
    what = "this report" if amends_version is None else f"this amended report (amending version {amends_version:d})"
    return f"ATTESTATION: I, {doctor}, reviewed the images and {what} and sign it as my own.{ai} {when:%Y-%m-%d %H:%M} UTC."


_ATTESTATION = re.compile(r"(?m)^[ \t]*ATTESTATION:[^\n]*(?:\n(?![ \t]*\n)[^\n]*)*")


def without_attestation(text: str) -> str:
    """``text`` without any ATTESTATION paragraph: a signer's attestation is never carried into another version."""
    return re.sub(r"\n{3,}", "\n\n", _ATTESTATION.sub("", text or "")).strip()
