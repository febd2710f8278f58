"""Doses as slots: which drug, for whom, how much, in which unit, for which weight band (pure).

A dose sentence or table row states one or more doses. Each becomes a :class:`DoseStatement`:

* the **drug** it belongs to: the nearest drug name before it in its sentence or row ("rifapentine
  1200 mg, isoniazid 300 mg": 1200 mg is rifapentine's), else "<amount> of <drug>" after it, else none;
* the **patient group** of its clause ("Adults: ...; Pediatric patients: ...") or table row
  (``guideline.populations``; a specific group before "adults"), else of its sentence's first clause,
  else the group of the passage it comes from;
* the **amount** as an interval ("15 to 30 mg/kg" is one; "1,000 mg" is a thousand) in a **unit**
  (mg, mg/kg, mg/m2; grams and micrograms in mg);
* its **kind**: a dose, a maximum ("up to 300 mg", "not to exceed 2 g") or a tablet strength
  ("2 x 50 mg", "400 mg tablets", a "Formulations:" or "Tablets:" cell);
* the **weight band** it is for ("40-54 kg", "under 55 kg", "75 kg or more"), if any.

Two statements compare only in the same slot (:func:`contradicts`): same drug, unit, kind, patient
group and weight band. A fixed dose for a weight band and a dose in mg/kg are different slots; they
are compared only for a gross error (the band's dose, read as mg/kg over the band, more than
``tolerance`` times outside the label's mg/kg range).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["DoseStatement", "contradicts", "dose_statements", "exceeds", "parse_amount", "stated_weight"]

_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_AMOUNT = re.compile(
    rf"(?P<lo>{_NUMBER})(?:\s*(?:-|–|to)\s*(?P<hi>{_NUMBER}))?\s*"
    r"(?P<unit>mg/kg|mg/m2|mg|g|mcg|µg|micrograms?|milligrams?|grams?)(?:/(?P<per>day|dose|d)\b)?(?![\w/])",
    re.IGNORECASE,
)
_TO_MG = {"g": 1000.0, "gram": 1000.0, "grams": 1000.0, "mcg": 0.001, "µg": 0.001, "microgram": 0.001,
          "micrograms": 0.001}  # fmt: skip
_UNIT = {"milligram": "mg", "milligrams": "mg"}
# A maximum is said with these words just before the amount; a strength with a count ("2 x 50 mg") or a dosage
# form right after it, or in a cell or clause whose heading names the form.
_MAX = re.compile(r"(?:max(?:imum)?(?: of)?|up to|not (?:to )?exceed(?:ing)?|(?:no|not|never) more than|at most)\W*$",
                  re.IGNORECASE)  # fmt: skip
_PER_DOSE = re.compile(r"\s*(?:/|per|a|each)\s*dose\b", re.IGNORECASE)
_PER_DAY = re.compile(r"\s*(?:(?:per|a|each)\s+day\b|(?:once\s+)?daily\b)", re.IGNORECASE)
_COUNT = re.compile(r"\d\s*[x×]\s*$", re.IGNORECASE)
_DOSE_WORD = re.compile(r"\bdos(?:e|es|ing)\b", re.IGNORECASE)  # "Tablets or dose (adults)" holds doses
_FORM = re.compile(r"\b(?:tablets?|tabs?|capsules?|formulations?|strengths?)\b", re.IGNORECASE)
_BANDS = (  # (pattern, kind): a closed range, below, at or above, one weight
    (re.compile(r"(\d+(?:\.\d+)?)\s*(?:-|–|to)\s*<?\s*(\d+(?:\.\d+)?)\s*kg\b", re.I), "range"),
    (re.compile(r"(?:under|below|less than|<)\s*(\d+(?:\.\d+)?)\s*kg\b", re.I), "below"),
    (re.compile(r"(?:(?:over|above|more than|at least|>|≥)\s*(\d+(?:\.\d+)?)\s*kg\b)|"
                r"(?:(\d+(?:\.\d+)?)\s*kg\s*(?:or more|or over|and (?:over|above)|\+))", re.I), "above"),
    (re.compile(r"(?<![\d/.])(\d+(?:\.\d+)?)\s*kg\b(?!\s*(?:or|and)\b)", re.I), "one"),
)


@dataclass(frozen=True)
class DoseStatement:
    """One dose a text states: drug, group, amount interval, unit, kind and weight band (kg, ``None``: none)."""

    drug: str | None
    low: float
    high: float
    unit: str
    kind: str = "dose"  # dose | max | strength
    population: str | None = None
    band: tuple[float, float] | None = None
    per: str | None = None  # "dose" or "day" when the text says which ("250 mg per dose", "750 mg daily")
    text: str = field(default="", compare=False)  # the sentence or table row that states it

    def label(self) -> str:
        """``25-35 mg/kg``, ``max 2000 mg``, ``1200 mg (40-54 kg)``."""
        amount = f"{self.low:g}" if self.low == self.high else f"{self.low:g}-{self.high:g}"
        band = ""
        if self.band is not None:
            lo, hi = self.band
            band = f" ({lo:g}-{hi:g} kg)" if math.isfinite(hi) and lo else (f" (under {hi:g} kg)" if not lo
                                                                          else f" ({lo:g} kg or more)")  # fmt: skip
        return ("max " if self.kind == "max" else "") + f"{amount} {self.unit}{band}"


def parse_amount(lo: str, hi: str | None, unit: str) -> tuple[float, float, str]:
    """``(low, high, unit)`` with grams and micrograms in mg; a comma before three digits groups thousands."""
    unit = unit.lower()
    factor = _TO_MG.get(unit, 1.0)
    base = "mg" if unit in _TO_MG else _UNIT.get(unit, unit)
    a = float(lo.replace(",", "")) * factor
    b = float(hi.replace(",", "")) * factor if hi else a
    return round(min(a, b), 4), round(max(a, b), 4), base


def _bands(text: str) -> list[tuple[int, int, tuple[float, float]]]:
    """Every weight band in ``text`` as ``(start, end, (low kg, high kg))``, without overlaps."""
    found: list[tuple[int, int, tuple[float, float]]] = []
    for pattern, kind in _BANDS:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for s, e, _ in found):
                continue
            nums = [float(g) for g in m.groups() if g]
            low = 0.0 if kind == "below" else nums[0]
            high = {"range": nums[-1], "below": nums[0], "above": math.inf, "one": nums[0]}[kind]
            found.append((m.start(), m.end(), (low, high)))
    return sorted(found)


def stated_weight(text: str) -> float | None:
    """The one body weight a question gives ("PZA dose for a 48 kg adult?": 48), else ``None`` (none, or a band)."""
    found = [band for _, _, band in _bands(text)]
    return found[0][0] if len(found) == 1 and found[0][0] == found[0][1] else None


def _group(text: str, populations: Mapping[str, re.Pattern[str]]) -> str | None:
    found = [name for name, pattern in populations.items() if pattern.search(text)]
    return next((g for g in found if g != "adults"), found[0] if found else None)


def _units(text: str) -> list[str]:
    """A text's units of meaning for doses: each table row, else each sentence (a line may hold several)."""
    out: list[str] = []
    for line in text.splitlines():
        out += [line] if " | " in line else [s for s in re.split(r"(?<=[.!?])\s+(?=[A-Z(])", line) if s.strip()]
    return out


