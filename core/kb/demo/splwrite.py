"""Write demo drug labels in the HL7 v3 SPL layout from a compact text source.

The long demo labels (``assets/kb/realistic/labels_src/*.txt`` ->
``assets/kb/realistic/labels/*.xml``) are written in this format so that their text
reads like a label and not like XML. The output has what a real label has: product
data elements, Highlights excerpts, a boxed warning where the drug has one, numbered
sections and subsections with LOINC codes, tables and a Medication Guide. Identifiers
are UUID5s of the drug name, so a re-run writes the same bytes.

Source format (one item per line; a blank line ends a paragraph)::

    key: value            header lines up to the first section (drug, generic, ingredient,
                          form_code, form, strength, amount, unit, unii, title, effective,
                          version; ingredient2, amount2, unii2 for a combination product)
    @ CODE | TITLE        a top-level section (CODE is a LOINC code or "-" for none)
    @@ CODE | TITLE       a subsection of the last top-level section
    ! text                a Highlights excerpt line of the current section
    - text                a bullet
    | a | b | c           a table row (the first row of a table is its header)
    text                  paragraph text
"""

from __future__ import annotations

import uuid
from pathlib import Path
from xml.sax.saxutils import escape

from core.kb.parse.loinc import SECTION_NAMES

__all__ = ["spl_from_source", "write_labels"]

_LOINC = 'codeSystem="2.16.840.1.113883.6.1"'
_DEMO = "DEMO DATA - NOT FOR CLINICAL USE."


def _uid(drug: str, n: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"casebook-demo-label/{drug}/{n}"))


class _Writer:
    def __init__(self, head: dict[str, str]) -> None:
        self.head, self.n = head, 0
        self.out: list[str] = []
        self.open_section = 0  # 0 none, 1 top-level open, 2 subsection open
        self.text_open = False
        self.para: list[str] = []
        self.items: list[str] = []
        self.rows: list[list[str]] = []
        self.highlights: list[str] = []

    def uid(self) -> str:
        self.n += 1
        return _uid(self.head["drug"], self.n)

    def flush(self) -> None:
        """Close the pending paragraph, list or table into the section text."""
        body: list[str] = []
        if self.para:
            body.append(f"<paragraph>{escape(' '.join(self.para))}</paragraph>")
        if self.items:
            lis = "".join(f"<item>{escape(i)}</item>" for i in self.items)
            body.append(f'<list listType="unordered">{lis}</list>')
        if self.rows:
            head = "".join(f"<th>{escape(c)}</th>" for c in self.rows[0])
            rows = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in self.rows[1:])
            body.append(f'<table width="100%"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>')
        self.para, self.items, self.rows = [], [], []
        if body:
            if not self.text_open:
                self.out.append("<text>")
                self.text_open = True
            self.out.extend(body)

    def close_text(self) -> None:
        self.flush()
        if self.text_open:
            self.out.append("</text>")
            self.text_open = False
        if self.highlights:
            lines = "".join(f"<paragraph>{escape(h)}</paragraph>" for h in self.highlights)
            self.out.append(f"<excerpt><highlight><text>{lines}</text></highlight></excerpt>")
            self.highlights = []

    def close(self, level: int) -> None:
        """Close open sections down to ``level`` (0 closes all)."""
        self.close_text()
        while self.open_section > level:
            self.out.append(f'<effectiveTime value="{self.head["effective"]}"/></section></component>')
            self.open_section -= 1

    def section(self, level: int, code: str, title: str) -> None:
        self.close(level - 1)
        display = SECTION_NAMES.get(code, "SPL UNCLASSIFIED SECTION").upper()
        code_xml = "" if code == "-" else f'<code code="{code}" {_LOINC} displayName="{escape(display)}"/>'
        self.out.append(f'<component><section><id root="{self.uid()}"/>{code_xml}<title>{escape(title)}</title>')
        self.open_section = level


def _second(head: dict[str, str]) -> str:
    """A second active ingredient (``ingredient2``, ``amount2``, ``unii2``) of a combination product."""
    if "ingredient2" not in head:
        return ""
    return (
        f'<ingredient classCode="ACTIB"><quantity><numerator value="{head["amount2"]}" unit="{head["unit"]}"/>'
        f'<denominator value="1" unit="1"/></quantity><ingredientSubstance><code code="{head["unii2"]}" '
        f'codeSystem="2.16.840.1.113883.4.9"/><name>{escape(head["ingredient2"])}</name></ingredientSubstance>'
        "</ingredient>"
    )


