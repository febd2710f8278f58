"""Presentation helpers for Guideline QA answers (pure; the page renders what these return).

* :func:`table_rows` finds the table in a chunk or bullet (rows kept as ``a | b | c``
  lines by the parsers) so the page can show it as a table instead of flattened text;
* :func:`source_line` names a source the way a doctor reads it, with a visible
  ``demo`` mark on demo content.
"""

from __future__ import annotations

__all__ = ["source_line", "split_tables", "table_rows"]


def table_rows(text: str) -> list[list[str]] | None:
    """The rows of ``text`` when it is a table (every non-empty line has the same number of ``|`` cells, >= 2)."""
    lines = [ln.strip().strip("|").strip() for ln in text.splitlines() if ln.strip()]
    if not lines or not all(" | " in ln or ln.count("|") >= 1 for ln in lines):
        return None
    rows = [[c.strip() for c in ln.split("|")] for ln in lines]
    rows = [r for r in rows if not all(set(c) <= set("-: ") for c in r)]  # Markdown separator rows
    widths = {len(r) for r in rows}
    return rows if rows and len(widths) == 1 and widths.pop() >= 2 else None


def split_tables(text: str) -> list[str | list[list[str]]]:
    """``text`` as blocks in order: plain text, or a table (a list of rows) for each run of table lines."""
    blocks: list[str | list[list[str]]] = []
    run: list[str] = []
    plain: list[str] = []

    def flush_run() -> None:
        rows = table_rows("\n".join(run)) if len(run) >= 2 else None
        if rows:
            if plain:
                blocks.append("\n".join(plain))
                plain.clear()
            blocks.append(rows)
        else:
            plain.extend(run)
        run.clear()

    for line in text.splitlines():
        if line.count("|") >= 1 and len(line.split("|")) >= 2:
            run.append(line)
            continue
        if run:
            flush_run()
        plain.append(line)
    if run:
        flush_run()
    if plain:
        blocks.append("\n".join(plain))
    return [b for b in blocks if not (isinstance(b, str) and not b.strip())]


def source_line(source: str, demo: bool) -> str:
    """The source name, with ``[demo]`` when it is demo content (Markdown badge on the page)."""
    return f"{source} · :orange-badge[demo]" if demo else source
