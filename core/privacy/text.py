"""Text normalisation shared by the output guard and the egress filter.

Model output and outbound text are compared in one canonical form:

1. NFKC, so full-width letters, ligatures and superscripts become plain ones;
2. format characters removed (Unicode category ``Cf``: zero-width space and
   joiners, the BOM, soft hyphen, and the bidi embeddings, overrides and
   isolates that can reorder what a reader sees);
3. confusable letters folded to Latin with the Unicode confusables table as
   packaged by ``confusable-homoglyphs`` (a Cyrillic ``о`` in "dоse" becomes
   ``o``), so a look-alike never slips past a word list;
4. optionally case-folded.

Markup is removed separately (:func:`strip_markup`) and anything shown to a
doctor is escaped (:func:`escape_markdown`) so model text renders as plain text:
no links, no images, no HTML.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from confusable_homoglyphs import confusables

__all__ = ["MarkupFound", "escape_markdown", "fold_confusables", "normalise", "strip_markup"]

# Whitespace look-alikes NFKC leaves alone that still split words for a reader.
_SPACES = dict.fromkeys(map(ord, "\u2028\u2029\u0085\u1680\u180e"), " ")


@functools.lru_cache(maxsize=4096)
def _latin_for(ch: str) -> str:
    """The ASCII letter or digit ``ch`` is confusable with, or ``ch`` itself."""
    found = confusables.is_confusable(ch, preferred_aliases=["latin"], greedy=True)
    for entry in found or ():
        for glyph in entry["homoglyphs"]:
            c = glyph["c"]
            if len(c) == 1 and c.isascii() and c.isalnum():
                return c
    return ch


def fold_confusables(text: str) -> str:
    """Replace every non-ASCII letter that looks like a Latin letter or digit with that letter."""
    if text.isascii():
        return text
    return "".join(ch if ch.isascii() or not ch.isalnum() else _latin_for(ch) for ch in text)


def normalise(text: str, *, casefold: bool = True) -> str:
    """NFKC, format characters (zero-width, bidi) removed, confusables folded, optionally case-folded."""
    out = unicodedata.normalize("NFKC", text).translate(_SPACES)
    out = "".join(ch for ch in out if unicodedata.category(ch) != "Cf")
    out = fold_confusables(out)
    out = unicodedata.normalize("NFKC", out)
    return out.casefold() if casefold else out


_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)|!\[[^\]]*\]\[[^\]]*\]")
_LINK = re.compile(r"\[([^\]]*)\]\(([^)]*)\)|\[([^\]]*)\]\[[^\]]*\]")
_REF_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$", re.M)
_AUTOLINK = re.compile(r"<(?:[a-z][a-z0-9+.-]{1,31}:|mailto:|www\.)[^>\s]*>", re.I)
_TAG = re.compile(r"</?[a-z!?][^>]*>|<!--.*?-->", re.I | re.S)
_URL = re.compile(r"\b(?:(?:https?|ftp|file|javascript|vbscript|data):|www\.)\S+", re.I)


class MarkupFound(list[str]):
    """The kinds of markup :func:`strip_markup` removed (``image``, ``link``, ``html``, ``url``)."""


def strip_markup(text: str) -> tuple[str, MarkupFound]:
    """``text`` without Markdown images and links, HTML, autolinks and bare URLs (``data:`` included).

    A link keeps its visible words; an image, a tag or a URL is removed whole.
    The second value lists which kinds were found, so a caller can refuse the
    sentence rather than show it half-cleaned.
    """
    found = MarkupFound()
    for kind, pattern, repl in (
        ("image", _IMAGE, " "),
        ("link", _REF_DEF, " "),
        ("link", _LINK, lambda m: " " + (m.group(1) or m.group(3) or "") + " "),
        ("url", _AUTOLINK, " "),
        ("html", _TAG, " "),
        ("url", _URL, " "),
    ):
        text, n = pattern.subn(repl, text)
        if n and kind not in found:
            found.append(kind)
    return re.sub(r"[ \t]{2,}", " ", text).strip(), found


_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]<>#|~$])")
_AUTOLINK_START = re.compile(r"(:)(//)|\b(www)(\.)", re.I)


def escape_markdown(text: str) -> str:
    """Escape what Markdown and HTML act on so ``st.markdown`` shows ``text`` literally.

    Brackets (links, images), angle brackets (HTML, autolinks), emphasis, code,
    headings, tables, strike-through and ``$`` (LaTeX) are escaped, and so are
    ``://`` and ``www.`` so that a bare address is never auto-linked. Ordinary
    prose (case ids, decimals, parentheses) is left as it is.
    """
    out = _MD_SPECIAL.sub(r"\\\1", normalise(text, casefold=False))
    return _AUTOLINK_START.sub(
        lambda m: f"{m.group(1)}\\{m.group(2)}" if m.group(1) else f"{m.group(3)}\\{m.group(4)}", out
    )