def dose_statements(
    text: str, drugs: Mapping[str, str], populations: Mapping[str, re.Pattern[str]], *,
    drug: str | None = None, population: str | None = None,
) -> list[DoseStatement]:  # fmt: skip
    """The doses ``text`` states, each in its slot (see the module docstring).

    ``drugs`` maps every spelling to the drug's key (brand, generic and alias to one name); ``drug``
    is the drug every dose belongs to when the text is that drug's label; ``population`` the group
    of the passage, used when a sentence names none.
    """
    names = sorted(drugs, key=len, reverse=True)
    name_re = re.compile(r"(?<![\w-])(" + "|".join(re.escape(n) for n in names) + r")(?![\w-])", re.I) if names else None
    out: list[DoseStatement] = []
    for unit_text in _units(text):
        clauses = [(m.start(), m.group(0)) for m in re.finditer(r"[^;]+", unit_text)] if " | " not in unit_text else []
        lead = _group(clauses[0][1], populations) if clauses else None  # "Adults — 5 mg/kg; Intermittent: 15 mg/kg"
        row_group = _group(unit_text, populations) or population
        bands = _bands(unit_text)
        mentions = [(m.start(), drugs[m.group(1).lower()]) for m in name_re.finditer(unit_text)] if name_re else []
        amounts = list(_AMOUNT.finditer(unit_text))
        attached = {i for m in amounts if (i := _right_after(bands, m.end(), unit_text)) is not None}
        for m in amounts:
            low, high, unit = parse_amount(m.group("lo"), m.group("hi"), m.group("unit"))
            clause_start = max(unit_text.rfind(c, 0, m.start()) for c in (";", " | ", "\n")) + 1
            head = unit_text[clause_start : m.start()]
            cell = head.split(":")[0] if ":" in head else ""
            after = unit_text[m.end() : m.end() + 20]
            kind = "dose"
            if _MAX.search(unit_text[max(0, m.start() - 30) : m.start()]):
                kind = "max"
            elif _COUNT.search(head) or re.match(r"\s*(?:tablets?|tabs?|capsules?)\b", after, re.I) or (_FORM.search(cell)
                                                                                            and not _DOSE_WORD.search(cell)):
                kind = "strength"
            who = drug
            if who is None:
                before = [d for s, d in mentions if s < m.start()]
                of = re.match(r"\s*(?:of|daily of)\s+(\S+)", after)
                who = before[-1] if before else (drugs.get(of.group(1).lower().strip(".,;")) if of else None)
            clause = next((c for start, c in reversed(clauses) if start <= m.start()), None)
            group = (_group(clause, populations) or lead or population) if clause is not None else row_group
            band = _band_of(bands, m.start(), m.end(), unit_text, attached)
            per = "dose" if m.group("per") == "dose" or _PER_DOSE.match(after) else None
            per = per or ("day" if m.group("per") or _PER_DAY.match(after) else None)
            out.append(DoseStatement(who, low, high, unit, kind, group, band, per, unit_text.strip()))
    return out


