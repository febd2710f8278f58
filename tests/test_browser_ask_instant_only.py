"""Instant answer only, measured, in real headless Chromium (issue 27 item 4, ``ask.model_answers: auto``).

The app's model is the loopback server, and one judged answer forms an opinion
(``ask.min_guard_samples`` 1). The first question gets a model answer the guard refuses (a drug
and a dose, no citation): 0 of 1 passed. The second question is answered from the similar cases
only, and the chat says why with the figures; the server sees no request. "Ask the model anyway"
then asks it, and its guarded answer is shown. The screenshot of the note goes to
docs/screenshots/ask/.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core.cases import build_context_bundle
from core.runtime import open_runtime
from core.settings import REPO_ROOT
from tests.browser_support import (
    ARTIFACTS,
    BROWSER_MARKS,
    ServedApp,
    chromium_page,
    open_patient,
    served_copy,
    wait_idle,
)
from tests.conftest import make_settings, scan_of
from tests.llm_server import FakeLLMServer
from tests.test_app_support import log_in

pytestmark = BROWSER_MARKS
SHOTS = REPO_ROOT / "docs" / "screenshots" / "ask"


@pytest.fixture()
def judged_app(
    demo_root: Path, tmp_path: Path, llm_server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ServedApp]:
    """The app over the demo database, its model the loopback server, one judged answer enough for an opinion."""
    for name, value in llm_server.llm_env("openai", timeout_s=60.0).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("CASEBOOK_ASK__MIN_GUARD_SAMPLES", "1")
    with served_copy(demo_root, tmp_path, ARTIFACTS / "streamlit-instant-only.log") as app:
        yield app


def test_a_model_whose_answers_fail_the_guard_is_not_asked_until_the_doctor_asks(
    judged_app: ServedApp, llm_server: FakeLLMServer
) -> None:
    from playwright.sync_api import expect

    rt = open_runtime(make_settings(judged_app.root))
    try:
        ids = build_context_bundle(rt, scan_of(rt, "rahul.mehta")).case_ids
    finally:
        rt.db.dispose()
    llm_server.reply = "The patient should start aspirin 100 mg daily."  # refused by the guard
    with chromium_page(1800, failure=ARTIFACTS / "instant-only-failure.png") as page:
        log_in(page, judged_app.base, "dr.chen")
        open_patient(page, "mehta")
        expect(page.locator("[class*='st-key-case-HC-']").first).to_be_visible()
        chat = page.locator(".st-key-ask-ai")
        for question in ("What do similar cases show?", "How severe are similar cases?"):
            wait_idle(page)
            box = page.get_by_placeholder("Ask about this scan…")
            box.fill(question)
            box.press("Enter")
            expect(chat.locator("[data-testid='stChatMessage']").filter(has_text=question).first).to_be_visible()
            wait_idle(page)
            if question.startswith("What"):
                expect(chat.get_by_text("Model not used (the model's answer failed the answer rules)")).to_be_visible()
        note = chat.get_by_text("Instant answer only: the openai model's answers passed the grounding check 0 of 1")
        expect(note).to_be_visible()
        expect(note).to_contain_text("(0%; 80% needed). Counted: 0 of 1 on this machine.")
        assert len(llm_server.requests) == 1, "the second question did not reach the model"
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.mouse.move(0, 0)
        chat.screenshot(path=str(SHOTS / "03-instant-answer-only.png"))

        llm_server.reply = f"Based on similar cases, {ids[0]} and {ids[1]} show COPD with emphysema."
        chat.get_by_role("button", name="Ask the model anyway (up to 45 s)").click()
        expect(chat.get_by_text(llm_server.reply)).to_be_visible()
        wait_idle(page)
        assert len(llm_server.requests) == 2
