"""Write tests/data/phi_sentences.json: 200 synthetic clinical sentences with planted identifiers.

Synthetic data written for this project, not for clinical use. Every name is
invented; the ``users`` list plays the user table. Each sentence records the
exact spans planted in it (type, start, end), so a scrubber's recall and
precision can be measured per type (``bench/phi_bench.py``). About a fifth of
the sentences plant nothing and carry look-alikes that must survive: case ids,
measurements, percentages, ages, years, vertebral levels and eponyms.

Run: ``python bench/phi_corpus.py`` (seeded; the output is committed).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "data" / "phi_sentences.json"
SEED = 20261125
N = 200

USERS = [
    "Rahul Mehta", "Imran Khan", "Priya Nair", "Tomas Novak", "Maria Gonzalez", "Hannah Schmidt", "Li Wei",
    "Ananya Iyer", "Sarah Chen", "Ahmed Hassan", "Olusegun Adeyemi", "Fiona MacLeod", "Kenji Watanabe",
    "Zofia Kowalska", "Mateus Oliveira", "Aisha Rahman", "Bjorn Lindqvist", "Chidi Okafor", "Elena Petrova",
    "Grace O'Neill", "Jonas Berg", "Leila Haddad", "Marco Rossi", "Nadia Benali", "Owen Price", "Ruth Abebe",
    "Samuel Osei", "Tara Fitzgerald", "Yusuf Demir", "Ingrid Solberg",
]  # fmt: skip
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]  # fmt: skip
CLINICAL = [
    "hyperinflated lungs with upper-lobe emphysema",
    "a 2 cm apical bulla on the right",
    "lobar consolidation with air bronchograms",
    "no pneumothorax and no effusion",
    "a 6 mm nodule in the right middle lobe, stable since 2023",
    "T2-weighted hyperintensity at C5-C6",
    "disc protrusion at L4-L5 with 40% canal narrowing",
    "similarity 0.91 to HC-00012 and 87% to HC-00431",
    "Graves orbitopathy without optic nerve compression",
    "a 12-month follow-up showed stable findings",
    "Parkinson features were not assessed on this study",
    "Hodgkin lymphoma in remission per the 2019 report",
    "ejection fraction estimated at 55 percent",
    "BI-RADS 3 lesion measuring 9 x 7 mm",
    "grade 2 retinopathy in both eyes",
]


def _date(rng: random.Random) -> str:
    y, m, d = rng.randint(1931, 2026), rng.randint(1, 12), rng.randint(1, 28)
    return rng.choice(
        [
            f"{y}-{m:02d}-{d:02d}",
            f"{d:02d}/{m:02d}/{y}",
            f"{d}.{m}.{y}",
            f"{d} {MONTHS[m - 1]} {y}",
            f"{MONTHS[m - 1]} {d}, {y}",
            f"{d}-{MONTHS[m - 1][:3]}-{y}",
            f"{d}th of {MONTHS[m - 1]} {y}",
            f"{d:02d}/{m:02d}/{y % 100:02d}",
        ]
    )


def _record(rng: random.Random) -> tuple[str, str]:
    n = "".join(rng.choice("0123456789") for _ in range(rng.randint(6, 10)))
    return rng.choice(
        [
            ("MRN ", n),
            ("MRN: ", n),
            ("medical record number ", n),
            ("hospital number ", f"{rng.choice('ABKQZ')}{n}"),
            ("record no. ", f"RX-{n}"),
            ("patient ID ", n),
            ("NHS number ", f"{n[:3]} {n[3:6]} {rng.randint(1000, 9999)}"),
            ("", f"{rng.choice(['A', 'MR', 'H'])}{n}"),
        ]
    )


def _phone(rng: random.Random) -> str:
    d = lambda k: "".join(rng.choice("0123456789") for _ in range(k))  # noqa: E731
    return rng.choice(
        [
            f"+44 20 {d(4)} {d(4)}",
            f"(020) {d(4)} {d(4)}",
            f"07700 {d(6)}",
            f"555-{d(3)}-{d(4)}",
            f"+1 415 {d(3)} {d(4)}",
        ]
    )


def _email(rng: random.Random, name: str) -> str:
    first, last = name.lower().replace("'", "").split()[:2]
    return f"{rng.choice([first, first[0]])}.{last}@{rng.choice(['example.org', 'mail.example', 'clinic.example'])}"


class _Sentence:
    def __init__(self) -> None:
        self.text = ""
        self.spans: list[dict[str, object]] = []

    def add(self, piece: str, kind: str | None = None) -> None:
        if kind:
            self.spans.append({"type": kind, "start": len(self.text), "end": len(self.text) + len(piece)})
        self.text += piece


def _one(rng: random.Random) -> _Sentence:
    s = _Sentence()
    name, other = rng.sample(USERS, 2)
    finding = rng.choice(CLINICAL)
    shape = rng.randrange(10)
    if shape == 0:
        s.add("Patient ")
        s.add(name, "NAME")
        s.add(", DOB ")
        s.add(_date(rng), "DATE")
        s.add(f", presents with {finding}.")
    elif shape == 1:
        key, rec = _record(rng)
        s.add(f"CT chest for {key}")
        s.add(rec, "RECORD")
        s.add(f" shows {finding}.")
    elif shape == 2:
        s.add("Reported by Dr ")
        s.add(other.split()[-1], "NAME")
        s.add(" on ")
        s.add(_date(rng), "DATE")
        s.add(f": {finding}.")
    elif shape == 3:
        s.add(f"{finding[0].upper()}{finding[1:]}; please call ")
        s.add(_phone(rng), "PHONE")
        s.add(" or email ")
        s.add(_email(rng, other), "EMAIL")
        s.add(".")
    elif shape == 4:
        s.add(name.split()[0], "NAME")
        s.add(f" was seen in clinic with {finding}; next review ")
        s.add(_date(rng), "DATE")
        s.add(".")
    elif shape == 5:
        n = "".join(rng.choice("0123456789") for _ in range(rng.randint(6, 12)))
        s.add("Prognosis ")
        s.add(n, "NUMBER")
        s.add(" ")
        s.add(_date(rng), "DATE")
        s.add("?")
    elif shape == 6:
        key, rec = _record(rng)
        s.add("Compared with the study of ")
        s.add(_date(rng), "DATE")
        s.add(f" ({key}")
        s.add(rec, "RECORD")
        s.add(f"), {finding}.")
    elif shape == 7:
        s.add("Mr " if rng.random() < 0.5 else "Ms ")
        s.add(name.split()[-1], "NAME")
        s.add(", born in ")
        s.add(str(rng.randint(1931, 2005)), "DATE")
        s.add(f", {finding}.")
    else:  # no identifier: look-alikes that must survive
        s.add(
            f"Similar case {rng.choice(['HC-00012', 'HC-00431', 'HC-04417'])}: {finding}, aged {rng.randint(20, 89)}."
        )
    return s


def main() -> None:
    """Write the corpus."""
    rng = random.Random(SEED)
    rows = []
    for i in range(N):
        s = _one(rng)
        rows.append({"id": i, "text": s.text, "spans": s.spans})
    doc = {
        "note": "Synthetic sentences and invented names written for Casebook; demo data, not for clinical use.",
        "users": USERS,
        "sentences": rows,
    }
    OUT.write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} sentences to {OUT}")


if __name__ == "__main__":
    main()