def _product(head: dict[str, str], w: _Writer) -> str:
    return (
        f'<component><section><id root="{w.uid()}"/>'
        f'<code code="48780-1" {_LOINC} displayName="SPL PRODUCT DATA ELEMENTS SECTION"/>'
        f"<title>SPL PRODUCT DATA ELEMENTS</title><text><paragraph>{_DEMO} This label is a demonstration "
        "document for the Casebook workbench and must not be used for patient care.</paragraph>"
        f"<paragraph>{escape(head['drug'])} ({escape(head['generic'])}) {escape(head['strength'])}</paragraph></text>"
        f'<effectiveTime value="{head["effective"]}"/><subject><manufacturedProduct><manufacturedProduct>'
        f"<name>{escape(head['drug'])}</name>"
        f'<formCode code="{head["form_code"]}" codeSystem="2.16.840.1.113883.3.26.1.1" '
        f'displayName="{escape(head["form"])}"/>'
        f"<asEntityWithGeneric><genericMedicine><name>{escape(head['generic'])}</name></genericMedicine>"
        f'</asEntityWithGeneric><ingredient classCode="ACTIB"><quantity><numerator value="{head["amount"]}" '
        f'unit="{head["unit"]}"/><denominator value="1" unit="1"/></quantity><ingredientSubstance>'
        f'<code code="{head["unii"]}" codeSystem="2.16.840.1.113883.4.9"/>'
        f"<name>{escape(head['ingredient'])}</name></ingredientSubstance></ingredient>{_second(head)}"
        "</manufacturedProduct></manufacturedProduct></subject></section></component>"
    )


def spl_from_source(text: str) -> bytes:
    """The SPL XML bytes of one label source (format in the module docstring)."""
    lines = text.splitlines()
    head: dict[str, str] = {}
    start = 0
    for start, line in enumerate(lines):  # noqa: B007 - the body starts at the first section line
        if line.startswith("@"):
            break
        if ":" in line:
            key, value = line.split(":", 1)
            head[key.strip()] = value.strip()
    w = _Writer(head)
    doc_id, set_id = w.uid(), w.uid()
    body: list[str] = [_product(head, w)]
    for raw in lines[start:]:
        line = raw.strip()
        if line.startswith("@"):
            level = 2 if line.startswith("@@") else 1
            code, title = (p.strip() for p in line.lstrip("@").split("|", 1))
            w.section(level, code, title)
        elif not line:
            w.flush()
        elif line.startswith("! "):
            w.highlights.append(line[2:])
        elif line.startswith("- "):
            if w.para or w.rows:
                w.flush()
            w.items.append(line[2:])
        elif line.startswith("|"):
            if w.para or w.items:
                w.flush()
            w.rows.append([c.strip() for c in line.strip().strip("|").split("|")])
        else:
            if w.items or w.rows:
                w.flush()
            w.para.append(line)
    w.close(0)
    body.extend(w.out)
    xml = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<!-- {_DEMO} Demonstration structured product label for the Casebook workbench, written in our own "
        "words. The proprietary name is fictional; identifiers are invented. -->\n"
        '<document xmlns="urn:hl7-org:v3" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
        f'<id root="{doc_id}"/>\n<code code="34391-3" {_LOINC} displayName="HUMAN PRESCRIPTION DRUG LABEL"/>\n'
        f"<title>{escape(head['title'])}</title>\n<effectiveTime value=\"{head['effective']}\"/>\n"
        f'<setId root="{set_id}"/>\n<versionNumber value="{head["version"]}"/>\n'
        "<author><time/><assignedEntity><representedOrganization>"
        '<id extension="000000000" root="1.3.6.1.4.1.519.1"/><name>Casebook Demo Pharmaceuticals (fictional)</name>'
        "</representedOrganization></assignedEntity></author>\n<component><structuredBody>\n"
        + "\n".join(body)
        + "\n</structuredBody></component>\n</document>\n"
    )
    return xml.encode("utf-8")


def write_labels(src_dir: Path, out_dir: Path) -> list[Path]:
    """Write ``out_dir/<name>.xml`` for every ``src_dir/<name>.txt``; returns the written paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for src in sorted(src_dir.glob("*.txt")):
        target = out_dir / f"{src.stem}.xml"
        target.write_bytes(spl_from_source(src.read_text(encoding="utf-8")))
        written.append(target)
    return written
