"""A planted set for issue 26 class 7: names of people who are not users, addresses, postcodes, phones, records.

Synthetic text written for Casebook (demo data, not for clinical use). The names and streets below
were written by hand for this test and are **not** drawn from the name dictionary the scrubber uses
(Faker's), so recall on them is a fair measure: some are in that dictionary and some are not, and
the rest must be found by title, relation, position or form. Sentences are generated from templates
with a seeded generator; each records the spans it planted (kind, start, end).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

__all__ = ["CLEAN", "HELD_OUT", "NAMES", "Planted", "corpus"]

NAMES = [
    "Alvarez", "Ifeoma Nwachukwu", "Tomasz Wierzbicki", "Ines Carvalho", "Keiko Yamashita", "Dmitri Volkonsky",
    "Aoife Ni Bhriain", "Siddharth Raghunathan", "Marguerite Delacroix", "Oluwaseun Adebayo-Cole", "Freya Halvorsen",
    "Bartholomew Quigley", "Nkechi Obi", "Ravindra Subramaniam", "Leocadia Fenwick", "Horatio Blackwood",
    "Zainab Al-Masri", "Cormac O'Sullivan", "Sunniva Eikeland", "Thandiwe Mthembu", "Lorenzo Bellini",
    "Agnieszka Kowalczyk", "Farhan Chowdhury", "Beatriz Montenegro", "Gwilym Pritchard", "Mei-Ling Tsao",
    "Augustin Lefebvre", "Orla McGuinness", "Yaw Boateng", "Rosalind Ashworth", "Emeka Okonkwo", "Signe Thorsen",
    "Petronella van Dijk", "Kwabena Mensah", "Anneliese Hoffmann", "Desmond Achterberg", "Priyanka Venkatesan",
    "Caoimhe Gallagher", "Matthias Oberholzer", "Folasade Ogunleye", "Henrietta Pemberton", "Stanislav Dvorak",
    "Lucinda Featherstone", "Jovana Petrovic", "Callum Strachan", "Yevgenia Orlova", "Maximilian Achenbach",
    "Wanjiru Kamau", "Solveig Lindahl", "Percival Thackeray",
]  # fmt: skip
# Written after the scrubber was tuned on NAMES, and measured once, untouched: a held-out check of the tuning.
HELD_OUT = [
    "Radomir Kasprzak", "Ebele Anyanwu", "Torvald Engebretsen", "Xiomara Quintanilla", "Tadhg Ferriter",
    "Benedikta Rauscher", "Chukwudi Eze", "Ottilie Vanderpump", "Svetozar Jankovic", "Wairimu Njoroge",
    "Leopoldine Marchetti", "Hamish Urquhart", "Nnamdi Okoli", "Ragnhild Bjornstad", "Cosimo Tagliaferri",
    "Aarav Bhattacharya", "Eulalia Pimentel", "Fergal Mulcahy", "Ysolde Carrick", "Kofi Asante-Darko",
    "Margarethe Steinbrecher", "Ignatius Fairweather", "Dagny Vestergaard", "Temitope Adeyinka",
    "Ambrose Cottingham", "Rukmini Iyengar", "Ferdinand Gruenewald", "Nokuthula Dlamini", "Evander Pilkington",
    "Maelys Dufresne",
]  # fmt: skip
TITLES = ["Mr", "Mrs", "Ms", "Dr", "Prof", "Miss"]
RELATIONS = ["wife", "husband", "daughter", "son", "sister", "brother", "partner", "carer", "neighbour", "mother"]
STREETS = ["Elm Street", "Cromwell Road", "Mill Lane", "Harbour View", "Ashgrove Avenue", "Tanners Close",
           "Kingfisher Drive", "Orchard Way", "Quarry Hill", "Larkspur Crescent", "Chapel Row", "Beacon Terrace"]  # fmt: skip
TOWNS = ["Leeds", "Bristol", "Harrogate", "Swansea", "Dundee", "Carlisle", "Norwich", "Truro"]
POSTCODES = ["LS1 4AP", "BS6 5HN", "HG2 8QT", "SA1 3EX", "DD1 4HN", "CA3 8LS", "NR2 1TF", "TR1 2HE", "M14 6WT"]


@dataclass
class Planted:
    """A sentence and the identifier spans planted in it."""

    text: str = ""
    spans: list[tuple[str, int, int]] = field(default_factory=list)

    def add(self, piece: str, kind: str | None = None) -> Planted:
        """Append ``piece``, recording it as an identifier of ``kind`` when given."""
        if kind:
            self.spans.append((kind, len(self.text), len(self.text) + len(piece)))
        self.text += piece
        return self


def _address(rng: random.Random) -> str:
    flat = f"Flat {rng.randint(1, 12)}, " if rng.random() < 0.2 else ""
    number = f"{rng.randint(1, 240)}{rng.choice(['', '', 'a', 'b'])}"
    return f"{flat}{number} {rng.choice(STREETS)}, {rng.choice(TOWNS)} {rng.choice(POSTCODES)}"


def _phone(rng: random.Random) -> str:
    return rng.choice([f"07700 900{rng.randint(100, 999)}", f"0113 496 0{rng.randint(100, 999)}",
                       f"+44 20 7946 0{rng.randint(100, 999)}"])  # fmt: skip


def _one(rng: random.Random, names: list[str]) -> Planted:
    name = rng.choice(names)
    first, last = (name.split()[0], name.split()[-1]) if " " in name else (name, name)
    s = Planted()
    kind = rng.randrange(10)
    if kind == 0:
        s.add("Notes uploaded from ").add(name, "NAME").add(", ").add(_address(rng), "ADDRESS")
        s.add(" say the adult dose of isoniazid is 300 mg.")
    elif kind == 1:
        s.add("Discussed with ").add(rng.choice(TITLES) + " ").add(last, "NAME").add(" on the ward.")
    elif kind == 2:
        s.add("Next of kin: ").add(name, "NAME").add(f" ({rng.choice(RELATIONS)}), tel ").add(_phone(rng), "PHONE")
        s.add(".")
    elif kind == 3:
        s.add("Attended with her ").add(rng.choice(RELATIONS) + " ").add(first, "NAME").add("; no new symptoms.")
    elif kind == 4:
        s.add("Report for ").add(f"{last}, {first}", "NAME")
        s.add(" (MRN ").add(f"{rng.choice('ABCDEFGH')}{rng.randint(1000000, 9999999)}", "RECORD").add(").")
    elif kind == 5:
        s.add("Home address ").add(_address(rng), "ADDRESS").add("; lives alone.")
    elif kind == 6:
        s.add(name, "NAME").add(" reported chest pain after the 2 cm bulla was seen.")
    elif kind == 7:
        s.add("The images were reviewed with ").add(name, "NAME").add(" and the 6 mm nodule was stable.")
    elif kind == 8:
        s.add("Letter copied to ").add(rng.choice(TITLES) + " ").add(name, "NAME").add(", ").add(_address(rng), "ADDRESS")
        s.add(".")
    else:
        s.add("Seen by ").add(name, "NAME").add(" at ").add(rng.choice(TOWNS) + " ").add(rng.choice(POSTCODES), "ADDRESS")
        s.add(" clinic; phone ").add(_phone(rng), "PHONE").add(".")
    return s


def corpus(n: int = 400, seed: int = 20261127, held_out: bool = False) -> list[Planted]:
    """``n`` generated sentences (seeded), naming people of :data:`NAMES` or, ``held_out``, :data:`HELD_OUT`."""
    rng = random.Random(seed)
    return [_one(rng, HELD_OUT if held_out else NAMES) for _ in range(n)]


# Text with no identifier that must come back unchanged: eponyms, sizes, levels, drug label and guideline wording.
CLEAN = [
    "Graves orbitopathy without optic nerve compression.",
    "Parkinson's disease was not assessed; Hodgkin lymphoma in remission per the 2019 report.",
    "Wilson disease and Cushing syndrome are not suggested by these findings.",
    "T1 2cm lesion at L4-L5 with 5mm protrusion; a 6 mm nodule in the right middle lobe.",
    "Isoniazid 300 mg daily for adults. Table 2 lists Rifampin doses. Patient Information leaflet.",
    "Similarity 0.91 to HC-00012 and 87% to HC-00431; grade 2 retinopathy in both eyes.",
    "Adults: 5 mg/kg up to 300 mg once daily; children 10 mg/kg. Monitor liver function monthly.",
    "Community-acquired pneumonia with lobar consolidation; CURB-65 score 2.",
    "Hepatotoxicity: stop isoniazid if ALT rises above three times the upper limit of normal.",
    "The Mantoux test and IGRA were negative; BCG vaccination in childhood.",
    "Bell's palsy resolved; Addison disease on hydrocortisone.",
    "Ejection fraction estimated at 55 percent; BI-RADS 3 lesion measuring 9 x 7 mm.",
]
