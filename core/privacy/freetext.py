"""Identifiers in free text beyond the user table: people's names, street addresses and postcodes.

:class:`core.privacy.deid.Deidentifier` finds the names of Casebook's users by dictionary. An
uploaded document or a report also names people who are not users ("Alvarez, 12 Elm Street,
Leeds LS1 4AP"); this module finds them, in the case-preserved normalised text:

* ``ADDRESS``: a house number, up to three words and a street word ("12 Elm Street", "4b Mill
  Lane"), a flat or unit number before it, and the town and postcode after it;
* ``POSTCODE``: a UK postcode (inward letters from the Royal Mail set, so "2cm" or "5mm" never
  match) or a US ZIP after a state or "zip";
* ``NAME``: capitalised words that are people's names by the company they keep: after a title
  (Mr, Mrs, Dr...), after a relation or role ("wife", "daughter", "contact", "seen by", "GP"),
  before an address ("Alvarez, 12 Elm Street"), in "Surname, Firstname" form, or a word of the
  name dictionary (the first and last names of every Latin-script locale of Faker, about 35,000,
  accents folded) that is rare as an English word (wordfreq Zipf < 4.5) or stands beside another
  capitalised name word. An eponym ("Graves orbitopathy", "Parkinson's disease", "Hodgkin
  lymphoma") is not a person: a name word followed by a disease or sign word is left alone.

Measured on hand-written names and addresses that are not drawn from the dictionary
(``tests/test_phi_freetext.py``; docs/PRIVACY.md).
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
import re
import unicodedata
from collections.abc import Sequence

__all__ = ["find_addresses", "find_names", "name_dictionary"]

_STREET = (r"(?:street|st|road|rd|avenue|ave|lane|ln|drive|dr|close|way|court|ct|place|pl|crescent|cres|terrace|"
           r"grove|gardens|gdns|square|sq|boulevard|blvd|park|hill|row|walk|mews|parade|rise|view|green|"
           r"croft|wharf|yard|highway|hwy|parkway|circle|trail|cottages|villas)")  # fmt: skip
_INWARD = "abdefghjlnpqrstuwxyz"  # letters a UK inward code may use (never c, i, k, m, o, v)
UK_POSTCODE = rf"\b[a-z]{{1,2}}\d[a-z\d]?\s*\d[{_INWARD}]{{2}}\b"
US_STATES = ["al", "ak", "az", "ar", "ca", "co", "ct", "de", "fl", "ga", "hi", "id", "il", "in", "ia", "ks", "ky", "la",
             "me", "md", "ma", "mi", "mn", "ms", "mo", "mt", "ne", "nv", "nh", "nj", "nm", "ny", "nc", "nd", "oh", "ok",
             "or", "pa", "ri", "sc", "sd", "tn", "tx", "ut", "vt", "va", "wa", "wv", "wi", "wy"]  # fmt: skip
_US_ZIP = rf"\b(?:(?:{'|'.join(US_STATES)})\.?|zip(?: code)?:?)\s+\d{{5}}(?:-\d{{4}})?\b"
_WORD = r"[a-z][a-z'’-]*"
_ADDRESS = re.compile(
    rf"(?:\b(?:flat|apt\.?|apartment|unit|suite)\s+\d+[a-z]?,?\s+)?"
    rf"\b\d{{1,5}}[a-z]?,?\s+(?:{_WORD}\s+){{1,3}}{_STREET}\b\.?"
    rf"(?:,?\s+(?:(?:{_WORD}\s+){{0,2}}?{_WORD},?\s+)?(?:{UK_POSTCODE}|(?:[a-z]{{2}}\s+)?\d{{5}}(?:-\d{{4}})?\b)"
    rf"|,\s+{_WORD}\b)?",  # the town and postcode, or a town after a comma
)
_TOWN_POSTCODE = re.compile(rf"\b(?:{_WORD},?\s+)?(?:{UK_POSTCODE})|{_US_ZIP}")

_TITLE = r"(?:mr|mrs|ms|miss|mx|dr|prof|professor|sir|dame|rev|sister|nurse|mister)\.?"
_CUE = (r"(?:wife|husband|partner|son|daughter|mother|father|mum|mom|dad|sister|brother|aunt|uncle|niece|nephew|"
        r"grandson|granddaughter|grandmother|grandfather|carer|guardian|friend|neighbour|neighbor|relative|"
        r"next of kin|nok|contact|patient|pt|called|named|name|seen by|referred by|reviewed by|signed by|"
        r"reported by|dictated by|gp|consultant|registrar|surgeon|physician|colleague|spoke (?:to|with)|"
        r"lives with|accompanied by|informed|c/o|attn|dear)")  # fmt: skip
_CAP = r"(?:[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)*|(?:Mc|Mac|O'|O’)[A-Z][a-z]+)"
_TITLED = re.compile(rf"(?<![\w])(?i:{_TITLE})\s+((?:{_CAP})(?:\s+{_CAP}){{0,2}})")
_CUED = re.compile(rf"(?<![\w])(?i:{_CUE})[:,]?\s+((?:{_CAP})(?:\s+{_CAP}){{0,2}})")
_BEFORE = re.compile(rf"({_CAP}(?:\s+{_CAP}){{0,2}}),?\s+$")  # the words just before an address
_SURNAME_FIRST = re.compile(rf"(?<![\w])({_CAP}),\s+({_CAP})(?=\s*(?:\(|,|;|\.|$|\s+(?i:dob|born|aged|age|mrn|nhs)\b))")
_EPONYM_HEAD = re.compile(
    r"\s*(?:'s|’s|s')?\s+(?:disease|syndrome|sign|signs|orbitopathy|ophthalmopathy|lymphoma|sarcoma|tumou?r|"
    r"features|palsy|score|scale|criteria|classification|fracture|test|phenomenon|reflex|manoeuvre|maneuver|type|"
    r"grade|law|cell|cells|node|nodes|ulcer|cyst|canal|duct|space|ligament|thyroiditis|encephalopathy|"
    r"dementia|disorder|anomaly|deformity|procedure|operation|repair|stage|staging|line|lines|triad|body|bodies|"
    r"formula|equation|index|ratio|method|technique|catheter|tube|forceps|view|projection)\b",
    re.IGNORECASE,
)
_JOIN = re.compile(r"[ \t]+(?:(?:van|von|de|da|del|della|di|du|der|den|le|la|ni|bin|binti|al|el|ter)[ \t]+)?")
_MONTHS = frozenset(["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
                     "november", "december"])  # fmt: skip


@functools.cache
def name_dictionary() -> frozenset[str]:
    """First and last names of every Latin-script Faker locale, accents folded, lower case (built once)."""
    import faker.providers.person as person

    out: set[str] = set()
    for mod in pkgutil.iter_modules(person.__path__):
        provider = importlib.import_module(f"faker.providers.person.{mod.name}").Provider
        for attr in ("first_names", "last_names", "first_names_male", "first_names_female"):
            values = getattr(provider, attr, ())
            if not isinstance(values, dict | list | tuple | set | frozenset):
                continue
            for name in values:
                folded = unicodedata.normalize("NFKD", str(name)).encode("ascii", "ignore").decode()
                if re.fullmatch(r"[A-Za-z'-]{2,}", folded) and len(folded) >= len(str(name)) - 1:
                    out.add(folded.lower())
    return frozenset(out - _MONTHS)


@functools.lru_cache(maxsize=65536)
def _rare(word: str, below: float = 4.5) -> bool:
    """True when ``word`` is rarer than ``below`` on wordfreq's Zipf scale (4.5: "grace"; 3.3: "latent")."""
    from wordfreq import zipf_frequency

    return zipf_frequency(word, "en") < below


