"""A loopback HTTP server speaking the OpenAI / Groq chat-completions wire format.

Real sockets, real SDK clients, no patching: start a :class:`FakeLLMServer`,
point a backend at ``server.base_url`` (OpenAI-compatible, ends in ``/v1``) or
``server.root_url`` (Groq: the SDK appends ``/openai/v1``), and read back every
request payload from ``server.requests``.

Answers: ``POST .../chat/completions`` and ``POST .../completions``, plain or
streamed (SSE over chunked transfer encoding), with log-probabilities in the
chat shape (``logprobs.content``) or, for plain completions, the legacy shape
(``tokens``/``token_logprobs``/``top_logprobs``). The reply text is ``server.reply``;
``server.token_probs`` may fix the top alternatives of given tokens.

Faults, each consumed by the next request (``times`` requests in a row):
``fail_status(401)``, ``fail_status(429, headers={"Retry-After": "7"})``,
``fail_status(503)``, ``fail_malformed()``, ``fail_slow(delay_s)``,
``fail_drip(seconds)`` (a whole reply written a few bytes every 0.1 s over ``seconds``: every read
of the client gets something long before its per-read timeout, so only a wall-time deadline
ends the call), ``fail_cut(after_chunks)`` (a stream, or a body, cut midway).

Slow streams: ``server.token_delay_s`` waits before every streamed token (a model
writing on a busy machine); ``server.streamed`` counts the tokens each stream sent
and ``server.dropped`` the streams the client closed before the end (a Cancel).
"""

from __future__ import annotations

import json
import math
import re
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["DEFAULT_REPLY", "FakeLLMServer", "Fault", "RecordedRequest"]

DEFAULT_REPLY = "Findings are consistent with the retrieved guideline [S1]."
_CHOSEN_P = 0.7
_ALT_PS = (0.15, 0.08, 0.04, 0.02, 0.005)  # with _CHOSEN_P sums to 0.995 < 1, like a real softmax tail


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    def text(self) -> str:
        """Every prompt or message text in the payload, joined (for privacy assertions)."""
        parts = [str(m.get("content", "")) for m in self.body.get("messages", [])]
        prompt = self.body.get("prompt")
        parts.extend(prompt if isinstance(prompt, list) else [str(prompt or "")])
        return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class Fault:
    """A scripted misbehaviour for the next request."""

    kind: str  # "status", "malformed", "slow", "cut" ("none": answer normally)
    status: int = 500
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    after_chunks: int = 2
    message: str | None = None


