"""The regeneration benchmark's replay (bench/selfrag_regen.py): which answer each margin keeps, and the counts."""

from __future__ import annotations

from typing import Any

from bench.selfrag_regen import replay

OPTIONS = {"A": "Amoxicillin", "B": "Vancomycin", "C": "Meropenem", "D": "Linezolid"}


def _record(gold: str, *answers: tuple[str, float | None]) -> dict[str, Any]:
    its = [{"number": i, "raw_answer": f"{letter}. {OPTIONS[letter]}", "expected_utility": u} for i, (letter, u) in enumerate(answers, 1)]
    return {"gold": gold, "options": OPTIONS, "iterations": its}


def test_replay_counts_what_each_margin_keeps() -> None:
    records = [
        _record("A", ("A", 3.81), ("D", 4.04)),  # the swap: a right first answer replaced by a wrong one
        _record("C", ("B", 2.0), ("C", 3.5), ("D", 3.6)),  # a real improvement, then a near-tie
        _record("A", ("A", 4.2)),  # good enough at once: never regenerated
        _record("B", ("C", 2.0), ("D", None)),  # the critic could not rate the second: it stops, the first stays
        {"gold": "A", "options": OPTIONS, "iterations": []},  # no answer (first generation timed out): not counted
    ]
    rows = {r["margin"]: r for r in replay(records, [0.0, 0.5, 2.0], utility_stop=4.0)}
    assert all(r["n"] == 4 and r["first right"] == 2 for r in rows.values())
    assert (rows[0.0]["kept right"], rows[0.0]["right->wrong"], rows[0.0]["wrong->right"]) == (1, 1, 0)  # C lost to D
    assert (rows[0.5]["kept right"], rows[0.5]["right->wrong"], rows[0.5]["wrong->right"]) == (3, 0, 1)
    assert (rows[2.0]["kept right"], rows[2.0]["right->wrong"], rows[2.0]["wrong->right"]) == (2, 0, 0)
    assert rows[0.5]["kept - first (95% CI)"].startswith("+0.250 (")
    assert rows[0.0]["first acc (95% CI)"].startswith("0.500 (")
