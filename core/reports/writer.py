"""The model's part of a report draft: an estimate before it starts, checked sections as they arrive, Cancel.

:func:`plan_draft` gathers what a model call needs (the bundle, the template draft that
stands when the model does not, the prompt); :func:`core.llm.plan.plan_call` on its
prompt says, for the local model, whether the call can finish at the speed measured here,
so a page can offer "run anyway" or a remote backend before anything starts (the same
path as Ask AI's). :func:`stream_draft` runs the call through :func:`core.llm.call.stream_call`
under a :class:`~core.llm.budget.CancelToken` (which ends it at the budget in wall time) and yields:

* ``tick`` every ``tick_s`` (elapsed seconds, characters received): the page's clock, and
  its chance to notice a Cancel even while the model is still reading the prompt;
* ``section`` when a model section (IMPRESSION, RECOMMENDATIONS) is complete and has passed
  the answer rules: text that has not passed them is never handed out;
* ``final`` once: the draft, the model's checked sections over the template.

``token.cancel()`` or closing the stream early (a page rerun) stops the backend between
two tokens. Nothing here writes a draft; the one audit row of the model call records who
asked, the backend, the prompt hash and the outcome (``cancelled`` included).
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field, replace
from typing import Literal

from core.answer.facts import bundle_facts
from core.answer.guard import guard_draft_sections
from core.answer.kit import AskKit, HasAskKit, kit_of
from core.answer.prompt import draft_messages, prompt_hash
from core.answer.rules import CASE_ID_RE
from core.cases.bundle import build_context_bundle
from core.contracts import BundleResult
from core.errors import BackendCancelledError, BackendTimeoutError, CasebookError
from core.llm.base import LLM, Message
from core.llm.budget import CancelToken, feature_budget
from core.llm.call import stream_call
from core.reports import audit as report_audit
from core.reports.drafts import DraftText, parse_sections, template_draft

__all__ = ["DraftEvent", "DraftPlan", "generate_report_draft", "plan_draft", "stream_draft"]

MODEL_SECTIONS = ("impression", "recommendations")  # the only sections a model may word
CANCELLED = "extractive:cancelled"  # the audit outcome of a Cancel


@dataclass(frozen=True)
class DraftPlan:
    """One scan's draft before the model starts: the template that stands, and the prompt (None: no bundle)."""

    scan_id: str
    result: BundleResult
    base: DraftText
    messages: list[Message] | None


def plan_draft(source: AskKit | HasAskKit, scan_id: str) -> DraftPlan:
    """Gather the bundle, the template draft and the prompt for ``scan_id`` (reads only)."""
    result = build_context_bundle(kit_of(source).case_search, scan_id)
    messages = draft_messages(result) if result.bundle is not None else None
    return DraftPlan(scan_id, result, template_draft(result), messages)


@dataclass(frozen=True)
class DraftEvent:
    """One step of a draft being written: a clock tick, newly checked sections, or the final draft."""

    kind: Literal["tick", "section", "final"]
    elapsed_s: float
    chars: int = 0
    sections: dict[str, str] = field(default_factory=dict)  # model sections that passed the answer rules so far
    draft: DraftText | None = None


def _checked(sections: dict[str, str], result: BundleResult, rt: AskKit) -> dict[str, str]:
    """The model may word IMPRESSION and RECOMMENDATIONS; COMPARISON and FINDINGS always come from the record.

    An impression naming a case ID or "pending" is refused: the evidence stays beside the report.
    The guard refuses the user table's names and the drug KB's lexicon here too, and takes the
    facts computed in code (counts, region, prior intervals) as supported content.
    """
    wanted = {k: v for k, v in sections.items() if k in MODEL_SECTIONS and v}
    if CASE_ID_RE.search(wanted.get("impression", "")) or "pending" in wanted.get("impression", "").lower():
        wanted.pop("impression")
    if not wanted:
        return {}
    from core.answer.guard_inputs import refusal_lists  # lazy: core.privacy.egress imports core.llm

    facts = bundle_facts(result, rt.settings.ask.max_cited_cases)
    return guard_draft_sections(wanted, result, facts=facts, **refusal_lists(rt)).sections