class FakeLLMServer:
    """The loopback server; use as a context manager or call :meth:`start`/:meth:`stop`."""

    def __init__(self, reply: str = DEFAULT_REPLY, model: str = "fake-model") -> None:
        self.reply = reply
        self.model = model
        self.token_probs: dict[str, dict[str, float]] = {}
        self.requests: list[RecordedRequest] = []
        self.token_delay_s = 0.0
        self.streamed: list[int] = []
        self.dropped = 0
        self._faults: deque[Fault] = deque()
        self._lock = threading.Lock()
        self._httpd = _QuietServer(("127.0.0.1", 0), _handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,), name="fake-llm", daemon=True)

    @property
    def root_url(self) -> str:
        """``http://127.0.0.1:<port>`` (give this to the Groq SDK)."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """``<root_url>/v1`` (give this to the OpenAI SDK)."""
        return self.root_url + "/v1"

    def llm_overrides(self, backend: str = "openai", **extra: Any) -> dict[str, Any]:
        """``llm`` settings that point ``backend`` here, with short timeouts and backoff."""
        overrides: dict[str, Any] = {
            "backend": backend,
            "timeout_s": 2.0,
            "max_retries": 2,
            "retry_backoff_s": 0.01,
            "openai": {"base_url": self.base_url, "model": self.model},
            "groq": {"base_url": self.root_url, "model": self.model},
        }
        return overrides | extra

    def flat_llm_overrides(self, backend: str = "openai", **extra: Any) -> dict[str, Any]:
        """:meth:`llm_overrides` with dotted keys inside ``llm`` (``openai.base_url``), as ``--set llm.<key>`` takes."""
        flat: dict[str, Any] = {}
        for key, value in self.llm_overrides(backend, **extra).items():
            if isinstance(value, dict):
                flat |= {f"{key}.{sub}": v for sub, v in value.items()}
            else:
                flat[key] = value
        return flat

    def llm_env(self, backend: str = "openai", **extra: Any) -> dict[str, str]:
        """:meth:`llm_overrides` as ``CASEBOOK_LLM__...`` environment variables (for an app process or page)."""
        return {
            "CASEBOOK_LLM__" + key.upper().replace(".", "__"): str(value)
            for key, value in self.flat_llm_overrides(backend, **extra).items()
        }

    def start(self) -> FakeLLMServer:
        """Serve in a daemon thread."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def fail_status(
        self, status: int, *, headers: dict[str, str] | None = None, times: int = 1, message: str | None = None
    ) -> None:
        """Answer the next ``times`` requests with HTTP ``status`` and an OpenAI-style error body.

        ``message`` replaces the body's error message (a hostile server's text).
        """
        self._push(Fault("status", status=status, headers=headers or {}, message=message), times)

    def fail_malformed(self, times: int = 1) -> None:
        """Answer 200 with a body (or SSE event) that is not valid JSON."""
        self._push(Fault("malformed"), times)

    def fail_slow(self, delay_s: float, times: int = 1, after: int = 0) -> None:
        """Wait ``delay_s`` before answering (past the client's timeout); ``after``: that many requests first answer at once."""
        self._push(Fault("none"), after)
        self._push(Fault("slow", delay_s=delay_s), times)

    def fail_drip(self, seconds: float, times: int = 1, after: int = 0) -> None:
        """Write the next reply's body a few bytes every 0.1 s over ``seconds``; ``after`` as in :meth:`fail_slow`."""
        self._push(Fault("none"), after)
        self._push(Fault("drip", delay_s=seconds), times)

    def fail_cut(self, after_chunks: int = 2, times: int = 1) -> None:
        """Close the connection after ``after_chunks`` stream events (or half a body)."""
        self._push(Fault("cut", after_chunks=after_chunks), times)

    def _push(self, fault: Fault, times: int) -> None:
        with self._lock:
            self._faults.extend([fault] * times)

    def next_fault(self) -> Fault | None:
        """Pop the fault for the request being handled (internal to the handler)."""
        with self._lock:
            return self._faults.popleft() if self._faults else None

    def record(self, request: RecordedRequest) -> None:
        """Keep one request (internal to the handler)."""
        with self._lock:
            self.requests.append(request)

    def tokens(self) -> list[str]:
        """The reply split into tokens (leading whitespace kept), concatenating back to ``reply``."""
        return re.findall(r"\s*\S+", self.reply) or [""]

    def top_for(self, token: str, k: int) -> dict[str, float]:
        """Top-``k`` log-probabilities for ``token``'s step, best first."""
        probs = self.token_probs.get(token) or {
            token: _CHOSEN_P,
            **{f"{token.strip()}~{i}": p for i, p in enumerate(_ALT_PS)},
        }
        ranked = sorted(probs.items(), key=lambda p: p[1], reverse=True)[:k]
        return {t: math.log(p) for t, p in ranked}


class _QuietServer(ThreadingHTTPServer):
    """Threaded server that does not print tracebacks for connections the client dropped."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore socket errors (fault tests drop connections on purpose); report anything else."""
        if not isinstance(sys.exc_info()[1], OSError):
            super().handle_error(request, client_address)


