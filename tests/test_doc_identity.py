"""Issue 24, item 5: the owner sees and corrects a document's title, issuer and year; answers cite the correction.

The correction is validated (a table of bad inputs changes nothing), refused for another doctor and for a
shared document (sharing needs a second doctor's approval, core.kb.sharing), written into the space's index
in one swap without re-embedding, kept in the provenance history (old -> new) and the audit log, and it
survives a restart and a re-ingestion.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import select

from core.errors import AccessDeniedError, InvalidInputError, NotFoundError
from core.kb import KnowledgeBase
from core.kb.docidentity import correct_identity
from core.kb.index.builder import kb_link
from core.kb.provenance import read_provenance
from core.kb.sharing import Sharing
from core.kb.spaces import DocumentSpaces
from core.runtime import Runtime
from core.store.models import AuditLog
from tests.backends import backend_params, writable_runtime

# Test Hypertension Guideline, Test Society, 2023
GUIDELINE = Path(__file__).parent / "data" / "kb" / "guideline_small.md"
QUESTION = "How is an elevated blood pressure confirmed before starting treatment?"


@pytest.fixture(params=backend_params())
def rt(request: pytest.FixtureRequest, demo_root: Path, tmp_path: Path) -> Iterator[Runtime]:
    """A writable demo store (audit log) on SQLite or PostgreSQL, with dr.chen's (u1) document uploaded."""
    runtime = writable_runtime(str(request.param), request, demo_root, tmp_path, kb={"progress": False})
    DocumentSpaces(runtime.kb).upload("u1", [("htn notes.md", GUIDELINE.read_bytes())])
    yield runtime
    runtime.db.dispose()


def _doc(spaces: DocumentSpaces, owner: str = "u1") -> tuple[str, str | None, int | None, str]:
    d = next(d for d in spaces.documents(owner) if not d.shared)
    return d.title, d.issuer, d.year, d.doc_id


def _bullet_refs(kb: KnowledgeBase) -> list[str]:
    from core.guideline.catalog import Catalog
    from core.guideline.pipeline import GuidelineQA
    from core.kb.lexicon import DrugLexicon

    qa = GuidelineQA(kb.settings, retriever=kb, lexicon=DrugLexicon(), llm=None, catalog=Catalog())
    got = qa.answer(QUESTION, spaces=("user.u1",), only_spaces=True)
    assert got.kind == "answer", got
    return [b.evidence.ref.line() for b in got.bullets if b.evidence.ref is not None]


def test_the_owner_corrects_it_and_answers_cite_the_correction(rt: Runtime) -> None:
    spaces = DocumentSpaces(rt.kb)
    title, issuer, year, doc_id = _doc(spaces)
    assert (title, issuer, year) == ("Test Hypertension Guideline", "Test Society", 2023)  # as extracted
    assert any(r.startswith("Test Hypertension Guideline (Test Society, 2023)") for r in _bullet_refs(rt.kb))
    before = rt.kb.index("user.u1")
    vectors = before.vectors_at(list(range(before.n_chunks)))

    old, new = correct_identity(spaces, rt.db, "u1", doc_id, ("  Hypertension in adults ", "Ward Society", "2024"))
    assert (old.title, new.title, new.issuer, new.year) == (title, "Hypertension in adults", "Ward Society", 2024)
    assert _doc(spaces)[:3] == ("Hypertension in adults", "Ward Society", 2024)
    after = rt.kb.index("user.u1")
    assert after.folder != before.folder  # a new version, swapped in whole
    assert np.array_equal(after.vectors_at(list(range(after.n_chunks))), vectors)  # nothing re-embedded
    assert {(c.title, c.organisation, c.year) for _, c in after.store.iter_chunks()} == {
        ("Hypertension in adults", "Ward Society", 2024)}  # every chunk, so every bullet  # fmt: skip
    refs = _bullet_refs(rt.kb)
    assert refs and all(r.startswith("Hypertension in adults (Ward Society, 2024)") for r in refs), refs

    history = read_provenance(spaces.files_root / "user.u1")[doc_id]["identity_history"]
    assert [(h["by"], h["old"]["title"], h["new"]["title"], h["old"]["year"], h["new"]["year"]) for h in history] == [
        ("u1", "Test Hypertension Guideline", "Hypertension in adults", 2023, 2024)]  # fmt: skip
    with rt.db.read_only() as s:
        row = s.execute(select(AuditLog.actor_id, AuditLog.scan_ref, AuditLog.outcome, AuditLog.detail)
                        .where(AuditLog.action == "doc.identity")).one()  # fmt: skip
    assert row[:3] == (1, doc_id, "ok") and row[3]["fields"] == ["title", "issuer", "year"]
    assert (row[3]["year_old"], row[3]["year_new"]) == (2023, 2024)
    assert str(row[3]["title_new"]).startswith("sha256:")  # free text is hashed in the audit log (core.audit)

    restarted = DocumentSpaces(KnowledgeBase(rt.settings, rt.kb.embedder, rt.kb.token_counter))  # a new process
    assert _doc(restarted)[:3] == ("Hypertension in adults", "Ward Society", 2024)
    restarted.reingest("u1")  # parsing the kept original again keeps the owner's correction
    assert _doc(restarted)[:3] == ("Hypertension in adults", "Ward Society", 2024)
    assert correct_identity(restarted, rt.db, "u1", doc_id, ("Hypertension in adults", "", ""))[1].issuer is None