def find_addresses(low: str) -> list[tuple[str, int, int]]:
    """``(kind, start, end)`` of street addresses and postcodes in normalised, case-folded ``low``."""
    out = [("ADDRESS", m.start(), m.end()) for m in _ADDRESS.finditer(low)]
    for m in _TOWN_POSTCODE.finditer(low):
        if not any(m.start() < e and s < m.end() for _, s, e in out):
            out.append(("POSTCODE", m.start(), m.end()))
    return out


def _eponym(text: str, end: int) -> bool:
    return _EPONYM_HEAD.match(text, end) is not None


def _known(word: str) -> bool:
    """A word of the name dictionary (apostrophes folded)."""
    return word.lower().replace("’", "'") in name_dictionary()


def find_names(cased: str, addresses: Sequence[tuple[str, int, int]] = ()) -> list[tuple[int, int]]:
    """Spans of people's names in normalised, case-preserved ``cased`` (see the module docstring).

    ``addresses`` are the spans :func:`find_addresses` found (a capitalised name just before one is a person).
    """
    spans: list[tuple[int, int]] = []
    for m in _TITLED.finditer(cased):  # "Dr Alvarez": a title always names a person
        if not _eponym(cased, m.end(1)):
            spans.append((m.start(1), m.end(1)))
    for m in _CUED.finditer(cased):  # "wife Maria", "seen by Okafor"; not "Patient Information"
        words = m.group(1).split()
        if any(_known(w) or _rare(w.lower()) for w in words) and not _eponym(cased, m.end(1)):
            spans.append((m.start(1), m.end(1)))
    for _, start, _end in addresses:  # "Alvarez, 12 Elm Street"
        if (before := _BEFORE.search(cased, 0, start)) is not None and before.end() == start:
            spans.append((before.start(1), before.end(1)))
    for m in _SURNAME_FIRST.finditer(cased):  # "Alvarez, Maria"
        if _known(m.group(1)) or _known(m.group(2)) or (_rare(m.group(1).lower(), 3.3) and _rare(m.group(2).lower(), 3.3)):
            spans.append((m.start(1), m.end(2)))
    run: list[re.Match[str]] = []

    def close() -> None:  # a run of capitalised words: dictionary words with the rare words beside them
        known = [_known(t.group(0)) for t in run]
        rare = [_rare(t.group(0).lower()) for t in run]
        unusual = [_rare(t.group(0).lower(), 3.3) for t in run]
        pair = next((i for i in range(len(run) - 1) if unusual[i] and unusual[i + 1]), None)
        if pair is not None and not any(known):  # two unusual capitalised words side by side: "Keiko Yamashita"
            known[pair] = known[pair + 1] = True
        if any(known) and (sum(known) >= 2 or any(k and r for k, r in zip(known, rare, strict=True))):
            keep = [i for i in range(len(run)) if known[i] or rare[i]]
            first, last = min(i for i in keep if known[i]), max(i for i in keep if known[i])
            while first > 0 and first - 1 in keep:
                first -= 1
            while last + 1 in keep:
                last += 1
            if not _eponym(cased, run[last].end()):
                spans.append((run[first].start(), run[last].end()))
        run.clear()

    for t in re.finditer(_CAP, cased):  # a run: capitalised words apart by spaces or a particle ("van Dijk")
        if run and not _JOIN.fullmatch(cased[run[-1].end() : t.start()]):
            close()
        run.append(t)
    close()
    merged: list[tuple[int, int]] = []  # overlapping readings of one name become its widest extent
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged
