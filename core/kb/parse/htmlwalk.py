"""Bounded readers for untrusted text formats: HTML walked in one linear pass, YAML without aliases.

HTML: the standard library's event parser feeds a stack of open elements. Text goes to
the innermost open block (paragraph, list item, cell...) and is emitted when that block
closes, so each character is handled a constant number of times whatever the nesting:
720 KB of nested ``<div>`` takes well under a second (BeautifulSoup's tree search was
quadratic: 11.5 s at 72 KB). An end tag closes the elements opened after its match;
a stray one is ignored in constant time (a count of open elements per tag name).

YAML: front matter is loaded with a safe loader that refuses aliases, so a few hundred
bytes cannot expand into gigabytes ("billion laughs"), and with a size limit.
"""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser
from typing import Any

import yaml
from yaml.events import AliasEvent

from core.errors import DocumentError

__all__ = ["MAX_FRONT_MATTER", "HtmlDoc", "load_front_matter", "walk_html"]

MAX_FRONT_MATTER = 64 * 1024  # bytes of YAML front matter accepted

_BLOCKS = frozenset({"p", "li", "pre", "blockquote", "dd", "dt", "figcaption", "td", "th", "caption"})
_HEADS = frozenset({"h1", "h2", "h3", "h4", "h5", "h6"})
_SKIP = frozenset({"script", "style", "noscript", "nav", "template"})
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
                   "track", "wbr"})  # fmt: skip


class _NoAliasLoader(yaml.SafeLoader):
    """A safe loader that refuses YAML aliases (``*name``) outright."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Refuse an alias event; compose any other node as the safe loader does."""
        if self.check_event(AliasEvent):
            event = self.peek_event()
            raise yaml.composer.ComposerError(None, None, "aliases are not allowed in front matter", event.start_mark)
        return super().compose_node(parent, index)


def load_front_matter(text: str, source: str) -> dict[str, Any]:
    """The front matter mapping (empty when it is not a mapping); :class:`DocumentError` when refused."""
    if len(text.encode("utf-8")) > MAX_FRONT_MATTER:
        raise DocumentError(f"{source}: front matter over {MAX_FRONT_MATTER // 1024} KB")
    try:
        loaded = yaml.load(text, Loader=_NoAliasLoader)
    except yaml.YAMLError as exc:
        raise DocumentError(f"{source}: invalid YAML front matter ({exc})") from exc
    return loaded if isinstance(loaded, dict) else {}


class HtmlDoc:
    """What :func:`walk_html` found: title, meta tags and events ``("head", level, text)``, ``("text", 0, text)``
    and ``("row", 0, "a | b")`` (one table row)."""

    def __init__(self) -> None:
        self.title = ""
        self.meta: dict[str, str] = {}
        self.events: list[tuple[str, int, str]] = []


class _Walker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.doc = HtmlDoc()
        self.stack: list[tuple[str, list[str] | None]] = []  # (tag, own text buffer for blocks/headings)
        self.open: Counter[str] = Counter()
        self.skip = 0
        self.in_title = False
        self.row: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "meta":
            named = dict(attrs)
            if named.get("name") and named.get("content"):
                self.doc.meta.setdefault(str(named["name"]).lower(), str(named["content"]))
            return
        if tag in _VOID:
            return
        if tag == "title":
            self.in_title = True
        if tag == "tr":
            self._close_row()
            self.row = []
        buffer: list[str] | None = [] if tag in _BLOCKS or tag in _HEADS else None
        self.stack.append((tag, buffer))
        self.open[tag] += 1
        if tag in _SKIP:
            self.skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self.in_title = False
        if not self.open[tag]:
            return  # stray end tag
        while self.stack:
            name, buffer = self.stack.pop()
            self.open[name] -= 1
            if name in _SKIP:
                self.skip -= 1
            self._emit(name, buffer)
            if name == tag:
                break
        if tag in ("tr", "table"):
            self._close_row()

    def handle_data(self, data: str) -> None:
        if self.skip:
            return
        if self.in_title:
            self.doc.title += data
            return
        for _, buffer in reversed(self.stack):
            if buffer is not None:
                buffer.append(data)
                return
        if data.strip():
            self.doc.events.append(("text", 0, data))

    def _emit(self, name: str, buffer: list[str] | None) -> None:
        if buffer is None:
            return
        text = " ".join("".join(buffer).split())
        if name in _HEADS:
            self.doc.events.append(("head", int(name[1]), text))
        elif name in ("td", "th") and self.row is not None:
            self.row.append(text)
        elif text:
            self.doc.events.append(("text", 0, text))

    def _close_row(self) -> None:
        if self.row:
            self.doc.events.append(("row", 0, " | ".join(c for c in self.row if c)))
        self.row = None

    def finish(self) -> HtmlDoc:
        self.close()
        while self.stack:
            name, buffer = self.stack.pop()
            self._emit(name, buffer)
        self._close_row()
        return self.doc


def walk_html(text: str) -> HtmlDoc:
    """Title, meta tags and heading/text events of an HTML document, in one linear pass."""
    walker = _Walker()
    walker.feed(text)
    return walker.finish()
