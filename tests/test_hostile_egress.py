"""Hostile egress: what reaches an external LLM, and what comes back from a hostile one.

The loopback server (tests/llm_server.py) records every payload the real
OpenAI and Groq SDKs send. Planted identifiers (a patient's name, a record
number, a birth date, phone, email, digits in the question) must never be in
a payload; an HTTP error body with a link must never reach the doctor or the
audit log.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from core.answer.service import ask_question
from core.errors import BackendError, CasebookError
from core.llm.base import LLM
from core.llm.factory import make_llm
from core.privacy.egress import Egress
from core.runtime import Runtime, open_runtime
from core.settings import load_settings
from core.store.models import AuditLog, User
from tests.conftest import make_settings, plant_signed_report, scan_of
from tests.llm_server import FakeLLMServer

PLANTED_REPORT = (
    "Rahul Mehta, MRN 00451234, DOB 14/03/1960, phone 020 7946 0958, rahul.mehta@example.org: "
    "hyperinflated lungs with upper-lobe emphysema."
)
SECRETS = ("rahul", "mehta", "00451234", "14/03/1960", "020 7946 0958", "example.org")


@pytest.fixture()
def llm_rt(demo_root: Path, tmp_path: Path, llm_server: FakeLLMServer) -> Iterator[Runtime]:
    """A writable demo copy whose LLM is the loopback server (OpenAI wire format)."""
    shutil.copytree(demo_root / "data", tmp_path / "data")
    shutil.copytree(demo_root / "indexes", tmp_path / "indexes", symlinks=True)
    rt = open_runtime(make_settings(tmp_path, llm=llm_server.llm_overrides("openai")))
    yield rt
    rt.db.dispose()


def _doctor(rt: Runtime) -> int:
    with rt.db.read_only() as s:
        return int(s.scalar(select(User.id).where(User.username == "dr.chen")) or 0)


def _payloads(server: FakeLLMServer) -> str:
    return "\n".join(r.text() for r in server.requests).casefold()


# -- free text of a signed prior report ---------------------------------------------------------------
def test_a_signed_report_with_identifiers_leaves_de_identified(llm_rt: Runtime, llm_server: FakeLLMServer) -> None:
    sid = plant_signed_report(llm_rt, PLANTED_REPORT)
    ask_question(llm_rt, sid, "What do similar cases show?", _doctor(llm_rt), make_llm(llm_rt.settings))
    sent = _payloads(llm_server)
    assert llm_server.requests and "emphysema" in sent  # the clinical text itself still leaves
    for secret in SECRETS:
        assert secret not in sent, secret


@pytest.mark.parametrize(
    "planted,secret",
    [
        ("R\u0430hul Mehta was seen.", "hul meh"),  # Cyrillic a inside the name
        ("Record 0045\u200b1234 reviewed.", "00451234"),  # zero-width space inside the number
        ("Seen by Dr. Sarah Chen on 3 March 2025.", "sarah"),
        ("Seen on 3 March 2025.", "march 2025"),
        ("Call +44 20 7946 0958 with results.", "7946 0958"),
        ("NHS number 943 476 5919 noted.", "476 5919"),
    ],
)
def test_disguised_identifiers_in_report_text_are_scrubbed(
    llm_rt: Runtime, llm_server: FakeLLMServer, planted: str, secret: str
) -> None:
    sid = plant_signed_report(llm_rt, f"{planted} Hyperinflated lungs.")
    ask_question(llm_rt, sid, "What do similar cases show?", _doctor(llm_rt), make_llm(llm_rt.settings))
    assert llm_server.requests and secret not in _payloads(llm_server).replace("\u200b", "")


# -- the question ------------------------------------------------------------------------------------------
def test_digits_in_the_question_do_not_leave(llm_rt: Runtime, llm_server: FakeLLMServer) -> None:
    sid = scan_of(llm_rt, "rahul.mehta")
    ask_question(llm_rt, sid, "Prognosis 00451234 1960-03-14?", _doctor(llm_rt), make_llm(llm_rt.settings))
    sent = _payloads(llm_server)
    assert llm_server.requests and "00451234" not in sent and "1960-03-14" not in sent


@pytest.mark.parametrize("backend", ["openai", "groq"])
@pytest.mark.parametrize("call", ["chat", "stream", "complete"])
def test_every_remote_call_passes_the_choke_point(
    llm_server: FakeLLMServer, groq_key: str, backend: str, call: str
) -> None:
    llm = make_llm(load_settings(llm=llm_server.llm_overrides(backend)))
    assert llm is not None
    text = "Question about MRN A00451234 born 1960-03-14, email jo@example.org, tel 07700 900123?"
    if call == "chat":
        llm.chat([{"role": "user", "content": text}])
    elif call == "stream":
        list(llm.stream([{"role": "user", "content": text}]))
    else:
        llm.complete(text)
    sent = _payloads(llm_server)
    for secret in ("00451234", "1960-03-14", "jo@example.org", "900123"):
        assert secret not in sent, (call, secret)
    assert "question about" in sent


def test_a_message_role_outside_the_allow_list_is_refused(llm_server: FakeLLMServer) -> None:
    llm = make_llm(load_settings(llm=llm_server.llm_overrides("openai")))
    assert llm is not None
    with pytest.raises(CasebookError):
        llm.chat([{"role": "tool", "content": "raw tool output"}])
    assert llm_server.requests == []


def test_names_come_from_the_user_table(llm_rt: Runtime) -> None:
    egress = Egress.from_settings(llm_rt.settings)
    assert "[NAME]" in egress.text("Priya Nair and Tomas Novak")
    assert "nair" not in egress.text("Priya Nair").casefold()


def test_a_user_added_later_is_scrubbed_after_the_refresh(llm_rt: Runtime) -> None:
    settings = llm_rt.settings.model_copy(
        update={"privacy": llm_rt.settings.privacy.model_copy(update={"names_refresh_s": 0.0})}
    )
    egress = Egress.from_settings(settings)
    # Written in lower case: capitalised, the free-text name rules (core.privacy.freetext) find it without the table.
    assert "zebulon" in egress.text("zebulon quark")
    with llm_rt.db.session() as s:
        s.add(User(username="zebulon.quark", display_name="Zebulon Quark", role="patient"))
    assert egress.text("Seen: zebulon quark.") == "Seen: [NAME]."


# -- what comes back -------------------------------------------------------------------------------------------
HOSTILE_BODY = "Upstream failure, see our [status page](http://evil.example/x) for Rahul Mehta"


def test_an_error_body_is_never_in_the_error(llm_server: FakeLLMServer) -> None:
    llm: LLM | None = make_llm(load_settings(llm=llm_server.llm_overrides("openai", max_retries=0)))
    assert llm is not None
    llm_server.fail_status(500, message=HOSTILE_BODY)
    with pytest.raises(BackendError) as err:
        llm.chat([{"role": "user", "content": "hello"}])
    shown = f"{err.value} {err.value.hint}"
    assert "evil" not in shown and "[" not in shown and "Rahul" not in shown and "500" in shown


def test_an_error_body_is_never_shown_or_audited(llm_rt: Runtime, llm_server: FakeLLMServer) -> None:
    llm_server.fail_status(500, message=HOSTILE_BODY, times=10)
    sid = scan_of(llm_rt, "priya.nair")
    res = ask_question(llm_rt, sid, "What is the prognosis?", _doctor(llm_rt), make_llm(llm_rt.settings))
    assert res.path == "extractive"
    shown = json.dumps([res.reason, res.answer.answer, res.removed])
    assert "evil" not in shown and "status page" not in shown
    with llm_rt.db.read_only() as s:
        rows = s.scalars(select(AuditLog)).all()
        stored = json.dumps([[r.outcome, r.detail] for r in rows])
    assert "evil" not in stored and "status page" not in stored
