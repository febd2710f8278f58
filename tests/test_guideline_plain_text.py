"""Guideline QA shows model text (bullets, statement, patient summary) as plain text, never live Markdown."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from pages._text import inert as _escape

HOSTILE = [
    "See [the label](https://evil.example/x) for more.",
    "![pixel](https://evil.example/p.png)",
    "<img src=x onerror=alert(1)> <b>bold</b>",
    "Visit https://evil.example/a or www.evil.example today.",
    "**Stop** the drug at once.",
    "# Heading",
    ":red[Urgent] take 2:1 ratio",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_model_text_renders_as_plain_text(text: str) -> None:
    html = MarkdownIt("commonmark").render(_escape(text))
    for tag in ("<a ", "<img", "<b>", "<strong>", "<h1>", "<em>"):
        assert tag not in html, (text, html)
    assert ":red[" not in _escape(text)
    assert "://" not in _escape(text) and "www." not in _escape(text)
