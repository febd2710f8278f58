"""A question split into its parts: a pasted report apart from the question, lists, "and", "also".

Doctors type several questions in one ("ddx among similar cases? and did any die"), or
paste a report and ask about it. :func:`split_question` returns the report text (kept as
context, never read as conditions the doctor asks about) and the question parts. A
comparison ("tb vs ca vs pneumonia") stays one part: it is one differential question
over several conditions. A fragment too short to be a question on its own ("and the
outcome") is still a part: the reader gives it an intent.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Split", "split_question"]

# A pasted report: section headings, or several declarative sentences before the question.
_REPORT_HEAD = re.compile(r"\b(findings|impression|conclusion|history|technique|comparison|clinical (?:info|details))\s*:", re.I)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Za-z#0-9]|-+>|=+>)|\n+")  # "PSA 9. -> outcomes?": the arrow starts the question
_ASKING = re.compile(
    r"\?|^\s*(what|which|how|why|who|when|where|is|are|was|were|do|does|did|can|could|should|would|will|any|"
    r"compare|summar|tell|list|give|show|explain|ddx|px|dx)\b",
    re.I,
)
# A report line: "CXR: ...", "Hx: ...", "Clinical details: ...", "Prior report: ..." (a question's own "Q:" is not).
# "Prior report (copied): ..." keeps its bracketed note.
_HEADING = re.compile(r"^\s*(?!q\b|qs\b|question\b)[a-z][a-z0-9 /.()-]{0,30}:\s", re.I)
# A question typed after an arrow or dashes under a report ("-> outcomes?", "-- ddx + sev").
_QUESTION_MARK = re.compile(r"^\s*(?:-+>?|=+>|>+|/+|\^|\*+|q\s*:|qs\s*:)", re.I)
# Where one question ends and the next begins inside a sentence.
_JOINS = re.compile(
    r"\?\s*|;\s*|\s+(?:and|&|also|plus|\+)\s+(?=(?:also\s+)?(?:what|which|how|why|who|when|where|whether|is|are|was|were|did|do|does|"
    r"any|were there|can|could|should|would|will|tell|list|give|show|advise|suggest|recommend|comment|let me know|the (?:outcomes?|severity|prognosis|ddx|differential)|"
    r"outcomes?|severity|sev|prognosis|ddx|dx|differential|similarity|prior|ages?|sex|gender|demographics|deaths?|"
    r"mortality|the (?:most|worst|youngest|oldest|range|ages?|sex)|their (?:ages?|sex|outcomes?|severity)|"
    r"(?:the |her |his |a )?(?:plan|management|mx|next steps?))\b)|,\s*(?:and\s+|&\s*)?|\s+\+\s+|\s&\s",
    re.I,
)


@dataclass(frozen=True)
class Split:
    """The pasted report (or ``None``) and the question parts, in the order typed."""

    report: str | None
    parts: tuple[str, ...]


def _report_and_question(text: str) -> tuple[str | None, str]:
    """Separate a pasted report from the question typed after (or before) it."""
    sentences = [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]
    if len(sentences) < 2:
        return None, text.strip()
    asking = [i for i, s in enumerate(sentences) if _ASKING.search(s) and not _HEADING.match(s)]
    if not asking and _QUESTION_MARK.match(sentences[-1]):
        asking = [len(sentences) - 1]
    looks_like_report = (
        bool(_REPORT_HEAD.search(text)) or any(_HEADING.match(x) for x in sentences) or len(sentences) - len(asking) >= 2
    )
    if not asking or not looks_like_report:
        if looks_like_report and not asking:  # a report and a bare request at the end ("thoughts")
            return " ".join(sentences[:-1]), sentences[-1]
        return None, text.strip()
    question = " ".join(sentences[i] for i in asking)
    report = " ".join(s for i, s in enumerate(sentences) if i not in asking)
    return report or None, question


def split_question(text: str) -> Split:
    """The report and the parts of ``text`` (at least one part: the whole text when nothing splits it)."""
    report, question = _report_and_question(text)
    question = re.sub(r"^\s*(?:-+>?|=+>|>+|/+|\^[^.?]*?\.\s*|\*+|qs?\s*:)\s*", "", question, flags=re.I)
    question = re.sub(r"\b\d\)\s*", "; ", question)  # "1) outcomes 2) how many had BCR"
    pieces = [p.strip(" ,.;:-") for p in _JOINS.split(question)]
    parts = [p for p in pieces if re.search(r"[A-Za-z]{2,}", p or "")]
    return Split(report, tuple(parts) or (question.strip(),))