def _complete(text: str) -> dict[str, str]:
    """The sections of a partial reply that another section header already follows."""
    sections = parse_sections(text)
    return dict(list(sections.items())[:-1])


def _outcome(exc: BaseException) -> str:
    """The audit outcome of a failed call (at most 40 characters: longer ones are stored hashed)."""
    return CANCELLED if isinstance(exc, BackendCancelledError) else f"extractive:fallback:{type(exc).__name__}"


def _why(exc: BaseException) -> str:
    if isinstance(exc, BackendCancelledError):
        return "the model was cancelled"
    if isinstance(exc, BackendTimeoutError):
        return "the model ran past the drafts' time budget"
    return f"the model failed: {type(exc).__name__}"


def stream_draft(
    source: AskKit | HasAskKit,
    plan: DraftPlan,
    llm: LLM | None,
    token: CancelToken,
    *,
    doctor_id: int | None = None,
    tick_s: float = 0.5,
) -> Generator[DraftEvent, None, None]:
    """Write ``plan``'s draft with ``llm`` under ``token``: ticks, checked sections, then one ``final`` event."""
    rt = kit_of(source)
    if llm is None or plan.messages is None:
        why = "no language model is configured" if llm is None else "no comparable cases"
        yield DraftEvent("final", token.elapsed(), draft=replace(plan.base, reason=why))
        return
    text, shown, failure, audited = "", {}, None, False
    tried: set[str] = set()
    try:
        for event in stream_call(llm, plan.messages, token, tick_s=tick_s):
            if event.kind == "tick":
                yield DraftEvent("tick", event.elapsed, len(text))
            elif event.kind == "delta":
                text += event.text
                done = _complete(text)
                if new := done.keys() & set(MODEL_SECTIONS) - tried:
                    tried |= new  # each section is checked once, when the next header closes it
                    shown = _checked(done, plan.result, rt)
                    yield DraftEvent("section", event.elapsed, len(text), dict(shown))
            else:
                failure = event.error
        if failure is not None:
            _audit_draft(rt, plan, doctor_id, llm, _outcome(failure))
            audited = True
            if not isinstance(failure, CasebookError):
                raise failure
            draft = replace(plan.base, reason=_why(failure))
        else:
            draft = _merge(plan.base, _checked(parse_sections(text), plan.result, rt))  # whole sections only
            _audit_draft(rt, plan, doctor_id, llm, draft.path)
            audited = True
        yield DraftEvent("final", token.elapsed(), len(text), dict(shown), draft)
    finally:
        if not audited:  # closed early (a page rerun): the backend stops between two tokens
            token.cancel()
            _audit_draft(rt, plan, doctor_id, llm, CANCELLED)


def _merge(base: DraftText, taken: dict[str, str]) -> DraftText:
    if not taken:
        return replace(base, reason="the model's draft failed the answer rules")
    return replace(
        base,
        impression=taken.get("impression", base.impression),
        recommendations=taken.get("recommendations", base.recommendations),
        path="llm",
    )


def generate_report_draft(
    source: AskKit | HasAskKit, scan_id: str, llm: LLM | None = None, *, doctor_id: int | None = None
) -> DraftText:
    """A FINDINGS / IMPRESSION / RECOMMENDATIONS draft grounded in the bundle, within the drafts' budget.

    Writes no draft or report. When a language model is called, one audit row
    records who asked, the backend, the prompt hash and which path won (the
    prompt text itself is never stored).
    """
    rt = kit_of(source)
    token = CancelToken(feature_budget(rt.settings, "draft"))  # the model stops at the drafts' budget
    for event in stream_draft(rt, plan_draft(rt, scan_id), llm, token, doctor_id=doctor_id):
        if event.draft is not None:
            return event.draft
    raise AssertionError("stream_draft always ends with a final draft")  # pragma: no cover


def _audit_draft(rt: AskKit, plan: DraftPlan, doctor_id: int | None, llm: LLM, outcome: str) -> None:
    assert plan.messages is not None
    report_audit.draft_generated(
        rt.db, doctor_id, plan.scan_id, backend=llm.backend, prompt_hash=prompt_hash(plan.messages), outcome=outcome
    )
