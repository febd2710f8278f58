"""A document's identity from its first pages: a clean title, the issuer and the year (issue 24).

PDF metadata is often empty or a file name ("Microsoft Word - TB_guidelines_FINAL.docx"), and
a title read off the cover can come out glued to the next line ("guidelinesFourth edition").
:func:`tidy_title` unglues and drops an edition phrase; :func:`cover_identity` reads the issuer
(a line naming an organisation) and the year (a four-digit year standing alone or after a month
or an edition) from the cover lines. The doctor sees both on upload and can correct them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["cover_identity", "tidy_title"]

_EDITION = re.compile(
    r"\b((first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|\d+(st|nd|rd|th))\s+edition|edition\s+\d+)\b",
    re.IGNORECASE,
)
_ORG = re.compile(
    r"\b(ministry|organi[sz]ation|partnership|department|society|association|institute|centers?|centres?|"
    r"programme|program|council|agency|union|college|foundation|world health|national|federal|government)\b",
    re.IGNORECASE,
)
_YEAR = re.compile(r"(?<!\d)(19[5-9]\d|20[0-4]\d)(?!\d)")
_GLUE = re.compile(r"(?<=[a-z])(?=[A-Z][a-z])")


def tidy_title(title: str) -> tuple[str, str | None]:
    """(title without glue or edition phrase, the edition phrase or ``None``)."""
    text = _GLUE.sub(" ", title)
    edition = _EDITION.search(text)
    if edition:
        text = (text[: edition.start()] + text[edition.end() :]).strip(" ,;:-")
    return re.sub(r"\s+", " ", text).strip(), edition.group(0) if edition else None


def cover_identity(lines: Sequence[str]) -> tuple[str | None, int | None, str | None]:
    """(issuer, year, edition) read from the cover's lines, each ``None`` when not found."""
    issuer = year = edition = None
    for line in lines:
        text = line.strip()
        if not text or "demo data" in text.lower():
            continue
        if edition is None and (m := _EDITION.search(text)):
            edition = m.group(0)
        if year is None and (m := _YEAR.search(text)) and len(text) <= 40:
            year = int(m.group(1))
        if issuer is None and _ORG.search(text) and len(text) <= 120 and not _EDITION.fullmatch(text):
            issuer = text
    return issuer, year, edition