def _handler_for(fake: FakeLLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        server_state = fake

    return Handler


class _Handler(BaseHTTPRequestHandler):
    """Speaks just enough of the OpenAI wire format; HTTP/1.1 so streams use chunked encoding."""

    protocol_version = "HTTP/1.1"
    server_state: FakeLLMServer

    def log_message(self, format: str, *args: Any) -> None:
        """Stay quiet."""

    def do_GET(self) -> None:
        """``GET .../models``: one model."""
        self._json(200, {"object": "list", "data": [{"id": self.server_state.model, "object": "model"}]})

    def do_POST(self) -> None:
        """Chat or plain completion, with the scripted fault if any."""
        fake = self.server_state
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        fake.record(RecordedRequest("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        fault = fake.next_fault()
        chat = self.path.rstrip("/").endswith("/chat/completions")
        try:
            if fault and fault.kind == "status":
                message = fault.message or f"scripted HTTP {fault.status}"
                error = {"error": {"message": message, "type": "fake", "code": fault.status}}
                self._json(fault.status, error, fault.headers)
                return
            if fault and fault.kind == "slow":
                time.sleep(fault.delay_s)
            if body.get("stream"):
                self._stream(body, chat, fault)
            else:
                self._answer(body, chat, fault)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client gave up (timeout test, Cancel)
            with fake._lock:
                fake.dropped += 1

    def _json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _plan(self, body: dict[str, Any]) -> tuple[list[str], str]:
        tokens = self.server_state.tokens()
        limit = body.get("max_tokens")
        if limit is not None and limit < len(tokens):
            return tokens[:limit], "length"
        return tokens, "stop"

    def _usage(self, body: dict[str, Any], n: int) -> dict[str, int]:
        prompt = RecordedRequest("POST", "", {}, body).text()
        return {"prompt_tokens": len(prompt.split()), "completion_tokens": n, "total_tokens": len(prompt.split()) + n}

    def _top_k(self, body: dict[str, Any], chat: bool) -> int:
        if chat:
            return int(body.get("top_logprobs") or 0) if body.get("logprobs") else 0
        return int(body.get("logprobs") or 0)

    def _chat_logprobs(self, tokens: list[str], k: int) -> dict[str, Any]:
        fake = self.server_state
        content = []
        for tok in tokens:
            top = fake.top_for(tok, max(k, 1))
            lp = top.get(tok, math.log(_CHOSEN_P))
            content.append(
                {"token": tok, "logprob": lp, "top_logprobs": [{"token": t, "logprob": v} for t, v in top.items()][:k]}
            )
        return {"content": content}

    def _legacy_logprobs(self, tokens: list[str], k: int) -> dict[str, Any]:
        tops = [self.server_state.top_for(tok, k) for tok in tokens]
        return {
            "tokens": tokens,
            "token_logprobs": [top.get(tok, math.log(_CHOSEN_P)) for tok, top in zip(tokens, tops, strict=True)],
            "top_logprobs": tops,
        }

    def _answer(self, body: dict[str, Any], chat: bool, fault: Fault | None) -> None:
        tokens, finish = self._plan(body)
        k = self._top_k(body, chat)
        text = "".join(tokens)
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish}
        if chat:
            choice["message"] = {"role": "assistant", "content": text}
            choice["logprobs"] = self._chat_logprobs(tokens, k) if k else None
        else:
            choice["text"] = text
            choice["logprobs"] = self._legacy_logprobs(tokens, k) if k else None
        payload = {
            "id": "fake-1",
            "object": "chat.completion" if chat else "text_completion",
            "created": int(time.time()),
            "model": body.get("model") or self.server_state.model,
            "choices": [choice],
            "usage": self._usage(body, len(tokens)),
        }
        if fault and fault.kind == "malformed":
            data = b'{"id": "fake-1", "choices": [{"message": '
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
            return
        if fault and fault.kind == "cut":
            data = json.dumps(payload).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data[: len(data) // 2])
            self._abort()
            return
        if fault and fault.kind == "drip":
            self._drip(json.dumps(payload).encode(), fault.delay_s)
            return
        self._json(200, payload)

    def _drip(self, data: bytes, seconds: float) -> None:
        """A 200 reply whose body arrives a few bytes every 0.1 s, spread over ``seconds``."""
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.flush()
        pieces = max(1, min(len(data), round(seconds / 0.1)))
        step = -(-len(data) // pieces)
        for start in range(0, len(data), step):
            time.sleep(seconds / pieces)
            self.wfile.write(data[start : start + step])
            self.wfile.flush()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _event(self, payload: Any) -> None:
        self._chunk(b"data: " + (payload if isinstance(payload, bytes) else json.dumps(payload).encode()) + b"\n\n")

    def _abort(self) -> None:
        self.wfile.flush()
        self.connection.shutdown(socket.SHUT_RDWR)
        self.close_connection = True

    def _stream(self, body: dict[str, Any], chat: bool, fault: Fault | None) -> None:
        tokens, finish = self._plan(body)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        base = {
            "id": "fake-1",
            "object": "chat.completion.chunk",
            "model": body.get("model") or self.server_state.model,
        }
        fake = self.server_state
        with fake._lock:
            fake.streamed.append(0)
            n = len(fake.streamed) - 1
        for i, tok in enumerate(tokens):
            if fake.token_delay_s:
                time.sleep(fake.token_delay_s)
            if fault and fault.kind == "cut" and i == fault.after_chunks:
                self._abort()
                return
            if fault and fault.kind == "malformed" and i == 1:
                self._event(b"{not json")
                continue
            delta = {"delta": {"content": tok}} if chat else {"text": tok}
            self._event(base | {"choices": [{"index": 0, "finish_reason": None, **delta}]})
            with fake._lock:
                fake.streamed[n] += 1
        last: dict[str, Any] = {"delta": {}} if chat else {"text": ""}
        self._event(base | {"choices": [{"index": 0, "finish_reason": finish, **last}]})
        self._event(base | {"choices": [], "usage": self._usage(body, len(tokens))})
        self._event(b"[DONE]")
        self._chunk(b"")
