"""What the Groq and OpenAI-compatible backends share: error mapping, retries, SSE parsing.

Both official SDKs are generated from the same template (``APIStatusError``,
``APITimeoutError``, ``APIConnectionError``, ``with_raw_response``), so one
mapping serves both. The SDKs' own retries are switched off (``max_retries=0``)
so that ``settings.llm.max_retries`` and its backoff are the only ones.
Response bodies are parsed here, not by the SDK models, so a malformed body
is a :class:`BackendError` rather than a half-filled object. An error body is
never put in an error message, a log line or the audit: it may carry a link or
a name, and the doctor sees a fixed message with the HTTP status only.

Every request passes :class:`core.privacy.egress.Egress` first (the one choke
point before an external backend): messages and raw prompts are normalised and
de-identified there.
"""

from __future__ import annotations

import email.utils
import functools
import importlib
import logging
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar, Unpack

from core.errors import (
    BackendAuthError,
    BackendCancelledError,
    BackendError,
    BackendTimeoutError,
    CasebookError,
    RateLimitedError,
)
from core.llm.base import Completion, GenOptions, GenParams, Message
from core.llm.budget import current_token
from core.llm.wire import completion_from_response, delta_from_chunk, load_json
from core.privacy.egress import Egress

if TYPE_CHECKING:
    from core.config.llm import LLMSettings

__all__ = ["OpenAIWireLLM", "map_sdk_error", "parse_retry_after"]

log = logging.getLogger(__name__)
T = TypeVar("T")
_RETRY_AFTER_DEFAULT_S = 1.0  # when a 429 carries no usable Retry-After header


def parse_retry_after(headers: Mapping[str, str]) -> float:
    """Seconds to wait from ``retry-after-ms``, ``retry-after`` (seconds or an HTTP date)."""
    if (ms := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return _RETRY_AFTER_DEFAULT_S
    try:
        return max(0.0, float(value))
    except ValueError:
        when = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, when.timestamp() - time.time()) if when else _RETRY_AFTER_DEFAULT_S


