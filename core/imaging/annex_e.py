"""The DICOM PS3.15 Annex E Basic Profile table (Table E.1-1), from a maintained source, applied to every file.

**Where the table comes from.** ``dicom-anonymizer`` (KitwareMedical, BSD-3) ships the table as
data generated from the standard's own HTML, one module per edition; this module reads the newest
(``dicomfields_2026c``: 650 attributes and repeating-group masks, each with its action code).
The alternatives were compared: ``dicognito`` keeps a hand list of what it replaces (it left 19 of
40 planted attributes, issue 26); pydicom ships no Annex E table; ``deid``'s default recipe is a
curated recipe of header filters and actions, not the standard's table. The table is never
edited here: :func:`annex_e_rows` lists it and ``docs/DICOM_ANNEX_E.md`` is generated from it
(``python -m core annex-e``; a test compares the two).

**What each action does here** (after ``dicognito`` has replaced names, remapped UIDs and, with
``imaging.retain_longitudinal_dates``, shifted dates):

- ``X`` and every action that allows X (``X/Z``, ``X/D``, ``X/Z/D``, ``X/Z/U*``): the element is
  removed, at any depth of sequences;
- ``Z`` and ``Z/D``: emptied;
- ``D``: a text value becomes a dummy, any other value is removed;
- ``U``: UIDs are derived again under the patient's secret seed, after dicognito's remapping
  (so a UID attribute dicognito does not know is replaced too; the same UID always maps alike);
- dates (DA, DT) under ``Z``, ``D`` or their combinations keep their shifted value when the
  *Retain Longitudinal Temporal Information with Modified Dates* option is on;
- the patient's birth date follows ``imaging.birth_date``: ``remove`` (empty) or ``year`` (the
  original year, as ``YYYY0101``);
- curves (groups 50xx) and overlays (60xx) are removed whole, not just their data and comments.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["AnnexERow", "annex_e_rows", "apply_annex_e", "markdown_table", "planted_value"]

EDITION = "dicomfields_2026c"
_CATEGORIES = {"D_TAGS": "D", "Z_TAGS": "Z", "X_TAGS": "X", "U_TAGS": "U", "Z_D_TAGS": "Z/D", "X_Z_TAGS": "X/Z",
               "X_D_TAGS": "X/D", "X_Z_D_TAGS": "X/Z/D", "X_Z_U_STAR_TAGS": "X/Z/U*"}  # fmt: skip
_TEMPORAL = {"DA", "DT"}  # dicognito shifts every DA and DT; times (TM) follow the table
_TEXT = {"AE", "AS", "CS", "LO", "LT", "PN", "SH", "ST", "UC", "UT", "UR"}
BIRTH_DATE = 0x00100030


@dataclass(frozen=True)
class AnnexERow:
    """One row of Table E.1-1: a tag (or a repeating-group mask), its name and its Basic Profile action."""

    group: int
    element: int
    group_mask: int
    element_mask: int
    name: str
    action: str

    def matches(self, tag: int) -> bool:
        """Whether element ``tag`` (``0xGGGGEEEE``) is this row's attribute."""
        return (tag >> 16) & self.group_mask == self.group and tag & 0xFFFF & self.element_mask == self.element

    @property
    def tag_text(self) -> str:
        """``(GGGG,EEEE)`` with ``xx`` for masked digits."""
        g = f"{self.group:04X}" if self.group_mask == 0xFFFF else f"{self.group >> 8:02X}xx"
        e = f"{self.element:04X}" if self.element_mask == 0xFFFF else "xxxx"
        return f"({g},{e})"


@functools.cache
def annex_e_rows() -> tuple[AnnexERow, ...]:
    """Every row of the table, as the maintained source lists it (names from its comments, via pydicom)."""
    import importlib

    from pydicom.datadict import keyword_for_tag

    table = importlib.import_module(f"dicomanonymizer.dicom_anonymization_databases.{EDITION}")
    rows: dict[tuple[int, int, int, int], AnnexERow] = {}
    for attr, action in _CATEGORIES.items():
        for entry in getattr(table, attr):
            g, e, gm, em = (*entry, 0xFFFF, 0xFFFF)[:4] if len(entry) == 2 else entry
            name = keyword_for_tag((g << 16) | e) if gm == 0xFFFF and em == 0xFFFF else ""
            rows.setdefault((g, e, gm, em), AnnexERow(g, e, gm, em, name or f"{g:04X},{e:04X} (repeating)", action))
    return tuple(sorted(rows.values(), key=lambda r: (r.group, r.element)))


@functools.cache
def _exact() -> dict[int, str]:
    return {(r.group << 16) | r.element: r.action for r in annex_e_rows() if r.group_mask == r.element_mask == 0xFFFF}


def action_for(tag: int) -> str | None:
    """The Basic Profile action of ``tag``, or ``None`` when the table does not list it (the element is kept)."""
    if (found := _exact().get(tag)) is not None:
        return found
    return next((r.action for r in annex_e_rows() if r.group_mask != 0xFFFF or r.element_mask != 0xFFFF
                 if r.matches(tag)), None)  # fmt: skip


def _curve_or_overlay(tag: int) -> bool:
    group = tag >> 16
    return group % 2 == 0 and (0x5000 <= group <= 0x50FF or 0x6000 <= group <= 0x60FF)


def _datasets(ds: Any) -> Iterator[Any]:
    """``ds`` and every dataset nested in its sequences."""
    yield ds
    for elem in list(ds):
        if elem.VR == "SQ" and elem.value is not None:
            for item in elem.value:
                yield from _datasets(item)


def _uid(value: str, salt: str) -> str:
    """A UID derived from ``value`` under ``salt`` (the same input always gives the same UID)."""
    import hashlib

    return "2.25." + str(int(hashlib.sha256(f"{salt}\x1f{value}".encode()).hexdigest()[:30], 16))


def apply_annex_e(
    ds: Any, *, retain_dates: bool, birth_date: Literal["remove", "year"], birth_year: str, uid_salt: str
) -> int:
    """Apply the table to ``ds`` in place (see the module docstring); returns the elements changed or removed.

    ``uid_salt`` (the patient's secret seed) derives every ``U`` UID again, so one dicognito did not
    know (a newer attribute) is replaced too, consistently across files.
    """
    changed = 0
    for item in list(_datasets(ds)):
        for elem in list(item):
            tag = int(elem.tag)
            action = "X" if _curve_or_overlay(tag) else action_for(tag)
            if action is None:
                continue
            if action == "U":
                if elem.VR == "UI" and elem.value:
                    values = elem.value if isinstance(elem.value, list) or elem.VM > 1 else [elem.value]
                    new = [_uid(str(v), uid_salt) for v in values]
                    elem.value = new if len(new) > 1 else new[0]
                    changed += 1
                continue
            if tag == BIRTH_DATE:
                elem.value = f"{birth_year}0101" if birth_date == "year" and birth_year else ""
            elif retain_dates and elem.VR in _TEMPORAL and ("Z" in action or "D" in action):
                continue  # shifted by dicognito: the Modified Dates option
            elif action.startswith("X"):
                del item[elem.tag]
            elif action.startswith("Z"):
                elem.value = [] if elem.VR == "SQ" else ""
            elif elem.VR in _TEXT:
                elem.value = {"PN": "Redacted", "AS": "000D"}.get(elem.VR, "REDACTED")
            else:
                del item[elem.tag]
            changed += 1
    return changed


def planted_value(vr: str, i: int) -> Any:
    """A distinctive value of ``vr`` for planting attribute number ``i`` (tests, and the table's own check)."""
    from pydicom.dataset import Dataset

    text = {"PN": f"Planted^Person{i}", "DA": f"{1950 + i % 50}0{1 + i % 9}1{i % 9}", "TM": f"1{i % 10}3000",
            "DT": f"{1950 + i % 50}0101120000", "UI": f"1.2.826.0.1.3680043.10.{i}", "AS": "042Y", "CS": f"PLANTED{i}",
            "IS": str(1000 + i), "DS": f"{1000 + i}.5", "AE": f"PLANT{i}", "UR": f"http://planted.example/{i}"}  # fmt: skip
    if vr in text:
        return text[vr]
    if vr in ("LO", "SH", "LT", "ST", "UT", "UC"):
        return f"planted-{i}"
    if vr in ("US", "UL", "SS", "SL", "UV", "SV"):
        return 1000 + i
    if vr in ("FL", "FD"):
        return 1000.5 + i
    if vr == "AT":
        return 0x00100010
    if vr == "SQ":
        inner = Dataset()
        inner.CodeMeaning = f"planted-{i}"
        return [inner]
    return f"planted-{i}".encode().ljust(16, b"\0")  # OB, OW, UN and the rest


def markdown_table() -> str:
    """``docs/DICOM_ANNEX_E.md``: every row of the table and what Casebook does with it."""
    does = {"X": "removed", "Z": "emptied", "D": "dummy text, else removed", "U": "UID derived again under the seed"}
    lines = [
        "# DICOM PS3.15 Annex E Basic Profile: the table Casebook applies",
        "",
        f"Generated by `python -m core annex-e` from `dicom-anonymizer`'s `{EDITION}` (the standard's",
        "Table E.1-1 as data); `tests/test_dicom_annex_e.py` checks this file matches the code and plants every row.",
        "Dates (DA, DT) under Z or D keep their shifted value with `imaging.retain_longitudinal_dates`; the",
        "birth date follows `imaging.birth_date`; curves (50xx) and overlays (60xx) are removed whole.",
        "",
        "| tag | attribute | action | Casebook |",
        "|---|---|---|---|",
    ]
    for r in annex_e_rows():
        first = "X" if r.action.startswith("X") else r.action[0]
        lines.append(f"| {r.tag_text} | {r.name} | {r.action} | {does[first]} |")
    return "\n".join(lines) + "\n"
