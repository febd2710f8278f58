"""One model call under a :class:`~core.llm.budget.CancelToken`, ending at its budget in wall time.

Ask AI, report drafts and the other features read the model through these functions
instead of each holding a thread of its own:

- :func:`stream_call` streams the reply as events: a ``delta`` for each piece of text, a
  ``tick`` at least every ``tick_s`` whatever the model is doing (reading a long prompt on a
  loaded machine sends nothing for many seconds), and one ``end`` with the whole text and why
  it stopped early, if it did.
- :func:`chat_call` and :func:`complete_call` wait for a whole reply; :func:`run_call` for any
  work that calls a model (Self-RAG's in-process reflection model).

All return at the token's deadline (or at once on Cancel) even when the backend is still
busy: the backend runs in a daemon worker thread and stops itself between two tokens when it
reads the token, so nothing waits for it. A budget therefore holds in wall time, prompt
processing included; an HTTP backend that has not answered yet is left to its own timeout.
"""

from __future__ import annotations

import contextvars
import queue
import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeVar, Unpack

from core.errors import BackendCancelledError, BackendTimeoutError
from core.llm.budget import current_token

if TYPE_CHECKING:
    from core.llm.base import LLM, Completion, GenOptions, Message
    from core.llm.budget import CancelToken

__all__ = ["CallEvent", "chat_call", "complete_call", "run_call", "stream_call"]

T = TypeVar("T")

_DONE = object()


@dataclass(frozen=True)
class CallEvent:
    """``tick`` (time passes), ``delta`` (``text`` is the new piece) or ``end`` (``text`` is the whole reply)."""

    kind: Literal["tick", "delta", "end"]
    elapsed: float
    text: str = ""
    error: BaseException | None = None  # on ``end``: why the reply stopped early (budget, Cancel, a backend failure)


def _pump(llm: LLM, messages: Sequence[Message], options: GenOptions, out: queue.Queue[object]) -> None:
    """Worker thread: every delta, then an error if any, then the end mark."""
    try:
        for delta in llm.stream(messages, **options):
            out.put(delta)
    except Exception as exc:  # handed to the caller, which decides
        out.put(exc)
    finally:
        out.put(_DONE)


def _stopped(token: CancelToken) -> BaseException | None:
    if token.cancelled:
        return BackendCancelledError(f"cancelled after {token.elapsed():.1f} s")
    if token.expired():
        return BackendTimeoutError(f"the model ran past its budget of {token.budget_s:g} s")
    return None


def stream_call(
    llm: LLM,
    messages: Sequence[Message],
    token: CancelToken,
    *,
    tick_s: float = 0.5,
    **options: Unpack[GenOptions],
) -> Generator[CallEvent, None, None]:
    """Stream ``llm``'s reply to ``messages`` under ``token``; see the module docstring.

    Closing the generator early cancels the token, so the backend stops between two tokens.
    """
    out: queue.Queue[object] = queue.Queue()
    worker = threading.Thread(target=_pump, args=(token.bind(llm), messages, options, out), name="model-call", daemon=True)
    worker.start()
    text, error, ended = "", None, False
    try:
        next_tick = token.elapsed() + tick_s
        while True:
            if (now := token.elapsed()) >= next_tick:  # a tick however fast or slow the tokens come
                next_tick = now + tick_s
                yield CallEvent("tick", now, text)
            remaining = token.remaining()
            wait = next_tick - token.elapsed() if remaining is None else min(next_tick - token.elapsed(), remaining)
            try:
                item = out.get(timeout=max(0.0, wait))
            except queue.Empty:
                if (error := _stopped(token)) is not None:
                    break
                continue
            if item is _DONE:
                break
            if isinstance(item, BaseException):
                error = item
                break
            text += str(item)
            yield CallEvent("delta", token.elapsed(), str(item))
            if (error := _stopped(token)) is not None:
                break
        ended = True
        yield CallEvent("end", token.elapsed(), text, error)
    finally:
        if not ended or (error is not None and worker.is_alive()):
            token.cancel()  # closed early, or stopped while the backend was busy: it stops between two tokens


def run_call(work: Callable[[], T], token: CancelToken | None = None) -> T:
    """``work()`` under ``token``, returning at its deadline (or at once on Cancel) whatever ``work`` is doing.

    ``work`` runs in a daemon worker thread, in a copy of the caller's context with ``token``
    active, so a backend inside it reads the token and stops itself between two tokens at the
    same deadline; the caller does not wait for that. At the deadline :class:`BackendTimeoutError`
    is raised (:class:`BackendCancelledError` on Cancel). The token is not cancelled here: several
    calls may share it (a Self-RAG stage judging documents concurrently), and each must end as a
    timeout, not as a Cancel. ``token=None`` takes the token active in this context (a Self-RAG
    stage's); with none, ``work`` runs here.
    """
    token = token if token is not None else current_token()
    if token is None:
        return work()
    box: dict[str, object] = {}
    done = threading.Event()

    def worker() -> None:
        try:
            with token.active():
                box["reply"] = work()
        except BaseException as exc:  # handed to the caller
            box["error"] = exc
        finally:
            done.set()

    context = contextvars.copy_context()
    threading.Thread(target=context.run, args=(worker,), name="model-call", daemon=True).start()
    while not done.wait(timeout=_slice(token)):
        if (stop := _stopped(token)) is not None:
            raise stop
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["reply"]  # type: ignore[return-value]


def chat_call(
    llm: LLM, messages: Sequence[Message], token: CancelToken | None = None, **options: Unpack[GenOptions]
) -> Completion:
    """``llm``'s whole reply under ``token`` (:func:`run_call`); :class:`BackendTimeoutError` at the deadline."""
    return run_call(lambda: llm.chat(messages, **options), token)


def complete_call(
    llm: LLM, prompt: str, token: CancelToken | None = None, **options: Unpack[GenOptions]
) -> Completion:
    """``llm``'s continuation of a raw ``prompt`` under ``token`` (:func:`run_call`), as :func:`chat_call`."""
    return run_call(lambda: llm.complete(prompt, **options), token)


def _slice(token: CancelToken) -> float:
    remaining = token.remaining()
    return 0.25 if remaining is None else max(0.0, min(0.25, remaining))
