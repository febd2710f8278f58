"""Local GGUF models through the prebuilt ``xllamacpp`` binding (no compiler needed).

``xllamacpp.Server`` embeds llama.cpp's own server: requests are OpenAI-style
dicts and answers come back in the same wire format, log-probabilities
included. It also listens on a random loopback port (127.0.0.1, port 0); nothing
here uses that port, a random API key keeps other local processes out, and
nothing leaves the machine.

Every call runs in streaming mode internally so that the call's budget, or a
Cancel, can stop generation mid-way (the stream callback returns True), which a
plain blocking call cannot: the deadline is ``llm.timeout_s`` or the budget of the
:class:`~core.llm.budget.CancelToken` active in the calling context, whichever
comes first. The model loads lazily on the first call.

Speed on a shared 2-core machine:

* threads come from the cores other processes leave free, sampled at each call
  (``free_cores(sample_s=0.2)``); a changed count reloads the model, at most every
  ``llm.llamacpp.thread_recheck_s`` (2 threads beside a busy process collapse below 1 tok/s);
* llama.cpp keeps earlier prompts' KV state (``cache_prompt`` and ``llm.llamacpp.prompt_cache_mib``
  of RAM), so the fixed system prompt and a scan's data are read once; only the new part
  of a prompt is read (measured in ``docs/benchmarks/llm.md``);
* its own timings feed :func:`~core.llm.budget.speed_meter` after every call, finished, cut at
  its budget or cancelled (``timings_per_token``: each streamed token carries what was read and
  written so far; a call stopped before its first token counts as reading at most its prompt in
  the time it had), with the load average at the start;
* a call whose prompt alone would outlast its budget at that speed is refused at once
  (``llm.refuse_certain_timeouts``), unless the estimate is stale (measured under far more load,
  or long ago): then the call runs within its budget and re-measures.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from core.embed.base import free_cores
from core.errors import BackendCancelledError, BackendError, BackendTimeoutError, ConfigError
from core.llm.base import Completion, GenOptions, GenParams, Message, TokenLogprobs
from core.llm.budget import CHARS_PER_TOKEN, current_token, load_now, speed_meter
from core.llm.speed import load_for_retry
from core.llm.wire import delta_from_chunk, tokens_from_logprobs

if TYPE_CHECKING:
    from core.config.llm import LLMSettings

__all__ = ["LlamaCppLLM"]

log = logging.getLogger(__name__)
_BACKEND = "llamacpp"
_DONE = object()
_SAMPLE_S = 0.2  # how long other processes' CPU use is sampled before a call
_EARLY_S = 0.1  # a call still reading its prompt this long before its deadline is counted then (see _run)
_CERTAIN = 1.25  # refuse only when the prompt alone needs 25% more than the time left (speed varies)


class LlamaCppLLM:
    """The :class:`~core.llm.base.LLM` protocol over a local GGUF file."""

    backend = _BACKEND

    def __init__(self, model_path: Path, settings: LLMSettings) -> None:
        self.model_path = model_path
        self.model = model_path.stem
        self.settings = settings
        self.threads = free_cores(settings.llamacpp.threads)
        self._server: Any = None
        self._lock = threading.Lock()
        self._loaded_at = 0.0
        self._last_prompt = ""
        self._new_prompt_tokens = 0  # the part of the last prompt not in llama.cpp's cache (estimated)
        self.last_timings: dict[str, float] = {}

    def _wanted_threads(self) -> int:
        """Threads for the next call: the setting, or the cores free now (rechecked at most so often)."""
        local = self.settings.llamacpp
        if local.threads > 0 or self._server is None:
            return free_cores(local.threads, _SAMPLE_S) if self._server is None else self.threads
        if time.monotonic() - self._loaded_at < local.thread_recheck_s:
            return self.threads
        return free_cores(0, _SAMPLE_S)

    def _load(self) -> Any:
        wanted = self._wanted_threads()
        with self._lock:
            if self._server is not None and wanted != self.threads:
                log.info("free cores changed: reloading llama.cpp with %d threads (was %d)", wanted, self.threads)
                self._server = None
            self.threads = wanted
            if self._server is None:
                try:
                    import xllamacpp
                except ImportError as exc:
                    raise ConfigError("The llamacpp backend needs xllamacpp", hint="pip install xllamacpp") from exc
                s = self.settings
                params = xllamacpp.CommonParams()
                params.model.path = str(self.model_path)
                params.n_ctx = s.llamacpp.n_ctx
                params.n_batch = s.llamacpp.n_batch
                params.n_predict = s.max_tokens
                params.n_parallel = 1
                params.cpuparams.n_threads = self.threads
                params.cpuparams_batch.n_threads = self.threads
                params.sampling.seed = s.seed
                params.sampling.temp = s.temperature
                params.warmup = False
                params.cache_prompt = True
                params.cache_ram_mib = s.llamacpp.prompt_cache_mib
                params.ui = False
                params.verbosity = -1  # llama.cpp logs only errors
                # The embedded server also listens on 127.0.0.1: a random key shuts other local processes out.
                params.api_keys = [secrets.token_hex(16)]
                started = time.perf_counter()
                try:
                    self._server = xllamacpp.Server(params)
                except Exception as exc:  # the binding raises plain RuntimeError on a bad file
                    raise BackendError(f"llama.cpp could not load {self.model_path}: {exc}") from exc
                self._loaded_at = time.monotonic()
                log.info(
                    "loaded %s with %d threads in %.1f s",
                    self.model_path.name,
                    self.threads,
                    time.perf_counter() - started,
                )
            return self._server

    def _refuse_if_certain_to_time_out(self, request: dict[str, Any], seconds_left: float) -> None:
        """Raise before starting when reading the new part of the prompt alone would outlast the budget."""
        text = request.get("prompt") or "".join(m["content"] for m in request.get("messages") or [])
        common = len(_common_prefix(text, self._last_prompt))
        system = next((m["content"] for m in request.get("messages") or [] if m.get("role") == "system"), "")
        new_chars = len(text) - max(common, len(system))  # the fixed system prompt is in llama.cpp's cache
        if len(text) / CHARS_PER_TOKEN > self.settings.llamacpp.n_ctx:
            return  # over the context window: llama.cpp refuses it at once with the clearer error
        self._new_prompt_tokens = int(max(0, new_chars) / CHARS_PER_TOKEN)
        _, prompt_s = speed_meter().seconds(self._new_prompt_tokens, 0)
        certain = prompt_s is not None and prompt_s > _CERTAIN * seconds_left
        if certain and self.settings.refuse_certain_timeouts and not speed_meter().stale(load_for_retry()):
            raise BackendTimeoutError(
                f"the local model needs about {prompt_s:.0f} s just to read this prompt here, more than the "
                f"{seconds_left:.0f} s left; not started",
                hint="Run it anyway with a larger budget, use a remote backend, or try again when the machine is "
                "less busy.",
            )
        self._last_prompt = text

    def _request(self, gen: GenParams) -> dict[str, Any]:
        gen = gen.resolved(self.settings)
        request: dict[str, Any] = {
            "max_tokens": gen.max_tokens,
            "temperature": gen.temperature,
            "seed": self.settings.seed if gen.seed is None else gen.seed,
            "stream": True,
            "stream_options": {"include_usage": True},
            "cache_prompt": True,
            "timings_per_token": True,  # a call cut at its budget still tells the speed meter what it did
        }
        if gen.stop:
            request["stop"] = list(gen.stop)
        if gen.grammar:  # llama.cpp samples only tokens the GBNF grammar allows
            request["grammar"] = gen.grammar
        return request

    def _run(self, chat: bool, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        """Send one streaming request; ``on_chunk`` returns True to stop generation."""
        token = current_token()
        started = time.monotonic()
        budget = self.settings.timeout_s
        if token is not None and token.remaining() is not None:
            left = max(0.0, token.remaining() or 0.0)
            budget = left if token.lift_ceiling else min(budget, left)
        if token is not None and token.cancelled:
            raise BackendCancelledError("cancelled before the local model started")
        # checked before loading: a server dropped unused right after start-up can hang llama.cpp's shutdown
        self._refuse_if_certain_to_time_out(request, budget)
        server = self._load()
        deadline = started + budget  # a (re)load counts against the budget
        load, loaded = load_now(), time.monotonic()
        state: dict[str, Any] = {"timed_out": False, "cancelled": False, "error": None, "first": None, "deltas": 0}

        def callback(chunk: Any) -> bool:
            if isinstance(chunk, dict) and "error" in chunk:
                state["error"] = chunk["error"]
                return True
            if token is not None and token.cancelled:
                state["cancelled"] = True
                return True
            if time.monotonic() > deadline:
                state["timed_out"] = True
                return True
            if isinstance(chunk, dict):
                if any(_delta_text(c) for c in chunk.get("choices") or []):
                    state["deltas"] += 1
                    if state["first"] is None:
                        state["first"] = time.monotonic() - started
                        state["first_after_load"] = time.monotonic() - loaded
                if isinstance(chunk.get("timings"), dict):
                    state["raw"] = chunk["timings"]
            return bool(on_chunk(chunk))

        handler = server.handle_chat_completions if chat else server.handle_completions
        # llama.cpp streams nothing while it reads the prompt, so a call cut there reaches the callback (and
        # _measure) only once the whole prompt is read, long after its caller gave up at the deadline: the
        # next call would plan with the old estimate. At the deadline, count what is known at once.
        early_at = max(0.0, deadline - _EARLY_S - loaded)  # just before the caller leaves, so its next plan sees it
        early = threading.Timer(max(0.0, loaded + early_at - time.monotonic()), self._measure_unread, (state, early_at, load))
        early.daemon = True
        early.start()
        try:
            result = handler(request, callback)
        except RuntimeError as exc:
            raise BackendError(f"llama.cpp failed: {exc}") from exc
        finally:
            early.cancel()
            self._measure(state, time.monotonic() - loaded, load)
        error = state["error"] or (result.get("error") if isinstance(result, dict) else None)
        if error:
            message = error.get("message", error) if isinstance(error, dict) else error
            raise BackendError(f"llama.cpp refused the request: {message}")
        if state["cancelled"]:
            raise BackendCancelledError(f"cancelled after {time.monotonic() - started:.1f} s")
        if state["timed_out"]:
            raise BackendTimeoutError(f"llama.cpp did not finish within its budget of {budget:g} s")

    def _measure_unread(self, state: dict[str, Any], seconds: float, load: float | None) -> None:
        """At the deadline, with no token yet: the prompt reads at most this fast (llama.cpp's own counts follow)."""
        if state["first"] is None and not state.get("raw"):
            record = speed_meter().record
            record(self._new_prompt_tokens, seconds * 1000, 0, 0.0, self.threads, load=load, partial=True, bound=True)

    def _measure(self, state: dict[str, Any], seconds: float, load: float | None) -> None:
        """Feed the speed meter from this call, however it ended (finished, cut at its budget, cancelled)."""
        partial = bool(state["timed_out"] or state["cancelled"])
        if state.get("raw"):  # llama.cpp's own counts, up to the last token streamed
            self._record(state["raw"], state, load=load, partial=partial)
        elif state["first"] is not None:  # no timings in the stream: the first token ends the prompt's reading
            first = state["first_after_load"]
            gen_ms = (seconds - first) * 1000
            speed_meter().record(
                self._new_prompt_tokens, first * 1000, state["deltas"] - 1, gen_ms, self.threads, load=load, partial=partial
            )
        elif state["timed_out"]:  # stopped while reading the prompt: it reads at most this fast
            record = speed_meter().record
            record(self._new_prompt_tokens, seconds * 1000, 0, 0.0, self.threads, load=load, partial=True, bound=True)

    def _record(self, timings: dict[str, Any], state: dict[str, Any], *, load: float | None, partial: bool) -> None:
        """Feed llama.cpp's own timings to the speed meter and keep them for the Completion."""
        prompt_n, prompt_ms = int(timings.get("prompt_n") or 0), float(timings.get("prompt_ms") or 0)
        gen_n, gen_ms = int(timings.get("predicted_n") or 0), float(timings.get("predicted_ms") or 0)
        speed_meter().record(prompt_n, prompt_ms, gen_n, gen_ms, self.threads, load=load, partial=partial)
        state["timings"] = {
            "cached_prompt_tokens": float(timings.get("cache_n") or 0),
            "read_prompt_tokens": float(prompt_n),
            "prompt_tps": round(prompt_n / (prompt_ms / 1000), 1) if prompt_ms else 0.0,
            "gen_tps": round(gen_n / (gen_ms / 1000), 1) if gen_ms else 0.0,
            "threads": float(self.threads),
        }
        if state.get("first") is not None:
            state["timings"]["first_token_s"] = round(state["first"], 3)
        self.last_timings = state["timings"]

    def _collect(self, chat: bool, request: dict[str, Any]) -> Completion:
        parts: list[str] = []
        tokens: list[TokenLogprobs] = []
        meta: dict[str, Any] = {"finish": None, "usage": {}}

        def on_chunk(chunk: dict[str, Any]) -> bool:
            text, finish = delta_from_chunk(chunk, backend=_BACKEND)
            parts.append(text)
            meta["finish"] = finish or meta["finish"]
            meta["usage"] = chunk.get("usage") or meta["usage"]
            for choice in chunk.get("choices") or []:
                tokens.extend(tokens_from_logprobs(choice.get("logprobs")))
            return False

        self.last_timings = {}
        self._run(chat, request, on_chunk)
        return Completion(
            text="".join(parts),
            finish_reason=meta["finish"],
            prompt_tokens=meta["usage"].get("prompt_tokens"),
            completion_tokens=meta["usage"].get("completion_tokens"),
            backend=_BACKEND,
            model=self.model,
            tokens=tokens,
            timings=dict(self.last_timings),
        )

    def chat(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Completion:
        """Answer a conversation with the model's own chat template."""
        gen = GenParams.of(params, **options)
        request = self._request(gen) | {"messages": list(messages)}
        if gen.logprobs:
            request |= {"logprobs": True, "top_logprobs": gen.logprobs}
        return self._collect(True, request)

    def complete(self, prompt: str, params: GenParams | None = None, **options: Unpack[GenOptions]) -> Completion:
        """Continue ``prompt`` verbatim (no template)."""
        gen = GenParams.of(params, **options)
        request = self._request(gen) | {"prompt": prompt}
        if gen.logprobs:
            request["logprobs"] = gen.logprobs
        return self._collect(False, request)

    def stream(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Iterator[str]:
        """Yield text deltas; closing the iterator early stops generation."""
        request = self._request(GenParams.of(params, **options)) | {"messages": list(messages)}
        deltas: queue.Queue[Any] = queue.Queue()
        cancelled = threading.Event()

        def on_chunk(chunk: dict[str, Any]) -> bool:
            text, _ = delta_from_chunk(chunk, backend=_BACKEND)
            if text:
                deltas.put(text)
            return cancelled.is_set()

        token = current_token()  # the caller's CancelToken, handed to the worker thread

        def worker() -> None:
            try:
                with token.active() if token is not None else contextlib.nullcontext():
                    self._run(True, request, on_chunk)
            except Exception as exc:  # handed to the consumer thread below
                deltas.put(exc)
            finally:
                deltas.put(_DONE)

        thread = threading.Thread(target=worker, name="llamacpp-stream", daemon=True)
        thread.start()
        try:
            while (item := deltas.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            cancelled.set()

    def close(self) -> None:
        """Free the model (the next call loads it again)."""
        with self._lock:
            self._server = None


def _delta_text(choice: dict[str, Any]) -> str:
    delta = choice.get("delta") or {}
    return str(delta.get("content") or choice.get("text") or "")


def _common_prefix(a: str, b: str) -> str:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return a[:i]
