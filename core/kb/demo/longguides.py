"""The two long, real-shaped TB guidelines (DEMO DATA, NOT FOR CLINICAL USE), built from structured text.

Sources live in ``<assets_dir>/<kb.demo_subdir>/realshaped/``: two hand-written guideline bodies
(``intl_tb_guideline.md``, ``natl_tb_manual.md``, the Markdown subset of
:mod:`core.kb.demo.pdfwrite`) and two data files, ``drugs.yaml`` (one monograph per medicine:
doses by weight band and population, adverse effects) and ``regimens.yaml`` (tablets by weight
band). A body's ``@drugs`` and ``@regimens`` lines are replaced by chapters generated from the
data, in the body's voice, with the national manual's overrides (``national:`` keys) applied:
the two documents disagree on purpose on some doses, durations and timings.

Everything is deterministic: the same assets give the same Markdown, PDF and text export.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from core.kb.demo.pdfwrite import GuidelineSource, parse_source, render_pdf_pages

__all__ = ["LongGuideline", "build_markdown", "long_guidelines", "text_export", "write_long_guidelines"]

BODIES = ("intl_tb_guideline.md", "natl_tb_manual.md")
# Adult weight bands and the weight each band is dosed at (the band's usual representative weight).
_ADULT_BANDS = {
    "intl": [("30-39 kg", 35.0), ("40-54 kg", 47.0), ("55-70 kg", 62.0), ("over 70 kg", 75.0)],
    "national": [("25-39 kg", 32.0), ("40-54 kg", 47.0), ("55-74 kg", 65.0), ("75 kg or more", 80.0)],
}
_CHILD_BANDS = [("4-7 kg", 5.5), ("8-11 kg", 9.5), ("12-15 kg", 13.5), ("16-24 kg", 20.0)]
# The lower limit of each band above (same order): a weight is dosed as its band is, so that the detailed
# tables and the worked examples agree with the weight-band tables of the same document.
_LIMITS = {"intl": [30.0, 40.0, 55.0, 70.01], "national": [25.0, 40.0, 55.0, 75.0], "child": [4.0, 8.0, 12.0, 16.0]}


def _dosing_weight(weight: float, who: str, voice: str) -> float:
    """The weight a dose is worked out at: the representative weight of the band holding ``weight`` (else itself)."""
    key = "child" if who == "child" else voice
    bands = _CHILD_BANDS if who == "child" else _ADULT_BANDS[voice]
    top = 25.0 if who == "child" else float("inf")
    held = [rep for (_, rep), low in zip(bands, _LIMITS[key], strict=True) if low <= weight < top]
    return held[-1] if held else weight


@dataclass(frozen=True)
class LongGuideline:
    """One rendered guideline: its name, Markdown source, PDF bytes and the page of every heading."""

    name: str
    source: GuidelineSource
    pdf: bytes
    pages: dict[str, int]


def _merged(item: dict[str, Any], voice: str) -> dict[str, Any]:
    """``item`` with its ``national:`` overrides applied when the voice is the national manual's."""
    out = {k: v for k, v in item.items() if k != "national"}
    if voice == "national":
        out.update(item.get("national") or {})
        for key in [k for k in out if k.startswith("national_")]:
            out[key.removeprefix("national_")] = out.pop(key)
    else:
        for key in [k for k in out if k.startswith("national_")]:
            out.pop(key)
    return out


def _band_dose(dose: dict[str, Any], weight: float) -> int:
    """The band's daily dose: mg/kg times the band weight, rounded to whole tablets, capped at the maximum."""
    step = float(dose["step"])
    mg = round(dose["mgkg"] * weight / step) * step
    return int(max(step, min(mg, float(dose["max"]))))


def _dose_table(
    name: str, dose: dict[str, Any], bands: list[tuple[str, float]], who: str, dosed: Callable[[float], float] | None = None
) -> list[list[str]]:
    """A weight-band table; ``dosed`` maps a row's weight to the weight its dose is worked out at (else itself)."""
    rows = [["Weight band", f"{name} daily dose ({who})", "Tablets", "Approximate mg/kg"]]
    for band, weight in bands:
        mg = _band_dose(dose, dosed(weight) if dosed else weight)
        tabs = mg / dose["step"]
        rows.append([band, f"{mg} mg", f"{tabs:g} x {dose['step']} mg", f"{mg / weight:.0f} mg/kg"])
    return rows


