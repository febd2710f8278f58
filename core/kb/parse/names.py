"""Drug-name normalisation: lowercase forms and salt-free synonyms."""

from __future__ import annotations

import re

__all__ = ["name_variants", "synonyms"]

# Salt and hydrate words dropped to get the moiety ("metformin hydrochloride" -> "metformin").
_SALTS = (
    "hydrochloride|hcl|hydrobromide|sodium|potassium|calcium|magnesium|maleate|besylate|mesylate|succinate|"
    "tartrate|bitartrate|citrate|sulfate|sulphate|acetate|phosphate|bromide|chloride|fumarate|hyclate|"
    "monohydrate|dihydrate|trihydrate|hemihydrate|anhydrous|dipropionate|propionate|valerate|furoate|"
    "disodium|dihydrochloride|tromethamine|lysine|medoxomil|mononitrate|nitrate|oxalate|lactate|gluconate"
)
_SALT_RE = re.compile(rf"\b({_SALTS})\b", re.IGNORECASE)


def name_variants(name: str) -> list[str]:
    """The lowercase name and, when it contains salt words, the bare moiety."""
    clean = re.sub(r"\s+", " ", name).strip().lower()
    if not clean:
        return []
    out = [clean]
    bare = re.sub(r"\s+", " ", _SALT_RE.sub(" ", clean)).strip(" ,")
    if bare and bare != clean:
        out.append(bare)
    return out


# US adopted names <-> international non-proprietary names that differ (both directions are added).
_USAN_INN = {
    "rifampin": "rifampicin",
    "acetaminophen": "paracetamol",
    "albuterol": "salbutamol",
    "epinephrine": "adrenaline",
    "norepinephrine": "noradrenaline",
    "glyburide": "glibenclamide",
    "meperidine": "pethidine",
    "cyclosporine": "ciclosporin",
    "cephalexin": "cefalexin",
    "amoxicillin": "amoxycillin",
    "furosemide": "frusemide",
    "levothyroxine": "thyroxine",
    "lidocaine": "lignocaine",
    "sulfamethoxazole": "sulphamethoxazole",
    "trimethoprim-sulfamethoxazole": "co-trimoxazole",
}
_BOTH = {**_USAN_INN, **{v: k for k, v in _USAN_INN.items()}}


def synonyms(name: str) -> list[str]:
    """Other names of the same substance (USAN <-> INN), lowercase; empty when none are known."""
    clean = name.strip().lower()
    return [_BOTH[clean]] if clean in _BOTH else []
