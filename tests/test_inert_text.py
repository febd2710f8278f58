"""Class 3 of issue 26: text a person typed is always shown inert, never as Markdown or HTML.

Two checks:

* the pages' code (AST): every call that Streamlit renders as Markdown (``st.markdown``,
  ``st.caption``, ``st.write``, the alert boxes, titles, badges and widget labels) gets text that
  is a literal, a number or date with a format (``{n:d}``, ``{t:%Y-%m-%d}``), a local name only
  ever bound to literals, or the result of ``pages._text.inert`` (or ``highlight``, built from it);
* ``inert`` itself, on generated hostile text: rendered by a CommonMark parser with raw HTML on,
  the result has no element but paragraphs, breaks and code blocks, and its text is exactly the
  characters typed.
"""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from core.settings import REPO_ROOT
from pages._text import inert

RENDERING = {
    "markdown", "caption", "write", "info", "warning", "error", "success", "toast", "title", "header",
    "subheader", "expander", "popover", "badge", "button", "page_link", "link_button", "download_button",
    "toggle", "checkbox", "metric", "form_submit_button",
}  # fmt: skip
INERT_BUILDERS = {"inert", "inert_badged", "highlight"}  # both escape every piece with inert (tested below)
_SPEC_OK = re.compile(r"[dfeEgGn%xXob]$|%[A-Za-z]")  # a number's or a date's format: never a string
PAGE_FILES = [*sorted((REPO_ROOT / "pages").glob("*.py")), REPO_ROOT / "app.py"]


def _constant_names(tree: ast.AST) -> set[str]:
    """Names every assignment of which (in this module) is a literal or a choice between literals."""
    seen: dict[str, bool] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    seen[target.id] = seen.get(target.id, True) and _literal(node.value)
        elif isinstance(node, ast.For | ast.comprehension) and isinstance(node.target, ast.Name):
            seen[node.target.id] = False
        elif isinstance(node, ast.arg | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
            name = node.arg if isinstance(node, ast.arg) else getattr(node.target, "id", None)
            if name:
                seen[name] = False
        elif isinstance(node, ast.Tuple) and isinstance(node.ctx, ast.Store):
            for elt in node.elts:
                if isinstance(elt, ast.Name):
                    seen[elt.id] = False
    return {name for name, ok in seen.items() if ok}


def _literal(e: ast.expr) -> bool:
    if isinstance(e, ast.Constant):
        return True
    return isinstance(e, ast.IfExp) and _literal(e.body) and _literal(e.orelse)


def _inert_expr(e: ast.expr, constants: set[str]) -> bool:
    """Whether ``e`` can only produce text that was escaped, written by us, or a formatted number."""
    if isinstance(e, ast.Constant):
        return True
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Name) and e.func.id in INERT_BUILDERS:
        return True
    if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute):
        if e.func.attr == "strip" and not e.args:  # "...".strip() keeps what it strips from
            return _inert_expr(e.func.value, constants)
        if e.func.attr == "join" and isinstance(e.func.value, ast.Constant) and len(e.args) == 1:
            arg = e.args[0]
            if isinstance(arg, ast.GeneratorExp | ast.ListComp):
                return _inert_expr(arg.elt, constants)
    if isinstance(e, ast.JoinedStr):
        return all(_inert_expr(v, constants) for v in e.values)
    if isinstance(e, ast.FormattedValue):
        if isinstance(e.format_spec, ast.JoinedStr):
            spec = "".join(str(v.value) for v in e.format_spec.values if isinstance(v, ast.Constant))
            if _SPEC_OK.search(str(spec)):
                return True
        return _inert_expr(e.value, constants)
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return _inert_expr(e.left, constants) and _inert_expr(e.right, constants)
    if isinstance(e, ast.IfExp):
        return _inert_expr(e.body, constants) and _inert_expr(e.orelse, constants)
    if isinstance(e, ast.Name):  # module constants (UPPER_CASE) and names only ever bound to literals
        return e.id.isupper() or e.id in constants
    return isinstance(e, ast.Subscript) and isinstance(e.value, ast.Name) and e.value.id.isupper()


def _renders(func: ast.expr) -> bool:
    """Whether calling ``func`` renders Markdown: ``x.markdown``, ``(a.success if c else a.error)``,
    ``{"success": a.success}.get(kind, a.error)`` or ``getattr(st, kind)``."""
    if isinstance(func, ast.Attribute):
        return func.attr in RENDERING
    if isinstance(func, ast.IfExp):
        return _renders(func.body) or _renders(func.orelse)
    if isinstance(func, ast.Call) and isinstance(func.func, ast.Attribute) and func.func.attr == "get":
        table = func.func.value
        return isinstance(table, ast.Dict) and any(_renders(v) for v in [*table.values, *func.args[1:]])
    return isinstance(func, ast.Call) and isinstance(func.func, ast.Name) and func.func.id == "getattr"


def violations(source: str, filename: str) -> list[str]:
    """Every rendering call in ``source`` whose text could carry live Markdown, as ``file:line: code``."""
    tree = ast.parse(source)
    constants = _constant_names(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _renders(node.func):
            texts = node.args[:1] + [k.value for k in node.keywords if k.arg in ("body", "label")]
            for arg in texts:
                if not _inert_expr(arg, constants):
                    found.append(f"{filename}:{node.lineno}: {ast.unparse(node.func)[:40]}({ast.unparse(arg)[:100]})")
    return found


def test_every_page_shows_typed_text_through_inert() -> None:
    problems = [v for path in PAGE_FILES for v in violations(path.read_text(), path.name)]
    assert not problems, "text shown as live Markdown; wrap it in inert():\n" + "\n".join(problems)


# The walk itself must catch what the red team found (issue 26, class 3): these are today's lines before the fix.
CAUGHT = [
    'st.caption(f"Reason for this amendment: {r.amend_reason}")',
    'st.markdown(f"**FINDINGS:** {findings}\\n\\n**IMPRESSION:** {r.impression}")',
    'st.caption(f"Source: {source_line(c.source, c.demo)} · word overlap {b.overlap:.0%}")',
    "st.write(sd.document.text[:1500])",
    'st.sidebar.markdown(f"Signed in as **{user.display_name}**")',
    "st.caption(state['author'])",
    'st.error(f"{what}: {exc}")',
    'st.expander(f"{i + 1}. {sd.document.title}")',
    'st.markdown(f"{x!r}")',
    'st.markdown(f"{name:>20}")',  # a width is not a number's format: a string passes through it
    'c1.markdown(mark + "x")',  # mark bound below to a value that is not a literal
    "mark = r.author",
]
CAUGHT_INDIRECT = [
    '(slot.success if ok else slot.error)(flash[1])',
    '{"success": slot.success, "info": slot.info}.get(kind, slot.error)(message)',
    "getattr(st, kind)(message)",
]
ALLOWED = [
    'st.caption(f"Reason for this amendment: {inert(r.amend_reason)}")',
    'st.markdown(f"**Report #{r.id:d}** · {r.signed_at:%Y-%m-%d} · {r.score:.0%}")',
    'st.markdown("> " + highlight(a, b))',
    'pin = "x" if a else ""\nst.markdown(pin + "y")',
    'st.caption(" · ".join(inert(s) for s in sources))',
]


@pytest.mark.parametrize("line", CAUGHT[:-2])
def test_the_walk_catches_untrusted_text(line: str) -> None:
    assert violations(line, "x.py"), line


@pytest.mark.parametrize("line", CAUGHT_INDIRECT)
def test_the_walk_catches_a_rendering_function_chosen_at_run_time(line: str) -> None:
    assert violations(line, "x.py"), line


def test_the_walk_catches_a_name_bound_to_data() -> None:
    assert violations("\n".join(CAUGHT[-2:][::-1]), "x.py")


@pytest.mark.parametrize("code", ALLOWED)
def test_the_walk_allows_escaped_or_literal_text(code: str) -> None:
    assert not violations(code, "x.py"), code


# -- inert() on generated hostile text ------------------------------------------------------------------------------
PIECES = [
    "![x](https://evil.example/a.png)", "[link](javascript:alert(1))", "<img src=https://evil.example/p.png>",
    "<script>fetch('//evil.example')</script>", "www.evil.example", "https://evil.example/x", "<https://e.example>",
    ":red[colour]", ":material/home:", "$x^2$", "$$\\int$$", "&lt;b&gt;", "&#60;img&#62;", "**bold**", "_em_",
    "`code`", "mailto:a@evil.example", "WWW.EVIL.EXAMPLE", "x@y.example", "# heading", "> quote", "- item", "1. item", "| a | b |\n|---|---|", "~~strike~~", "\\", "\\*",
    "[ref]\n\n[ref]: https://evil.example", "<!-- c -->", "<a href=x>y</a>", "---", "===", "\n", "  ",
]  # fmt: skip
hostile = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(alphabet=st.characters(exclude_characters="\x00\r"), max_size=12)),
    min_size=1,
    max_size=8,
).map("".join)
_MD = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
_ALLOWED_TAGS = {"p", "br"}  # paragraphs and the line breaks inert adds: nothing else
GENERATED = 400
JOINER = "\u2060"
_BARE_ADDRESS = re.compile(r"://|www\.|@(?!\u2060)", re.IGNORECASE)  # what a GFM autolink literal starts from


def _shown(markdown: str) -> tuple[set[str], str]:
    out = _MD.render(markdown)
    tags = {m.lower() for m in re.findall(r"</?([A-Za-z][A-Za-z0-9]*)", out)}
    text = html.unescape(re.sub(r"<[^>]+>", " ", out))
    return tags, " ".join(text.split())


@settings(max_examples=GENERATED, deadline=None)
@given(hostile)
def test_inert_text_renders_as_the_characters_typed(text: str) -> None:
    tags, shown = _shown(inert(text))
    assert tags <= _ALLOWED_TAGS, (text, tags)
    assert shown.replace(JOINER, "") == " ".join(text.split()), (text, shown)
    # Streamlit links bare addresses in the text *after* escapes are resolved (GFM autolink literals)
    assert not _BARE_ADDRESS.search(shown), (text, shown)


@settings(max_examples=GENERATED // 4, deadline=None)
@given(hostile, hostile)
def test_highlight_escapes_every_piece(snippet: str, bullet: str) -> None:
    from pages._guideline import highlight

    rendered = re.sub(r":orange-background\[((?:\\.|[^\]\\])*)\]", r"\1", highlight(snippet, bullet))
    tags, _ = _shown(rendered)
    assert tags <= _ALLOWED_TAGS, (snippet, tags)


@settings(max_examples=GENERATED // 4, deadline=None)
@given(hostile, st.booleans())
def test_a_badged_source_escapes_the_source(source: str, demo: bool) -> None:
    from pages._text import DEMO_BADGE, inert_badged

    rendered = inert_badged(source, demo)
    assert rendered.endswith(DEMO_BADGE) == demo or (not demo and inert(source).endswith(DEMO_BADGE))
    tags, _ = _shown(rendered.removesuffix(DEMO_BADGE) if demo else rendered)
    assert tags <= _ALLOWED_TAGS, (source, tags)


def test_the_pages_import_one_helper() -> None:
    """``pages/_text.py`` is the one escaping helper: no page keeps a private escape function."""
    for path in PAGE_FILES:
        src = path.read_text()
        assert "def _escape" not in src and "escape_markdown" not in src, path
    assert Path(REPO_ROOT / "pages" / "_text.py").is_file()