def _band_of(bands: list[tuple[int, int, tuple[float, float]]], start: int, end: int, text: str,
             attached: set[int]) -> tuple[float, float] | None:  # fmt: skip
    """The weight band a dose at ``start:end`` is for: one right after it ("800 mg for 40 to 55 kg",
    "1500 mg (under 55 kg)"), else the last band before it that no other dose claims ("Weight band: 40-54 kg |
    ... 1200 mg"), else the one band of its sentence or row; ``None`` when it names none."""
    own = _right_after(bands, end, text)
    if own is not None:
        return bands[own][2]
    before = [band for i, (_, e, band) in enumerate(bands) if e <= start and i not in attached]
    if before:
        return before[-1]
    return bands[0][2] if len(bands) == 1 else None


def _right_after(bands: list[tuple[int, int, tuple[float, float]]], end: int, text: str) -> int | None:
    """The index of the band written right after a dose ending at ``end``, or ``None``."""
    for i, (s, _, _) in enumerate(bands):
        if s >= end and re.fullmatch(r"\s*(?:\(|for\s+|in\s+)?\s*(?:patients?\s+)?(?:weighing\s+)?", text[end:s], re.I):
            return i
    return None


def _matches_group(asked: str | None, stated: str | None) -> bool:
    """Whether a label line for ``stated`` speaks of ``asked``: the same group, or a general line for adults."""
    if asked in (None, "adults"):
        return stated in (None, "adults")
    return stated == asked