BAD = [
    (("", "Test Society", "2023"), "title is empty"),
    (("   ", "", ""), "title is empty"),
    (("x" * 10_000, "", ""), "at most 200"),
    (("<script>alert(1)</script>", "", ""), "markup"),
    (("Guide <img src=x onerror=alert(1)>", "", ""), "markup"),
    (("Guide\x00line", "", ""), "control"),
    (("Guide", "<b>Ministry</b>", ""), "issuer contains markup"),
    (("Guide", "y" * 201, ""), "issuer is 201"),
    (("Guide", "", "abcd"), "not a four-digit year"),
    (("Guide", "", "99"), "not a four-digit year"),
    (("Guide", "", "20245"), "not a four-digit year"),
]


@pytest.mark.parametrize("rt", ["sqlite"], indirect=True)  # refused before any store is touched
@pytest.mark.parametrize(("typed", "says"), BAD)
def test_bad_input_is_refused_by_name_and_changes_nothing(rt: Runtime, typed: tuple[str, str, str], says: str) -> None:
    spaces = DocumentSpaces(rt.kb)
    doc_id = _doc(spaces)[3]
    link = os.path.realpath(kb_link(rt.kb.root, "user.u1"))
    with pytest.raises(InvalidInputError, match=says):
        correct_identity(spaces, rt.db, "u1", doc_id, typed)
    assert os.path.realpath(kb_link(rt.kb.root, "user.u1")) == link
    assert _doc(spaces)[:3] == ("Test Hypertension Guideline", "Test Society", 2023)
    assert "identity" not in read_provenance(spaces.files_root / "user.u1").get(doc_id, {})


def test_another_doctor_and_a_shared_copy_are_refused(rt: Runtime) -> None:
    spaces = DocumentSpaces(rt.kb)
    doc_id = _doc(spaces)[3]
    with pytest.raises(NotFoundError, match="No document"):
        correct_identity(spaces, rt.db, "u2", doc_id, ("Hijacked", "", ""))  # dr.hassan: not in his documents
    sharing = Sharing(spaces, rt.db)
    sharing.approve("u2", sharing.request("u1", doc_id))  # shared with a second doctor's approval
    shared = next(d for d in spaces.documents("u1") if d.shared)
    for who in ("u1", "u2"):  # neither the uploader nor the approver edits the shared copy alone
        with pytest.raises(AccessDeniedError, match="shared document"):
            correct_identity(spaces, rt.db, who, shared.doc_id, ("Renamed", "", ""), shared=True)
    assert [d.title for d in spaces.documents("u1")] == ["Test Hypertension Guideline"] * 2
    with rt.db.read_only() as s:
        outcomes = s.scalars(select(AuditLog.outcome).where(AuditLog.action == "doc.identity")).all()
    assert list(outcomes) == ["refused", "refused"]
    assert json.dumps(read_provenance(spaces.files_root / "user")).count("identity") == 0

    # the way to correct a shared document: the owner's own copy, then a share request a second doctor approves
    correct_identity(spaces, rt.db, "u1", doc_id, ("Hypertension in adults", "Ward Society", "2024"))
    assert [d.title for d in spaces.documents("u2")] == ["Test Hypertension Guideline"]  # shared copy unchanged
    rid = sharing.request("u1", doc_id)
    assert next(r for r in sharing.pending() if r["id"] == rid)["title"] == "Hypertension in adults"  # approver sees it
    correct_identity(spaces, rt.db, "u1", doc_id, ("Changed after the request", "", ""))  # not what was approved
    sharing.approve("u2", rid)
    shared = next(d for d in spaces.documents("u2") if d.shared)
    assert (shared.title, shared.issuer, shared.year) == ("Hypertension in adults", "Ward Society", 2024)
    spaces.reingest("u2", shared=True)  # the shared space keeps the approved identity when re-read
    assert next(d for d in spaces.documents("u2") if d.shared).title == "Hypertension in adults"


@pytest.mark.parametrize("rt", ["sqlite"], indirect=True)
def test_the_my_documents_form_shows_refuses_and_saves(rt: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.test_app_support import page, texts, use_root, user_of

    use_root(rt.settings.paths.resolve(rt.settings.paths.data_dir).parent, monkeypatch)
    monkeypatch.setenv("CASEBOOK_KB__PROGRESS", "false")
    doc_id = _doc(DocumentSpaces(rt.kb))[3]
    at = page("guideline_qa", user_of(rt, "dr.chen")).run()
    assert not at.exception, at.exception
    table = at.dataframe[0].value
    assert list(table.loc[0, ["Title", "Issuer", "Year"]]) == ["Test Hypertension Guideline", "Test Society", "2023"]
    assert at.text_input(key=f"mydocs-year-{doc_id}").value == "2023"

    at.text_input(key=f"mydocs-title-{doc_id}").input("<script>alert(1)</script>")
    at = next(b for b in at.button if b.label == "Save correction").click().run()
    assert "The correction was not saved" in texts(at) and "markup" in texts(at)
    assert _doc(DocumentSpaces(rt.kb))[0] == "Test Hypertension Guideline"  # nothing changed

    at.text_input(key=f"mydocs-title-{doc_id}").input("Hypertension *in* adults")
    at.text_input(key=f"mydocs-year-{doc_id}").input("2024")
    at = next(b for b in at.button if b.label == "Save correction").click().run()
    assert not at.exception, at.exception
    assert at.success and "Hypertension \\*in\\* adults" in at.success[0].value  # typed text is rendered inert
    assert list(at.dataframe[0].value.loc[0, ["Title", "Year"]]) == ["Hypertension *in* adults", "2024"]
