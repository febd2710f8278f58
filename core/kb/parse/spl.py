"""FDA Structured Product Labels (HL7 v3 SPL XML) -> one document with section chunks.

Sections are the top-level ``structuredBody`` sections, identified by LOINC
code with the title as fallback (:mod:`core.kb.parse.loinc`). Subsections stay in
their parent's chunk, their titles kept as paragraphs. A section longer than
``settings.kb.spl_section_tokens`` is split at paragraph boundaries inside the
section only. Highlights excerpts (duplicates of the full text) are skipped.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator

from lxml import etree

from core.config.kb import KBSettings
from core.errors import DocumentError
from core.kb.parse.chunking import pack_paragraphs
from core.kb.parse.loinc import SECTION_NAMES, classify_section
from core.kb.parse.names import name_variants, synonyms
from core.kb.parse.tokens import TokenCounter
from core.kb.parse.xmlsafe import parse_untrusted_xml
from core.kb.types import Chunk, Document

__all__ = ["HL7", "parse_spl"]

HL7 = "urn:hl7-org:v3"
_NS = {"v3": HL7}
_ACTIVE = ("ACTIB", "ACTIM", "ACTIR")
_SKIP_CODES = {"48780-1", "51945-4"}  # product data elements, package label panel: no clinical text


def _text(el: etree._Element | None) -> str:
    if el is None:
        return ""
    return re.sub(r"\s+", " ", "".join(el.itertext())).strip()


def _blocks(el: etree._Element) -> Iterator[str]:
    """Paragraph-level strings of a section's ``text`` element, in document order."""
    for child in el:
        if not isinstance(child.tag, str):
            continue
        tag = etree.QName(child).localname
        if tag == "list":
            for item in child.iterfind("v3:item", _NS):
                yield "• " + _text(item)
        elif tag == "table":
            yield from _table_rows(child)
        else:
            yield _text(child)
    tail = (el.text or "").strip()
    if tail:
        yield tail


def _table_rows(table: etree._Element) -> Iterator[str]:
    """One self-contained line per body row: its first cell, then ``header: value`` for the others.

    A dose cut out of a table must keep its column's meaning (``Intermittent regimen: 15 mg/kg``,
    not a bare ``15 mg/kg``), since a chunk or a quoted sentence is read without the table around it.
    Rows whose cell count differs from the header's (spans) fall back to ``a | b | c``.
    """
    caption = _text(table.find("v3:caption", _NS))
    if caption:
        yield caption
    header: list[str] = []
    for row in table.iter(f"{{{HL7}}}tr"):
        cells = [c for c in row if isinstance(c.tag, str)]
        texts = [_text(c) for c in cells]
        parent = row.getparent()
        in_head = parent is not None and etree.QName(parent).localname == "thead"
        if not header and (in_head or all(etree.QName(c).localname == "th" for c in cells)):
            header = texts
            continue
        if header and len(texts) == len(header) and len(texts) > 1:
            pairs = [f"{h}: {t}" if h else t for h, t in zip(header[1:], texts[1:], strict=True) if t]
            yield " \u2014 ".join(x for x in (texts[0], "; ".join(pairs)) if x)
        else:
            yield " | ".join(t for t in texts if t)


def _section_paragraphs(section: etree._Element) -> list[str]:
    """Text of a section and all its subsections (subsection titles as their own paragraphs)."""
    out: list[str] = []
    text = section.find("v3:text", _NS)
    if text is not None:
        out.extend(_blocks(text))
    for sub in section.iterfind("v3:component/v3:section", _NS):
        title = _text(sub.find("v3:title", _NS))
        if title:
            out.append(title)
        out.extend(_section_paragraphs(sub))
    return [p for p in out if p]


def _identity(root: etree._Element) -> tuple[list[str], dict[str, str]]:
    """Proprietary names (in order) and every drug name with its kind."""
    names: dict[str, str] = {}
    proprietary: list[str] = []
    products = root.iterfind(".//v3:manufacturedProduct/v3:manufacturedProduct", _NS)
    medicines = root.iterfind(".//v3:manufacturedProduct/v3:manufacturedMedicine", _NS)
    for product in [*products, *medicines]:
        name = _text(product.find("v3:name", _NS))
        if name:
            proprietary.append(name)
            names.setdefault(name.lower(), "proprietary")
        for generic in product.iterfind(".//v3:genericMedicine/v3:name", _NS):
            for variant in name_variants(_text(generic)):
                names.setdefault(variant, "generic")
        active = [
            ing.find("v3:ingredientSubstance/v3:name", _NS)
            for ing in product.iterfind(".//v3:ingredient", _NS)
            if ing.get("classCode") in _ACTIVE
        ]
        # Labels written before the 2009 SPL schema name active ingredients this way.
        active += product.findall(".//v3:activeIngredient/v3:activeIngredientSubstance/v3:name", _NS)
        for name_el in active:
            for variant in name_variants(_text(name_el)):
                names.setdefault(variant, "ingredient")
    for name in list(names):
        for other in synonyms(name):
            names.setdefault(other, "synonym")
    return list(dict.fromkeys(proprietary)), {k: v for k, v in names.items() if k}


def _attr(root: etree._Element, path: str, attr: str) -> str | None:
    el = root.find(path, _NS)
    return el.get(attr) if el is not None else None


def parse_spl(data: bytes, source: str, kb: str, settings: KBSettings, counter: TokenCounter) -> Document:
    """Parse one SPL file into a :class:`Document`; raises :class:`DocumentError` if it is not a usable SPL."""
    root = parse_untrusted_xml(data, source, int(settings.max_file_mb * 1024 * 1024))
    if root.tag != f"{{{HL7}}}document":
        raise DocumentError(f"{source}: not an SPL document (root element {root.tag!r}, expected HL7 v3 document)")
    set_id = _attr(root, "v3:setId", "root")
    if not set_id:
        raise DocumentError(f"{source}: SPL without setId")
    version = _attr(root, "v3:versionNumber", "value")
    eff = _attr(root, "v3:effectiveTime", "value") or ""
    effective = f"{eff[:4]}-{eff[4:6]}-{eff[6:8]}" if re.fullmatch(r"\d{8}.*", eff) else None
    proprietary, names = _identity(root)
    title = proprietary[0] if proprietary else _text(root.find("v3:title", _NS)) or set_id
    drug_names = tuple(names)
    doc_id = f"spl:{set_id}"
    chunks: list[Chunk] = []
    body = root.iterfind("v3:component/v3:structuredBody/v3:component/v3:section", _NS)
    for sec_no, section in enumerate(body):
        own_code = _attr(section, "v3:code", "code")
        sec_title = _text(section.find("v3:title", _NS))
        code = classify_section(own_code, sec_title)
        if code in _SKIP_CODES:
            continue
        sec_title = sec_title or SECTION_NAMES.get(code or "", "")
        parts = pack_paragraphs(_section_paragraphs(section), settings.spl_section_tokens, 0, counter)
        for part_no, text in enumerate(parts):
            chunks.append(
                Chunk(
                    chunk_id=f"{doc_id}#s{sec_no}.{part_no}",
                    doc_id=doc_id,
                    kb=kb,
                    text=text,
                    source=source,
                    title=title,
                    section_path=(sec_title,) if sec_title else (),
                    section_code=code,
                    section_title=sec_title,
                    drug_names=drug_names,
                    set_id=set_id,
                    version=version,
                    effective_date=effective,
                )
            )
    if not chunks:
        raise DocumentError(f"{source}: SPL has no section text")
    return Document(doc_id, source, title, hashlib.sha256(data).hexdigest(), chunks, names)