def _same_band(a: tuple[float, float], b: tuple[float, float]) -> bool:
    """The same weight band, written either way ("40-54 kg" and "40 to 55 kg")."""
    return all(abs(x - y) <= 1.0 or x == y for x, y in zip(a, b, strict=True))


def contradicts(stated: DoseStatement, label: Sequence[DoseStatement], tolerance: float) -> list[DoseStatement]:
    """The label's statements that ``stated`` contradicts, or ``[]`` (consistent, or no comparable statement).

    Comparable: the same drug, patient group, kind and unit, and the same weight band or none (the
    label's line for the group itself when it has one, else its general line). A
    contradiction is an amount whose interval overlaps none of the label's for that slot, a maximum above
    the label's (a lower one is more cautious, not against it), or a dose above the label's maximum for
    the group when the label states only a maximum in that unit. A weight
    band's fixed dose is compared with the label's mg/kg only for a gross error: read as mg/kg over
    the band, it lies more than ``tolerance`` times outside the label's mg/kg range.
    """
    if stated.drug is None or stated.kind == "strength":
        return []
    same = [s for s in label if s.drug == stated.drug and s.kind == stated.kind
            and _matches_group(stated.population, s.population)
            and (s.per is None or stated.per is None or s.per == stated.per)]  # fmt: skip
    direct = [s for s in same if s.unit == stated.unit
              and ((s.band is None and stated.band is None) or (s.band and stated.band and _same_band(s.band, stated.band)))]  # fmt: skip
    direct = [s for s in direct if s.population == stated.population] or direct  # the group's own line first
    if direct and stated.kind == "max":  # a lower maximum is more cautious than the label, not against it
        return direct if stated.high > max(s.high for s in direct) else []
    if direct:
        overlap = any(s.low <= stated.high and stated.low <= s.high for s in direct)
        return [] if overlap else direct
    caps = [s for s in label if s.drug == stated.drug and s.kind == "max" and s.unit == stated.unit and s.band is None
            and _matches_group(stated.population, s.population) and (s.per is None or stated.per in (None, s.per))]  # fmt: skip
    if stated.kind == "dose" and stated.band is None and caps and stated.low > max(s.high for s in caps):
        return caps  # above the label's maximum for the same group ("up to 300 mg" against "3000 mg")
    if stated.band is None or stated.unit != "mg" or stated.kind != "dose":
        return []
    per_kg = [s for s in same if s.unit == "mg/kg" and s.band is None]
    lo_kg, hi_kg = stated.band
    if not per_kg or lo_kg <= 0 or not math.isfinite(hi_kg):
        return []  # an open band ("under 55 kg", "75 kg or more") sets no bound to compare
    implied = (stated.low / hi_kg, stated.high / lo_kg)
    lowest, highest = min(s.low for s in per_kg), max(s.high for s in per_kg)
    if implied[1] * tolerance < lowest or implied[0] > highest * tolerance:
        return per_kg
    return []


def exceeds(stated: DoseStatement, label: Sequence[DoseStatement], weight: float | None,
            tolerance: float) -> list[DoseStatement]:  # fmt: skip
    """The label's statements that ``stated`` lies above, or ``[]``: a proposed dose checked against a label.

    Above every dose and maximum the label states for the drug and group in the same unit (a tablet
    strength never counts; a daily amount is not compared with a per-dose one when both say which); or, in mg for a patient of ``weight`` kg, more than ``tolerance`` times
    the label's highest mg/kg.
    """
    if stated.drug is None or stated.kind == "strength":
        return []
    mine = [s for s in label if s.drug == stated.drug and s.kind != "strength" and s.band is None
            and _matches_group(stated.population, s.population)
            and (s.per is None or stated.per is None or s.per == stated.per)]  # "daily" is not held to a per-dose cap
    same = [s for s in mine if s.unit == stated.unit]
    if same and stated.low > max(s.high for s in same):
        return same
    per_kg = [s for s in mine if s.unit == "mg/kg"]
    if stated.unit == "mg" and weight and per_kg and stated.low / weight > tolerance * max(s.high for s in per_kg):
        return per_kg
    return []
