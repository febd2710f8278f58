"""Answer extraction: the option letter a free-text answer chose, or ``None``.

Unlike MIRAGE's ``locate_answer`` (which falls back to "A"), nothing matching
is its own outcome: ``None``, counted as unanswered by the harness.

Patterns, strongest first: JSON ``{"answer_choice": "C"}``; "Answer: A", "The
answer is (B)", "correct option is D"; a line that starts with a letter
("D. Nitrofurantoin", "(B)", "C)"); a lone letter; the text of exactly one
option.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

__all__ = ["extract_letter"]

_JSON_RE = re.compile(r"\{[^{}]*\}")
_JSON_KEYS = ("answer_choice", "answer", "choice", "option")
_ANSWER_RE = re.compile(
    r"(?i:answer)(?:\s+(?i:is|would\s+be|should\s+be))?[\s:=\-\(\[\*\"']*"
    r"(?:(?i:option|choice)[\s\(\[\*\"']*)?([A-Z])(?![\w'-])"
)
_CHOICE_RE = re.compile(r"(?i:correct|best|right)\s+(?i:option|choice)\s+(?:(?i:is)\s+)?[\(\[\*\"']*([A-Z])(?![\w'-])")
_LEADING = re.compile(r"^\s*[\*\"'#>\-]*\s*[\(\[]?([A-Z])[\)\]]?\s*(?:[.:)\-]|$)(?!\w)")
_LONE = re.compile(r"^\s*[\(\[\*]*([A-Z])[\)\]\*.]*\s*$")


def _letters(options: Mapping[str, str] | None) -> set[str]:
    return {k.upper() for k in options} if options else set("ABCDEFGHIJ")


def _from_json(text: str, valid: set[str]) -> str | None:
    for blob in _JSON_RE.findall(text):
        try:
            data = json.loads(blob)
        except ValueError:
            continue
        if isinstance(data, dict):
            for key in _JSON_KEYS:
                value = data.get(key)
                if isinstance(value, str) and value.strip().upper()[:1] in valid and len(value.strip()) <= 3:
                    return value.strip().upper()[:1]
    return None


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def _from_option_text(text: str, options: Mapping[str, str]) -> str | None:
    body = f" {_norm(text)} "
    found = {k.upper() for k, v in options.items() if _norm(v) and f" {_norm(v)} " in body}
    # Drop options whose text is contained in another matched option's text ("Aspirin" vs "Aspirin and heparin").
    longest = {k for k in found if not any(k != o and _norm(options[k]) in _norm(options[o]) for o in found)}
    return next(iter(longest)) if len(longest) == 1 else None


def extract_letter(text: str, options: Mapping[str, str] | None = None) -> str | None:
    """The option letter ``text`` chose, or ``None`` when nothing matches (never a default letter).

    ``options`` (letter -> option text) restricts the valid letters and
    enables matching on an option's text; without it A-J are valid.
    """
    if not text or not text.strip():
        return None
    valid = _letters(options)
    if (letter := _from_json(text, valid)) is not None:
        return letter
    for pattern in (_ANSWER_RE, _CHOICE_RE):
        for stated in pattern.finditer(text):
            if stated.group(1) in valid:
                return stated.group(1)
    for line in text.splitlines():
        leading = _LONE.match(line) or _LEADING.match(line)
        if leading and leading.group(1) in valid:
            return leading.group(1)
    if options:
        return _from_option_text(text, options)
    return None