@functools.cache
def _http_errors() -> tuple[tuple[type[Exception], ...], tuple[type[Exception], ...]]:
    """Timeout and transport exception classes of httpx and httpx2 (the openai SDK uses the fork).

    Read once, when a backend is built: imported lazily by a call abandoned at its deadline, httpx was
    half-initialised in ``sys.modules`` while the next call's SDK looked it up (AttributeError).
    """
    timeouts: list[type[Exception]] = []
    transport: list[type[Exception]] = []
    for name in ("httpx", "httpx2"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        transport.append(module.TransportError)
    return tuple(timeouts), tuple(transport)


def map_sdk_error(exc: Exception, sdk: ModuleType, backend: str) -> tuple[CasebookError, bool]:
    """The Casebook error for an SDK or httpx exception, and whether a retry may help."""
    timeouts, transport = _http_errors()
    if isinstance(exc, (sdk.APITimeoutError, *timeouts)):
        return BackendTimeoutError(f"{backend}: no answer within the time limit"), False
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        if status in (401, 403):
            return BackendAuthError(f"{backend}: the server refused the API key (HTTP {status})"), False
        if status == 429:
            wait = parse_retry_after(exc.response.headers)
            return RateLimitedError(f"{backend}: rate limited (HTTP 429)", retry_after_s=wait), False
        # the body is never shown, logged or stored: it may hold a link or a name (issue 15)
        return BackendError(f"{backend}: the server answered HTTP {status}"), status >= 500
    if isinstance(exc, (sdk.APIConnectionError, *transport)):
        return BackendError(f"{backend}: connection failed or was cut ({exc.__class__.__name__})"), True
    if isinstance(exc, ValueError):
        return BackendError(f"{backend}: malformed response ({type(exc).__name__})"), False
    raise exc


def iter_sse(lines: Iterable[str], *, backend: str) -> Iterator[dict[str, Any]]:
    """JSON payloads of a server-sent-event stream, up to ``data: [DONE]``."""
    for line in lines:
        if not line.startswith("data:"):
            continue
        data = line[len("data:") :].strip()
        if data == "[DONE]":
            return
        yield load_json(data, backend=backend)


class OpenAIWireLLM:
    """Chat, raw completion and streaming over an OpenAI-style SDK client.

    ``egress`` de-identifies everything sent; without one, the patterns apply
    but no names (the factory passes one that reads the user table).
    """

    backend = "openai"

    def __init__(
        self, client: Any, sdk: ModuleType, model: str, settings: LLMSettings, egress: Egress | None = None
    ) -> None:
        self.client = client
        self.sdk = sdk
        self.model = model
        self.settings = settings
        self.egress = egress or Egress()
        self.egress.warm()  # the de-identifier's one-off build, outside any call's budget (issue 27)
        _http_errors()  # httpx's import too, never inside a call another thread may be abandoning

    def _retrying(self, call: Callable[[], T]) -> T:
        s = self.settings
        for attempt in range(s.max_retries + 1):
            try:
                return call()
            except CasebookError:
                raise
            except Exception as exc:
                error, retryable = map_sdk_error(exc, self.sdk, self.backend)
                token = current_token()
                left = token.remaining() if token is not None else None
                delay = min(s.retry_backoff_s * 2**attempt, s.retry_backoff_max_s)
                if left is not None and left <= delay:  # no time left to retry within the call's budget
                    raise error from exc
                if not retryable or attempt == s.max_retries:
                    raise error from exc
                log.warning("%s; retry %d/%d in %.2f s", error, attempt + 1, s.max_retries, delay)
                time.sleep(delay)
        raise AssertionError("unreachable")

    def _params(self, gen: GenParams) -> dict[str, Any]:
        gen = gen.resolved(self.settings)
        params: dict[str, Any] = {"model": self.model, "max_tokens": gen.max_tokens, "temperature": gen.temperature}
        if gen.stop:
            params["stop"] = list(gen.stop)
        if gen.seed is not None:
            params["seed"] = gen.seed
        return params

    def _post(self, create: Callable[..., Any], params: dict[str, Any]) -> Completion:
        token = current_token()  # a stage or feature budget: the request holds only what is left of it

        def call() -> Completion:
            timeout = self.settings.timeout_s
            left = token.remaining() if token is not None else None
            if token is not None and token.cancelled:
                raise BackendCancelledError(f"{self.backend}: cancelled before the request was sent")
            if token is not None and left is not None:
                if left <= 0:
                    raise BackendTimeoutError(f"{self.backend}: the call's budget of {token.budget_s:g} s is spent")
                timeout = left if token.lift_ceiling else min(timeout, left)
            raw = create(**params, timeout=timeout)
            data = load_json(raw.http_response.text, backend=self.backend)
            return completion_from_response(data, backend=self.backend, model=self.model)

        return self._retrying(call)

    def chat(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Completion:
        """Answer a conversation (``POST .../chat/completions``)."""
        gen = GenParams.of(params, **options)
        body = self._params(gen) | {"messages": self.egress.messages(messages)}
        if gen.logprobs:
            body |= {"logprobs": True, "top_logprobs": gen.logprobs}
        return self._post(self.client.chat.completions.with_raw_response.create, body)

    def complete(self, prompt: str, params: GenParams | None = None, **options: Unpack[GenOptions]) -> Completion:
        """Continue a raw prompt (``POST .../completions``)."""
        gen = GenParams.of(params, **options)
        body = self._params(gen) | {"prompt": self.egress.text(prompt)}
        if gen.logprobs:
            body["logprobs"] = gen.logprobs
        return self._post(self.client.completions.with_raw_response.create, body)

    def stream(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Iterator[str]:
        """Yield text deltas; a stream that ends without a finish reason is a :class:`BackendError`."""
        body = self._params(GenParams.of(params, **options)) | {
            "messages": self.egress.messages(messages),
            "stream": True,
        }
        deadline = time.monotonic() + self.settings.timeout_s
        open_stream = self.client.chat.completions.with_streaming_response.create
        response = self._retrying(lambda: open_stream(**body).__enter__())
        finished = False
        try:
            for chunk in iter_sse(response.iter_lines(), backend=self.backend):
                text, finish = delta_from_chunk(chunk, backend=self.backend)
                finished = finished or finish is not None
                if text:
                    yield text
                if time.monotonic() > deadline:
                    raise BackendTimeoutError(
                        f"{self.backend}: answer not finished within {self.settings.timeout_s:g} s"
                    )
        except CasebookError:
            raise
        except Exception as exc:
            raise map_sdk_error(exc, self.sdk, self.backend)[0] from exc
        finally:
            response.close()
        if not finished:
            raise BackendError(f"{self.backend}: the stream ended before the answer was complete")

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.client.close()