def _table(rows: list[list[str]]) -> str:
    return "\n".join("| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in [rows[0], ["---"] * len(rows[0]), *rows[1:]])


def _dose_sentence(name: str, dose: dict[str, Any], who: str, voice: str) -> str:
    if voice == "national":
        return (f"Give {name.lower()} to {who} at {dose['mgkg']} mg/kg once daily (range {dose['range']} mg/kg), "
                f"never more than {dose['max']} mg a day.")  # fmt: skip
    return (f"The recommended dose of {name.lower()} for {who} is {dose['mgkg']} mg/kg once daily "
            f"(range {dose['range']} mg/kg), to a maximum of {dose['max']} mg daily.")  # fmt: skip


def _monograph(n: int, drug: dict[str, Any], voice: str) -> list[str]:
    name, abbr = drug["name"], drug["abbr"]
    out = [f"## {n}. {name} ({abbr})", f"### {n}.1 {name}: description and use",
           f"{name} ({abbr}) is a {drug['klass']} ({drug['group']} medicine). {drug['action']}",
           f"Formulations: {drug['forms']}."]  # fmt: skip
    adult_bands = _ADULT_BANDS[voice]
    out.append(f"### {n}.2 {name}: dose in adults")
    if "adult" in drug:
        out += [_dose_sentence(name, drug["adult"], "adults", voice),
                f"Table {n}.1 {name}: daily dose for adults by weight band",
                _table(_dose_table(name, drug["adult"], adult_bands, "adults"))]  # fmt: skip
    else:
        out.append(f"Adults: {drug['fixed']}.")
    out.append(f"### {n}.3 {name}: dose in children")
    if "child" in drug:
        child = drug["child"]
        out += [_dose_sentence(name, child, "children", voice),
                f"Table {n}.2 {name}: daily dose for children by weight band",
                _table(_dose_table(name, child, _CHILD_BANDS, "children")),
                "Children weighing 25 kg or more receive the adult dose."]  # fmt: skip
    else:
        out.append(f"{name} is not recommended for children in this {'manual' if voice == 'national' else 'guideline'}.")
    out += [f"### {n}.4 {name}: pregnancy and breastfeeding", f"Pregnancy: {drug['pregnancy']}",
            f"Breastfeeding: {drug['breastfeeding']}",
            f"### {n}.5 {name}: people living with HIV", drug["hiv"],
            f"### {n}.6 {name}: kidney and liver impairment",
            f"Kidney impairment: {drug['renal']}", f"Liver impairment: {drug['hepatic']}"]  # fmt: skip
    summary = [["Population", f"{name} dose or advice"]]
    adult = drug.get("adult")
    summary.append(["Adults", f"{adult['mgkg']} mg/kg daily ({adult['range']}), maximum {adult['max']} mg" if adult else drug["fixed"]])
    child = drug.get("child")
    summary.append(["Children", f"{child['mgkg']} mg/kg daily ({child['range']}), maximum {child['max']} mg" if child else "Not recommended"])
    summary += [["Pregnancy", drug["pregnancy"]], ["HIV", drug["hiv"]],
                ["Creatinine clearance below 30 mL/min", drug["renal"]], ["Liver disease", drug["hepatic"]]]  # fmt: skip
    out += [f"Table {n}.3 {name}: dose by population", _table(summary)]
    out += [f"### {n}.7 {name}: adverse effects",
            f"Table {n}.4 {name}: adverse effects and what to do",
            _table([["Adverse effect", "How often", "What to do"], *[[str(c) for c in row] for row in drug["adverse"]]]),
            f"### {n}.8 {name}: interactions and monitoring", drug["interactions"], drug["monitoring"]]  # fmt: skip
    return out


def _regimens(n: int, regimens: list[dict[str, Any]], voice: str) -> list[str]:
    where = "Demoland" if voice == "national" else "this guideline"
    out = []
    for k, reg in enumerate(_merged(r, voice) for r in regimens):
        n2, i = n + k, 1
        out += [f"## {n2}. Regimen {reg['code']}",
                f"This chapter gives the regimen {reg['code']} as used in {where}: its use, duration and the tablets by weight band.",
                f"### {n2}.1 {reg['code']}: {reg['name']}", f"Use: {reg['use']}", f"Medicines: {', '.join(reg['drugs'])}.",
                f"Duration: {reg['duration']}", f"Eligibility: {reg['eligibility']}", f"Monitoring: {reg['monitoring']}",
                f"Formulations: {reg['fdc']}."]  # fmt: skip
        for who, label in (("adult", "adults"), ("child", "children")):
            bands = (reg.get("bands") or {}).get(who)
            if bands:
                out += [f"Table {n2}.{i}{'a' if who == 'adult' else 'b'} {reg['code']}: {label} by weight band",
                        _table([["Weight band", f"Tablets or dose ({label})"], *[[str(b), str(d)] for b, d in bands]])]  # fmt: skip
    return out


# Symptom chapters: a keyword found in a drug's adverse-effect row puts that row under the symptom.
_SYMPTOMS = [
    ("Liver injury and jaundice", ("hepat", "transaminase", "jaundice")),
    ("Numbness, tingling and nerve damage", ("neuropath",)),
    ("Skin rash and discolouration", ("rash", "skin")),
    ("Changes in vision", ("vision", "optic")),
    ("Heart rhythm (QT prolongation)", ("qt ",)),
    ("Nausea, vomiting and abdominal pain", ("nausea", "abdominal")),
    ("Joint and tendon pain", ("joint", "tendon", "arthralgia", "gout")),
    ("Hearing loss and balance", ("hearing", "vestibular")),
    ("Mood, sleep and seizures", ("psych", "depress", "seizure", "insomnia")),
    ("Blood count changes", ("anaemia", "thrombocytopenia", "haemolysis")),
    ("Kidney injury and salts", ("kidney", "potassium")),
]


def _symptoms(n: int, drugs: list[dict[str, Any]], voice: str) -> list[str]:
    who = "the health worker" if voice == "national" else "the clinician"
    out = [f"## {n}. Adverse effects by symptom",
           f"This chapter groups the adverse effects of all medicines by the symptom a person reports, so that {who} "
           "can find every medicine that may cause it and what to do."]  # fmt: skip
    for i, (title, keys) in enumerate(_SYMPTOMS, start=1):
        rows = [[d["name"], str(r[0]), str(r[1]), str(r[2])] for d in drugs for r in d["adverse"]
                if any(k in f" {str(r[0]).lower()} " for k in keys)]  # fmt: skip
        if rows:
            out += [f"### {n}.{i} {title}",
                    f"{len(rows)} adverse effects of {len({r[0] for r in rows})} medicines fall under {title.lower()}. "
                    "Ask about this symptom at every visit and act as the table says.",
                    f"Table {n}.{i} {title}: medicines and actions",
                    _table([["Medicine", "Adverse effect", "How often", "What to do"], *rows])]  # fmt: skip
    return out


def _detailed(n: int, drugs: list[dict[str, Any]], voice: str) -> list[str]:
    """Dose tables at a finer grain: 1 kg bands for children, 5 kg bands for adults, for every mg/kg medicine."""
    out = [f"## {n}. Detailed dose tables",
           "The tables in this chapter give the daily dose at a finer grain than the weight-band tables: every kilogram "
           "for children from 3 to 24 kg and every 5 kg for adults. They use the mg/kg dose and maximum of each monograph."]  # fmt: skip
    i = 0
    for drug in drugs:
        for who, label, bands in (("child", "children", [(f"{w} kg", w + 0.5) for w in range(3, 25)]),
                                  ("adult", "adults", [(f"{w}-{w + 4} kg", w + 2.0) for w in range(25, 90, 5)])):  # fmt: skip
            dose = drug.get(who)
            if not dose or not isinstance(dose.get("mgkg"), (int, float)):
                continue
            i += 1
            out += [f"### {n}.{i} {drug['name']}: detailed daily doses for {label}",
                    f"{drug['name']} for {label}: {dose['mgkg']} mg/kg daily (range {dose['range']} mg/kg), maximum {dose['max']} mg.",
                    f"Table {n}.{i} {drug['name']} ({label}): dose by body weight",
                    _table(_dose_table(drug["name"], dose, bands, label,
                                       functools.partial(_dosing_weight, who=who, voice=voice)))]  # fmt: skip
    return out


_TESTS = [
    ("Sputum smear", ("smear",)), ("Culture", ("culture",)), ("Weight", ("weight",)),
    ("Liver tests", ("liver",)), ("ECG", ("ecg",)), ("Full blood count", ("blood count",)),
    ("Adverse event review", ("review", "adverse", "symptom", "neurolog")),
]


def _schedules(n: int, regimens: list[dict[str, Any]], voice: str) -> list[str]:
    """A month-by-month monitoring table per regimen, read from the regimen's monitoring sentence."""
    out = [f"## {n}. Monitoring schedules",
           "Each table marks with an X the months in which a test or review is due during the regimen. Month 0 is the "
           "start of treatment. Tests that the regimen's monitoring rule does not name are done only when symptoms suggest them."]  # fmt: skip
    for i, reg in enumerate((_merged(r, voice) for r in regimens), start=1):
        months = re.findall(r"month[s]? ([0-9, and()a-z-]+)", reg["monitoring"])
        named = {int(m) for group in months for m in re.findall(r"\d+", group)}
        text = reg["monitoring"].lower()
        span = 7 if "six" in reg["duration"].lower() or "6" in reg["code"] else 5
        head = ["Test", *[f"Month {m}" for m in range(span)]]
        rows = []
        for test, keys in _TESTS:
            if not any(k in text for k in keys) and test not in ("Weight", "Adverse event review"):
                continue
            monthly = "monthly" in text or test in ("Weight", "Adverse event review")
            marks = ["X" if (m == 0 or monthly or m in named) else "" for m in range(span)]
            rows.append([test, *marks])
        out += [f"### {n}.{i} Monitoring schedule for {reg['code']}", f"Rule: {reg['monitoring']}",
                f"Table {n}.{i} {reg['code']}: monitoring by month", _table([head, *rows])]  # fmt: skip
    return out


def _leaflets(n: int, drugs: list[dict[str, Any]], voice: str) -> list[str]:
    """A plain-language information sheet per medicine, as handed to patients, one page each."""
    out = []
    for i, drug in enumerate(drugs):
        effects = "; ".join(str(r[0]).lower() for r in drug["adverse"])
        out += [f"## {n + i}. Information sheet for patients: {drug['name']}",
                "Read this sheet with the patient and their family at the start of treatment.",
                f"### {n + i}.1 Your medicine: {drug['name']}",
                f"What it is: {drug['name']} ({drug['abbr']}) is one of the medicines that treat tuberculosis"
                f"{' or prevent it' if drug['group'] != 'Group C' else ''}. It comes as {drug['forms']}.",
                "How to take it: take it every day at the same time, as your health worker showed you. Do not stop when you feel better; "
                "the full course is needed to cure the disease and to stop the germs becoming resistant.",
                f"Effects you may notice: {effects}.",
                "Tell your health worker at once if your skin or eyes turn yellow, if you vomit several times, if you have a rash, "
                "or if your vision changes.",
                f"If you are pregnant or breastfeeding: {drug['pregnancy']} {drug['breastfeeding']}",
                f"Other medicines: {drug['interactions']}"]  # fmt: skip
    return out


# Worked examples: (title, population, weight, site); doses come from the weight-band tables of the same document.
_EXAMPLES = [
    ("An adult man with pulmonary TB", "adults", 48.0, "pulmonary"),
    ("A heavy adult with pulmonary TB", "adults", 78.0, "pulmonary"),
    ("A small adult woman with pleural TB", "adults", 36.0, "pleural"),
    ("A child of 9 kg with lymph node TB", "children", 9.0, "lymph node"),
    ("A child of 14 kg with pulmonary TB", "children", 14.0, "pulmonary"),
    ("A child of 20 kg with pulmonary TB", "children", 20.0, "pulmonary"),
    ("A pregnant woman of 56 kg with pulmonary TB", "pregnancy", 56.0, "pulmonary"),
    ("An adult of 60 kg with TB and HIV", "HIV", 60.0, "pulmonary"),
    ("An adult of 60 kg on haemodialysis", "kidney", 60.0, "pulmonary"),
    ("An adult of 52 kg with chronic liver disease", "liver", 52.0, "pulmonary"),
]


def _examples(n0: int, drugs: list[dict[str, Any]], voice: str) -> list[str]:
    out: list[str] = []
    first = [d for d in drugs if d["abbr"] in ("H", "R", "Z", "E")]
    for k, (title, who, weight, site) in enumerate(_EXAMPLES):
        n, i = n0 + k, 1
        out += [f"## {n}. Worked example: {title}",
                "This example shows how the doses in this document are worked out for one person. The numbers come from the "
                "monographs; the wording of the recommendation comes from the chapters."]  # fmt: skip
        key = "child" if who == "children" else "adult"
        rows = [["Medicine", "Dose", "Rule used"]]
        for d in first:
            dose = d[key]
            mg = _band_dose(dose, _dosing_weight(weight, key, voice))  # as the weight-band table doses it
            rule = f"{dose['mgkg']} mg/kg, maximum {dose['max']} mg"
            if who == "kidney" and d["abbr"] in ("Z", "E"):  # a per-dose mg/kg rule: the person's own weight
                rows.append([d["name"], f"{_band_dose(dose, weight)} mg three times a week after dialysis", d["renal"]])
                continue
            if who == "liver" and d["abbr"] == "Z":
                rows.append([d["name"], "left out", d["hepatic"]])
                continue
            rows.append([d["name"], f"{mg} mg daily", rule])
        out += [f"### {n}.{i} Example: {title}",
                f"Situation: {title.lower()}, weighing {weight:g} kg, with drug-susceptible {site} TB. The population is {who}.",
                f"Table {n}.{i} Doses worked out for this example", _table(rows)]  # fmt: skip
        if who == "HIV":
            out.append("Antiretroviral therapy: " + ("start within two weeks of TB treatment when the CD4 count is below 50 cells/mm3, "
                       "otherwise within eight weeks." if voice == "national" else
                       "start as soon as possible, within two weeks of TB treatment, whatever the CD4 count."))  # fmt: skip
        if who == "pregnancy":
            b6 = "10 mg" if voice == "national" else "25 mg"
            out.append(f"Add pyridoxine {b6} daily. Do not give streptomycin or amikacin.")
    return out


_POPULATIONS = [
    ("children", "Children", None), ("pregnancy", "Pregnancy", "pregnancy"), ("breastfeeding", "Breastfeeding", "breastfeeding"),
    ("HIV", "People living with HIV", "hiv"), ("kidney", "Kidney impairment (creatinine clearance below 30 mL/min)", "renal"),
    ("liver", "Liver impairment", "hepatic"),
]


def _populations(n: int, drugs: list[dict[str, Any]], voice: str) -> list[str]:
    """One chapter per population: every medicine's dose or advice for that population in one table."""
    out: list[str] = []
    for i, (_key, title, field) in enumerate(_POPULATIONS):
        rows = [["Medicine", f"Dose or advice: {title.lower()}"]]
        for d in drugs:
            if field is None:
                c = d.get("child")
                rows.append([f"{d['name']} ({d['abbr']})", f"{c['mgkg']} mg/kg daily (range {c['range']}), maximum {c['max']} mg" if c else "Not recommended for children"])
            else:
                rows.append([f"{d['name']} ({d['abbr']})", str(d[field])])
        where = "Demoland" if voice == "national" else "this guideline"
        out += [f"## {n + i}. Medicines for special populations: {title}",
                f"This chapter collects, for {title.lower()}, the dose or advice for every medicine used in {where}. "
                "The monographs give the reasons and the adverse effects.",
                f"### {n + i}.1 {title}: summary table", f"Table {n + i}.1 {title}: medicines", _table(rows)]  # fmt: skip
    return out


def build_markdown(assets: Path, body: str) -> str:
    """The full Markdown source of one guideline: its hand-written body with the generated chapters in place."""
    text = (assets / body).read_text(encoding="utf-8")
    voice = str(yaml.safe_load(text.split("---")[1]).get("voice") or "intl")
    drugs = [_merged(d, voice) for d in yaml.safe_load((assets / "drugs.yaml").read_text(encoding="utf-8"))["drugs"]]
    regimens = yaml.safe_load((assets / "regimens.yaml").read_text(encoding="utf-8"))["regimens"]
    chapter = max(int(m) for m in re.findall(r"^## (\d+)\. ", text, re.MULTILINE))
    out: list[str] = []
    for line in text.splitlines():
        generated: list[str] = []
        if line.strip() == "@drugs":
            for drug in drugs:
                chapter += 1
                generated += _monograph(chapter, drug, voice)
        elif line.strip() == "@regimens":
            generated += _regimens(chapter + 1, regimens, voice)
            chapter += len(regimens)
        elif line.strip() == "@symptoms":
            chapter += 1
            generated += _symptoms(chapter, drugs, voice)
        elif line.strip() == "@schedules":
            chapter += 1
            generated += _schedules(chapter, regimens, voice)
        elif line.strip() == "@leaflets":
            generated += _leaflets(chapter + 1, drugs, voice)
            chapter += len(drugs)
        elif line.strip() == "@populations":
            generated += _populations(chapter + 1, drugs, voice)
            chapter += len(_POPULATIONS)
        elif line.strip() == "@examples":
            generated += _examples(chapter + 1, drugs, voice)
            chapter += len(_EXAMPLES)
        elif line.strip() == "@detailed":
            chapter += 1
            generated += _detailed(chapter, drugs, voice)
        else:
            out.append(line)
        for block in generated:  # generated blocks are separated by blank lines; hand-written lines stay as written
            out += [block, ""]
    return "\n".join(out)


def long_guidelines(assets: Path) -> list[LongGuideline]:
    """Both guidelines, rendered (about 10-30 s each on this machine)."""
    out = []
    for body in BODIES:
        src = parse_source(build_markdown(assets, body))
        created = datetime(int(src.meta.get("year") or 2025), 1, 1, tzinfo=UTC)
        pdf, pages = render_pdf_pages(src, metadata=bool(src.meta.get("pdf_metadata", True)),
                                      title=str(src.meta.get("pdf_title") or src.title), created=created)  # fmt: skip
        out.append(LongGuideline(Path(body).stem, src, pdf, pages))
    return out


def text_export(doc: LongGuideline) -> str:
    """A plain-text version for readers: headings with their page, paragraphs, tables as rows of ``a | b``."""
    meta = doc.source.meta
    lines = [doc.source.title, f"{meta.get('organisation', '')}, {meta.get('edition', '')}, {meta.get('year', '')}",
             "DEMO DATA - NOT FOR CLINICAL USE", ""]  # fmt: skip
    for kind, payload in doc.source.items:
        if kind == "heading":
            lines += ["", f"{'=' if payload.level == 1 else '-'} {payload.title}  [page {doc.pages.get(payload.title, '?')}]", ""]
        elif kind == "table":
            lines += [" | ".join(row) for row in payload] + [""]
        elif kind == "bullet":
            lines.append(f"- {payload}")
        elif kind == "note":
            lines.append(f"[{payload[0]}] {payload[1]}")
        else:
            lines += [payload, ""]
    return "\n".join(lines).strip() + "\n"


def write_long_guidelines(assets: Path, out_dir: Path) -> list[Path]:
    """Write ``<name>.pdf`` and ``<name>.txt`` for both guidelines into ``out_dir``; returns the PDF paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for doc in long_guidelines(assets):
        pdf = out_dir / f"{doc.name}.pdf"
        pdf.write_bytes(doc.pdf)
        (out_dir / f"{doc.name}.txt").write_text(text_export(doc), encoding="utf-8")
        paths.append(pdf)
    return paths
