"""A local Hugging Face causal LM through ``transformers`` (never downloads: ``local_files_only``).

Slow on CPU next to llama.cpp, but it gives the full logits: ``logprobs=k``
returns the top-k of ``log_softmax`` over the raw (unprocessed) logits of every
generated step. Chat messages go through the tokenizer's chat template when it
has one, else a plain ``role: content`` transcript.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from core.errors import BackendCancelledError, BackendError, BackendTimeoutError, ConfigError
from core.llm.base import Completion, GenOptions, GenParams, Message, TokenLogprobs, truncate_at_stop
from core.llm.budget import CancelToken, current_token

if TYPE_CHECKING:
    from core.config.llm import LLMSettings

__all__ = ["TransformersLLM", "load_local_causal_lm"]

_BACKEND = "transformers"


def load_local_causal_lm(model_dir: Path, what: str, setting: str) -> tuple[Any, Any, Any]:
    """``(torch, tokenizer, model in eval mode)`` from a local folder; never downloads.

    ``what`` names the feature and ``setting`` the setting that points at the folder, for the errors.
    """
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise ConfigError(f"{what} needs torch and transformers", hint="pip install transformers==5.23.0") from exc
    if not model_dir.is_dir():
        raise ConfigError(f"{setting} {model_dir} is not a folder")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
        lm = AutoModelForCausalLM.from_pretrained(str(model_dir), local_files_only=True).eval()
    except (OSError, ValueError) as exc:
        raise BackendError(f"transformers could not load {model_dir}: {exc}") from exc
    return torch, tokenizer, lm


class TransformersLLM:
    """The :class:`~core.llm.base.LLM` protocol over ``AutoModelForCausalLM``."""

    backend = _BACKEND

    def __init__(self, model_dir: Path, settings: LLMSettings) -> None:
        torch, self.tokenizer, self.lm = load_local_causal_lm(
            model_dir, "The transformers backend", "llm.transformers.model_path"
        )
        self._torch = torch
        self.model = model_dir.name
        self.settings = settings

    def _chat_prompt(self, messages: Sequence[Message]) -> str:
        if getattr(self.tokenizer, "chat_template", None):
            turns = [{"role": m["role"], "content": m["content"]} for m in messages]
            return str(self.tokenizer.apply_chat_template(turns, tokenize=False, add_generation_prompt=True))
        return "".join(f"{m['role']}: {m['content']}\n" for m in messages) + "assistant:"

    def _encode(self, prompt: str) -> Any:
        ids = self.tokenizer(prompt, add_special_tokens=False, return_tensors="pt")["input_ids"]
        bos = self.tokenizer.bos_token_id
        if bos is not None and (ids.shape[1] == 0 or int(ids[0, 0]) != bos):
            ids = self._torch.cat([self._torch.tensor([[bos]]), ids], dim=1)
        return ids

    def _generate_kwargs(self, ids: Any, gen: GenParams) -> dict[str, Any]:
        s = self.settings
        gen = gen.resolved(s)
        temp = gen.temperature or 0.0
        tok = self.tokenizer
        pad = tok.pad_token_id if tok.pad_token_id is not None else (tok.eos_token_id or 0)
        kwargs: dict[str, Any] = {
            "input_ids": ids,
            "attention_mask": self._torch.ones_like(ids),
            "max_new_tokens": gen.max_tokens,
            "do_sample": temp > 0,
            "pad_token_id": pad,
            "max_time": _time_left(s.timeout_s),
        }
        if temp > 0:
            kwargs["temperature"] = temp
            self._torch.manual_seed(s.seed if gen.seed is None else gen.seed)
        return kwargs

    def _top(self, logits: Any, chosen: int, k: int) -> TokenLogprobs:
        logp = self._torch.log_softmax(logits.float(), dim=-1)
        values, indices = self._torch.topk(logp, k)
        top: dict[str, float] = {}
        for value, index in zip(values.tolist(), indices.tolist(), strict=True):
            top.setdefault(str(self.tokenizer.decode([index])), float(value))
        return TokenLogprobs(str(self.tokenizer.decode([chosen])), float(logp[chosen]), top)

    def _run(self, prompt: str, gen: GenParams) -> Completion:
        from transformers import StoppingCriteriaList

        token = current_token()
        if token is not None and token.cancelled:
            raise BackendCancelledError("cancelled before the model started")
        ids = self._encode(prompt)
        k = gen.logprobs
        kwargs = self._generate_kwargs(ids, gen)
        kwargs["stopping_criteria"] = StoppingCriteriaList([_token_stop(self._torch, token, None)])
        started = time.monotonic()
        with self._torch.no_grad():
            out = self.lm.generate(**kwargs, return_dict_in_generate=True, output_logits=bool(k))
        new = out.sequences[0, ids.shape[1] :].tolist()
        eos = self.tokenizer.eos_token_id
        if token is not None and token.cancelled:
            raise BackendCancelledError(f"cancelled after {time.monotonic() - started:.1f} s")
        if (
            len(new) < kwargs["max_new_tokens"]
            and (not new or new[-1] != eos)
            and (time.monotonic() - started >= kwargs["max_time"] or (token is not None and token.expired()))
        ):
            raise BackendTimeoutError(f"transformers did not finish within its budget of {kwargs['max_time']:.0f} s")
        text, stopped = truncate_at_stop(str(self.tokenizer.decode(new, skip_special_tokens=True)), gen.stop)
        tokens = [self._top(step[0], chosen, k) for step, chosen in zip(out.logits, new, strict=True)] if k else []
        finished = stopped or (bool(new) and new[-1] == eos)
        return Completion(
            text=text,
            finish_reason="stop" if finished else "length",
            prompt_tokens=int(ids.shape[1]),
            completion_tokens=len(new),
            backend=_BACKEND,
            model=self.model,
            tokens=tokens,
        )

    def chat(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Completion:
        """Answer a conversation through the chat template."""
        return self._run(self._chat_prompt(messages), GenParams.of(params, **options))

    def complete(self, prompt: str, params: GenParams | None = None, **options: Unpack[GenOptions]) -> Completion:
        """Continue ``prompt`` verbatim (only a BOS token is added when the model has one)."""
        return self._run(prompt, GenParams.of(params, **options))

    def stream(
        self, messages: Sequence[Message], params: GenParams | None = None, **options: Unpack[GenOptions]
    ) -> Iterator[str]:
        """Yield text deltas from a ``TextIteratorStreamer``; closing early stops generation."""
        from transformers import StoppingCriteriaList, TextIteratorStreamer

        cancelled = threading.Event()
        token = current_token()
        streamer = TextIteratorStreamer(
            self.tokenizer, skip_prompt=True, skip_special_tokens=True, timeout=self.settings.timeout_s
        )
        gen = GenParams.of(params, **options)
        kwargs = self._generate_kwargs(self._encode(self._chat_prompt(messages)), gen)
        stop_rule = _token_stop(self._torch, token, cancelled)
        kwargs |= {"streamer": streamer, "stopping_criteria": StoppingCriteriaList([stop_rule])}
        thread = threading.Thread(target=self.lm.generate, kwargs=kwargs, name="hf-stream", daemon=True)
        started = time.monotonic()
        thread.start()
        text = emitted = ""
        stopped = False
        try:
            for piece in streamer:
                text, stopped = truncate_at_stop(text + piece, gen.stop)
                if len(text) > len(emitted):
                    yield text[len(emitted) :]
                    emitted = text
                if stopped:
                    break
        except queue.Empty as exc:
            raise BackendTimeoutError(f"transformers produced nothing for {self.settings.timeout_s:g} s") from exc
        finally:
            cancelled.set()
        if token is not None and token.cancelled:
            raise BackendCancelledError(f"cancelled after {time.monotonic() - started:.1f} s")
        if not stopped and time.monotonic() - started >= kwargs["max_time"]:  # max_time ended generation
            raise BackendTimeoutError(f"transformers did not finish within its budget of {kwargs['max_time']:.0f} s")


def _time_left(timeout_s: float) -> float:
    """The call's seconds: ``llm.timeout_s`` or what the active CancelToken has left, whichever is less."""
    token = current_token()
    left = token.remaining() if token is not None else None
    if left is None:
        return timeout_s
    return max(0.0, left if token is not None and token.lift_ceiling else min(timeout_s, left))


def _token_stop(torch: Any, token: CancelToken | None, cancelled: threading.Event | None) -> Any:
    """A stopping rule that ends generation between two tokens on Cancel (token or stream closed)."""
    from transformers import StoppingCriteria

    class _Stop(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            stop = (cancelled is not None and cancelled.is_set()) or (token is not None and token.cancelled)
            return torch.full((input_ids.shape[0],), stop, dtype=torch.bool)

    return _Stop()
