"""Time to first token with and without llama.cpp's prompt cache, on real Ask AI prompts.

    python -m bench.llm_cache_bench [--threads 0] [--questions 3]

The prompts are the ones Ask AI sends (``core.answer.prompt.ask_messages``: the fixed system
prompt, the scan's de-identified bundle, the question) for demo scans from the prepared demo
database (``make prepare``). "Before": a run id at the start of every prompt defeats the cache,
so each question re-reads the whole prompt (what a fresh process, or a prompt with a changing
first line, pays). "After": the same questions in order (the first one pays for the scan's
data, the next ones only for their question) and then a second scan (only the system prompt is
reused). llama.cpp's own timings give the tokens read and reused. Results: JSON on stdout
and ``docs/benchmarks/llm_cache.json``; the load average is recorded at every call.
"""

from __future__ import annotations

import argparse
import json
import time
import uuid
from pathlib import Path
from typing import Any

from core.answer.prompt import ask_messages
from core.cases import build_context_bundle
from core.llm.base import Message
from core.llm.llamacpp import LlamaCppLLM
from core.llm.models import ensure_default_model
from core.runtime import open_runtime
from core.settings import REPO_ROOT, load_settings

OUT = REPO_ROOT / "docs" / "benchmarks" / "llm_cache.json"
QUESTIONS = ["What do the similar cases suggest?", "How confident is the AI reading?", "Which cases disagree?"]


def loadavg() -> str:
    """The 1/5/15-minute load averages."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def first_token(llm: LlamaCppLLM, messages: list[Message], label: str) -> dict[str, Any]:
    """Stream 8 tokens; time to the first one and llama.cpp's prompt timings."""
    load = loadavg()
    t = time.perf_counter()
    first = None
    for _ in llm.stream(messages, max_tokens=8):
        first = first or time.perf_counter() - t
    row = {"call": label, "first_token_s": round(first or -1, 2), "load": load}
    row |= {k: llm.last_timings.get(k) for k in ("read_prompt_tokens", "cached_prompt_tokens", "prompt_tps")}
    print(json.dumps(row), flush=True)
    return row


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run before/after on two demo scans and write the JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=int, default=0, help="0: the free cores")
    ap.add_argument("--questions", type=int, default=3)
    args = ap.parse_args(argv)
    settings = load_settings(llm={"backend": "llamacpp", "llamacpp": {"threads": args.threads}, "timeout_s": 1800, "refuse_certain_timeouts": False})
    rt = open_runtime(settings)
    from sqlalchemy import select

    from core.store.models import Scan

    with rt.db.read_only() as s:
        scans = list(s.scalars(select(Scan.id).order_by(Scan.id).limit(2)))
    bundles = [build_context_bundle(rt, sid) for sid in scans]
    llm = LlamaCppLLM(ensure_default_model(settings), settings.llm)
    first_token(llm, [{"role": "user", "content": "Say OK."}], "warm-up (model load)")
    qs = QUESTIONS[: args.questions]
    rows: list[dict[str, Any]] = []
    for q in qs:  # before: nothing reusable
        msgs = ask_messages(bundles[0], q)
        msgs[0] = {"role": "system", "content": f"run {uuid.uuid4().hex}\n" + msgs[0]["content"]}
        rows.append(first_token(llm, msgs, f"before: scan 1, {q!r}"))
    for q in qs:  # after: the scan's prefix is reused from the second question on
        rows.append(first_token(llm, ask_messages(bundles[0], q), f"after: scan 1, {q!r}"))
    rows.append(first_token(llm, ask_messages(bundles[1], qs[0]), f"after: scan 2, {qs[0]!r}"))
    result = {"threads": llm.threads, "rows": rows}
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    return result


if __name__ == "__main__":
    main()
