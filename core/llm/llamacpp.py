"""Local GGUF models through the prebuilt ``xllamacpp`` binding (no compiler needed).

``xllamacpp.Server`` embeds llama.cpp's own server: requests are OpenAI-style
dicts and answers come back in the same wire format, log-probabilities
included. It also listens on a random loopback port (127.0.0.1, port 0); nothing
here uses that port, a random API key keeps other local processes out, and
nothing leaves the machine.

Every call runs in streaming mode internally so that ``settings.llm.timeout_s``
can stop generation mid-way (the stream callback returns True), which a plain
blocking call cannot. The model loads lazily on the first call.
"""

from __future__ import annotations

import logging
import queue
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.embed.base import free_cores
from core.errors import BackendError, BackendTimeoutError, ConfigError
from core.llm.base import Completion, Message, TokenLogprobs
from core.llm.wire import delta_from_chunk, tokens_from_logprobs

if TYPE_CHECKING:
    from core.llm.settings import LLMSettings

__all__ = ["LlamaCppLLM"]

log = logging.getLogger(__name__)
_BACKEND = "llamacpp"
_DONE = object()


class LlamaCppLLM:
    """The :class:`~core.llm.base.LLM` protocol over a local GGUF file."""

    backend = _BACKEND

    def __init__(self, model_path: Path, settings: LLMSettings) -> None:
        self.model_path = model_path
        self.model = model_path.stem
        self.settings = settings
        self.threads = free_cores(settings.threads)
        self._server: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._server is None:
                try:
                    import xllamacpp
                except ImportError as exc:
                    raise ConfigError("The llamacpp backend needs xllamacpp", hint="pip install xllamacpp") from exc
                s = self.settings
                params = xllamacpp.CommonParams()
                params.model.path = str(self.model_path)
                params.n_ctx = s.n_ctx
                params.n_batch = s.n_batch
                params.n_predict = s.max_tokens
                params.n_parallel = 1
                params.cpuparams.n_threads = self.threads
                params.cpuparams_batch.n_threads = self.threads
                params.sampling.seed = s.seed
                params.sampling.temp = s.temperature
                params.warmup = False
                params.ui = False
                params.verbosity = -1  # llama.cpp logs only errors
                # The embedded server also listens on 127.0.0.1: a random key shuts other local processes out.
                params.api_keys = [secrets.token_hex(16)]
                started = time.perf_counter()
                try:
                    self._server = xllamacpp.Server(params)
                except Exception as exc:  # the binding raises plain RuntimeError on a bad file
                    raise BackendError(f"llama.cpp could not load {self.model_path}: {exc}") from exc
                log.info(
                    "loaded %s with %d threads in %.1f s",
                    self.model_path.name,
                    self.threads,
                    time.perf_counter() - started,
                )
            return self._server

    def _request(self, max_tokens: int | None, temperature: float | None, stop: Sequence[str] | None) -> dict[str, Any]:
        s = self.settings
        request: dict[str, Any] = {
            "max_tokens": s.max_tokens if max_tokens is None else max_tokens,
            "temperature": s.temperature if temperature is None else temperature,
            "seed": s.seed,
            "stream": True,
            "stream_options": {"include_usage": True},
            "cache_prompt": True,
        }
        if stop:
            request["stop"] = list(stop)
        return request

    def _run(self, chat: bool, request: dict[str, Any], on_chunk: Callable[[dict[str, Any]], bool]) -> None:
        """Send one streaming request; ``on_chunk`` returns True to stop generation."""
        server = self._load()
        deadline = time.monotonic() + self.settings.timeout_s
        state: dict[str, Any] = {"timed_out": False, "error": None}

        def callback(chunk: Any) -> bool:
            if isinstance(chunk, dict) and "error" in chunk:
                state["error"] = chunk["error"]
                return True
            if time.monotonic() > deadline:
                state["timed_out"] = True
                return True
            return bool(on_chunk(chunk))

        handler = server.handle_chat_completions if chat else server.handle_completions
        try:
            result = handler(request, callback)
        except RuntimeError as exc:
            raise BackendError(f"llama.cpp failed: {exc}") from exc
        error = state["error"] or (result.get("error") if isinstance(result, dict) else None)
        if error:
            message = error.get("message", error) if isinstance(error, dict) else error
            raise BackendError(f"llama.cpp refused the request: {message}")
        if state["timed_out"]:
            raise BackendTimeoutError(f"llama.cpp did not finish within {self.settings.timeout_s:g} s")

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

        self._run(chat, request, on_chunk)
        return Completion(
            text="".join(parts),
            finish_reason=meta["finish"],
            prompt_tokens=meta["usage"].get("prompt_tokens"),
            completion_tokens=meta["usage"].get("completion_tokens"),
            backend=_BACKEND,
            model=self.model,
            tokens=tokens,
        )

    def chat(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        logprobs: int | None = None,
    ) -> Completion:
        """Answer a conversation with the model's own chat template."""
        request = self._request(max_tokens, temperature, stop) | {"messages": list(messages)}
        if logprobs:
            request |= {"logprobs": True, "top_logprobs": logprobs}
        return self._collect(True, request)

    def complete(
        self,
        prompt: str,
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
        logprobs: int | None = None,
    ) -> Completion:
        """Continue ``prompt`` verbatim (no template)."""
        request = self._request(max_tokens, temperature, stop) | {"prompt": prompt}
        if logprobs:
            request["logprobs"] = logprobs
        return self._collect(False, request)

    def stream(
        self,
        messages: Sequence[Message],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        stop: Sequence[str] | None = None,
    ) -> Iterator[str]:
        """Yield text deltas; closing the iterator early stops generation."""
        request = self._request(max_tokens, temperature, stop) | {"messages": list(messages)}
        deltas: queue.Queue[Any] = queue.Queue()
        cancelled = threading.Event()

        def on_chunk(chunk: dict[str, Any]) -> bool:
            text, _ = delta_from_chunk(chunk, backend=_BACKEND)
            if text:
                deltas.put(text)
            return cancelled.is_set()

        def worker() -> None:
            try:
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
