"""A bullet from a label cites the numbered subsection it was read under, wherever the chunk window cut (issue 24).

A real label's "2 DOSAGE AND ADMINISTRATION" runs over several chunks; when "2.3 Crohn's Disease" ended one chunk
and the dose opened the next, the bullet cited "2 DOSAGE AND ADMINISTRATION" (the outside testers' Humira and
Lipitor items: right content, wrong section). Here a section of our own wording (demo data) is cut at every line
boundary into two and three chunks, and every sentence must cite the subsection that stands above it in the
whole section, as a reader of the label would.
"""

from __future__ import annotations

import itertools

import pytest

from core.guideline.headings import carried_headings
from core.guideline.sources import source_ref
from core.kb.types import Chunk, Hit

SECTION = "2 DOSAGE AND ADMINISTRATION"
LINES = [
    "2.1 Adults with joint disease",
    "Give 40 mg every other week by injection under the skin.",
    "Some adults not taking methotrexate may need 40 mg every week.",
    "2.2 Children with joint disease",
    "Weight 10 kg to under 30 kg | 20 mg every other week",
    "Weight 30 kg or more | 40 mg every other week",
    "2.3 Bowel disease",
    "Start with 160 mg on day 1, then 80 mg on day 15.",
    "From day 29 give 40 mg every other week.",
    "2.4 Monitoring",
    "Test for latent infection before the first dose.",
]
TRUTH = {line: next(h for h in reversed(LINES[: i + 1]) if h[0].isdigit() and "." in h.split()[0])
         for i, line in enumerate(LINES) if not line[0].isdigit()}  # fmt: skip


def _chunks(cuts: tuple[int, ...], doc: str = "spl:demo") -> list[tuple[int, Chunk]]:
    bounds = [0, *cuts, len(LINES)]
    return [(k, Chunk(chunk_id=f"{doc}#s4.{k}", doc_id=doc, kb="user.u1", text="\n".join(LINES[a:b]),
                      section_path=(SECTION,), section_title=SECTION, section_code="34068-7", title="Demo label"))
            for k, (a, b) in enumerate(itertools.pairwise(bounds))]  # fmt: skip


def _hit(chunk: Chunk) -> Hit:
    return Hit(chunk_id=chunk.chunk_id, doc_id=chunk.doc_id, text=chunk.text, score=0.03, kb=chunk.kb,
               section_path=chunk.section_path, section_title=chunk.section_title, section_code=chunk.section_code,
               title=chunk.title)  # fmt: skip


CUTS = [c for n in (1, 2) for c in itertools.combinations(range(1, len(LINES)), n)]


@pytest.mark.parametrize("cuts", CUTS, ids=str)
def test_every_sentence_cites_the_subsection_above_it_wherever_the_section_was_cut(cuts: tuple[int, ...]) -> None:
    chunks = _chunks(cuts)
    carried = carried_headings(reversed(chunks))  # the store's order is by position, whatever order they come in
    for _, chunk in chunks:
        for sentence in (s for s in chunk.text.split("\n") if s in TRUTH):
            ref = source_ref(_hit(chunk), sentence, carried.get(chunk.chunk_id))
            assert ref.section == TRUTH[sentence], (cuts, sentence, ref.section)


def test_headings_do_not_carry_across_documents_sections_or_into_guidelines() -> None:
    one = _chunks((4,), "spl:one")
    other = [(9, Chunk(chunk_id="spl:two#s4.0", doc_id="spl:two", kb="user.u1", text="No subsections here.",
                       section_path=(SECTION,), section_code="34068-7"))]  # fmt: skip
    guide = [(10, Chunk(chunk_id="g#1", doc_id="g", kb="user.u1", text="2.1 A heading", section_path=("2 Dosing",))),
             (11, Chunk(chunk_id="g#2", doc_id="g", kb="user.u1", text="A dose.", section_path=("2 Dosing",)))]
    carried = carried_headings([*one, *other, *guide])
    assert carried == {"spl:one#s4.1": "2.2 Children with joint disease"}
