"""The one way a page shows text it did not write itself: :func:`inert`.

Signed report text, amendment reasons, document titles and chunks, chat
questions and answers, user names, upload names and error messages may all
carry what a person typed. Streamlit renders the body of ``st.markdown``,
``st.caption``, ``st.write``, the alert boxes and widget labels as Markdown
(links, images, HTML entities, ``:colour[]`` directives, LaTeX), so such text
goes through :func:`inert` first, which backslash-escapes every ASCII
punctuation character that can take part in Markdown (all but ``, ; ? ' " %``).
CommonMark lets any ASCII punctuation be escaped, so the result has no Markdown
or HTML left to act on: no link, image, autolink, raw HTML, emphasis,
directive or formula; it renders as the characters typed. Bare addresses
(``http://``, ``www.``, ``name@host``) get an invisible word joiner, since the
renderer links them after resolving escapes.

``tests/test_inert_text.py`` walks the pages' code and fails on a rendering
call whose text is not a literal, a number with a format (``{n:d}``), or a
call of :func:`inert`.
"""

from __future__ import annotations

import re
import string

__all__ = ["DEMO_BADGE", "inert", "inert_badged"]

# , ; ? ' " % start no Markdown construct (a link title needs a bracket first): left readable
_ESCAPES = {ord(ch): "\\" + ch for ch in string.punctuation if ch not in ",;?'\"%"}
_ESCAPES[ord("\r")] = ""
_ESCAPES[ord("\n")] = "  \n"  # a hard line break: the text keeps its lines, never becomes a heading or list


# Streamlit's renderer turns bare addresses into links *after* escapes are resolved (GFM autolink
# literals: "http://", "www.", "name@host"), so escaping cannot stop them. An invisible WORD JOINER
# (U+2060) inside each pattern does: the text reads and copies the same, and no link is made.
_JOIN = "\u2060"
_AUTOLINK = re.compile(r"(:)(//)|(www)(\.)|(@)", re.IGNORECASE)


def _unlink(m: re.Match[str]) -> str:
    if m.group(5):  # "@": the joiner goes after it
        return "@" + _JOIN
    return _JOIN.join(g for g in m.groups() if g is not None)


_INDENT = re.compile(r"^[ \t]+", re.MULTILINE)  # 4 leading spaces would open a code block: escapes shown raw


def inert(text: object) -> str:
    """``text`` as Markdown that shows exactly its characters (line breaks kept) and links nothing."""
    raw = _AUTOLINK.sub(_unlink, str("" if text is None else text))
    raw = _INDENT.sub(lambda m: "\u00a0" * len(m.group(0)), raw)  # no-break spaces indent nothing
    return raw.translate(_ESCAPES)


# The app's own badge for demo content (Markdown we wrote, so it stays live).
DEMO_BADGE = " · :orange-badge[demo]"


def inert_badged(text: object, demo: bool) -> str:
    """``text`` made inert, followed by the demo badge when ``demo`` (a source name shown with its badge)."""
    return inert(text) + (DEMO_BADGE if demo else "")
