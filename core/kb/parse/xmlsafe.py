"""A hardened lxml parser for untrusted XML (SPL drug labels).

No network, no DTD loading, no entity expansion, no huge trees. A document
that declares entities or a DOCTYPE is refused outright: SPL never needs one,
and refusing it is the simplest defence against XXE and billion-laughs
payloads. Everything that goes wrong becomes :class:`DocumentError`.
"""

from __future__ import annotations

import re

from lxml import etree

from core.errors import DocumentError

__all__ = ["parse_untrusted_xml"]

_DTD = re.compile(rb"<!\s*(DOCTYPE|ENTITY)", re.IGNORECASE)


def _parser() -> etree.XMLParser:
    return etree.XMLParser(
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,  # libxml2's default limits on depth and text node size stay on
        remove_comments=True,
        remove_pis=True,
    )


def parse_untrusted_xml(data: bytes, source: str, max_bytes: int) -> etree._Element:
    """Parse ``data`` safely and return its root element.

    Raises :class:`DocumentError` for oversize input, any DOCTYPE or ENTITY
    declaration, malformed or truncated XML, and non-XML bytes.
    """
    if len(data) > max_bytes:
        raise DocumentError(f"{source}: {len(data)} bytes is over the {max_bytes}-byte limit for one XML file")
    if not data.strip():
        raise DocumentError(f"{source}: empty file")
    if _DTD.search(data):
        raise DocumentError(f"{source}: DOCTYPE/ENTITY declarations are not accepted (possible XXE or entity bomb)")
    try:
        root = etree.fromstring(data, parser=_parser())
    except etree.XMLSyntaxError as exc:
        raise DocumentError(f"{source}: malformed XML ({exc.msg or exc})") from exc
    except ValueError as exc:
        raise DocumentError(f"{source}: not XML ({exc})") from exc
    if root is None:
        raise DocumentError(f"{source}: no XML root element")
    return root
