"""Benchmark the local llama.cpp model: time to first token, total time, tokens/s, 1 vs 2 threads.

    python -m bench.llm_bench [--threads 1 2] [--reps 2] [--max-tokens 128] [--json]

Each run streams an answer to a ~600-token grounded prompt (synthetic guideline
sources, no patient data). A run id at the start of the prompt defeats
llama.cpp's prompt cache, so every run pays for prompt processing. Results go
to stdout as a Markdown table (docs/benchmarks/llm.md keeps the last one).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path
from typing import Any

from core.llm.base import Message
from core.llm.llamacpp import LlamaCppLLM
from core.llm.models import ensure_default_model
from core.settings import load_settings

SOURCES = [
    "Community-acquired pneumonia in adults: obtain a chest radiograph when pneumonia is suspected clinically. "
    "Lobar consolidation with air bronchograms supports a bacterial cause. Repeat imaging is not needed for "
    "patients who improve clinically; consider follow-up imaging at six to eight weeks for smokers over 50.",
    "Pleural effusion: a blunted costophrenic angle on an upright film suggests at least 200 ml of fluid. "
    "Ultrasound is more sensitive than radiography and guides thoracentesis. Parapneumonic effusions with "
    "pH below 7.2 or loculation usually need drainage.",
    "Pulmonary nodules found incidentally: solid nodules under 6 mm in low-risk adults need no routine follow-up. "
    "Nodules of 6 to 8 mm warrant CT at 6 to 12 months. Larger nodules or those with spiculation need "
    "PET-CT or tissue sampling according to the estimated malignancy risk.",
    "Heart failure on chest radiography: cardiomegaly, upper-lobe venous diversion, Kerley B lines and "
    "bilateral effusions suggest congestion. Natriuretic peptides and echocardiography confirm the diagnosis; "
    "radiographic signs can lag behind clinical improvement by several days.",
    "Pneumothorax: a visible visceral pleural line without lung markings peripheral to it confirms the diagnosis. "
    "Small primary spontaneous pneumothoraces in stable patients may be observed; large or symptomatic ones "
    "need aspiration or a chest drain. Tension pneumothorax is a clinical emergency.",
    "Tuberculosis: upper-lobe cavitation, tree-in-bud nodules and hilar adenopathy raise suspicion. Sputum "
    "smear, culture and nucleic-acid amplification confirm it. Isolate patients with suspected active "
    "pulmonary disease until infectiousness is excluded.",
    "Atelectasis: linear or plate-like opacities with volume loss, such as fissure displacement or elevation "
    "of the hemidiaphragm, favour collapse over consolidation. Lobar collapse in adults warrants a search "
    "for an obstructing lesion, usually by CT or bronchoscopy.",
    "Aspiration pneumonia: consolidation in dependent segments, the posterior upper lobes and superior lower "
    "lobes when supine, the basal segments when upright. Risk factors include reduced consciousness, "
    "dysphagia and alcohol use. Anaerobic cover is not routinely required.",
]
QUESTION = (
    "A chest radiograph shows right lower lobe consolidation with air bronchograms and a small blunted "
    "costophrenic angle. What do the sources recommend about follow-up imaging and the effusion? "
    "Cite the sources you use."
)


def grounded_messages(run_id: int) -> list[Message]:
    """The benchmark prompt; ``run_id`` comes first so no run reuses another's prompt cache."""
    numbered = "\n\n".join(f"[S{i}] {text}" for i, text in enumerate(SOURCES, start=1))
    system = (
        f"Run {run_id}. You are a clinical review assistant. Answer only from the numbered sources below and "
        "cite them as [S1], [S2]. If the sources do not contain the answer, say so.\n\n" + numbered
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": QUESTION}]


def run_once(llm: LlamaCppLLM, run_id: int, max_tokens: int) -> dict[str, float]:
    """One streamed answer: time to first token, total time and token counts."""
    messages = grounded_messages(run_id)
    started = time.perf_counter()
    first = None
    deltas = 0
    for _ in llm.stream(messages, max_tokens=max_tokens):
        first = first if first is not None else time.perf_counter() - started
        deltas += 1  # llama.cpp streams one token per chunk
    total = time.perf_counter() - started
    prompt_tokens = llm.chat(messages, max_tokens=1).prompt_tokens or 0  # prompt now cached: cheap
    ttft = first if first is not None else total
    gen_time = max(total - ttft, 1e-9)
    return {
        "ttft_s": ttft,
        "total_s": total,
        "prompt_tokens": prompt_tokens,
        "generated_tokens": deltas,
        "prompt_tok_s": prompt_tokens / ttft,
        "gen_tok_s": (deltas - 1) / gen_time if deltas > 1 else 0.0,
    }


def machine() -> dict[str, Any]:
    """CPU model, cores and load, for the results table."""
    model = platform.processor() or "unknown"
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return {"cpu": model, "cores": len(os.sched_getaffinity(0)), "loadavg_1m": os.getloadavg()[0]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    base = load_settings()
    path = ensure_default_model(base)
    info = machine() | {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "model": path.name}
    rows = []
    for threads in args.threads:
        llm_settings = base.llm.model_copy(
            update={"llamacpp": base.llm.llamacpp.model_copy(update={"threads": threads}), "timeout_s": 600.0}
        )
        llm = LlamaCppLLM(path, llm_settings)
        load_started = time.perf_counter()
        llm.chat([{"role": "user", "content": "Hi"}], max_tokens=1)  # load + warm up
        load_s = time.perf_counter() - load_started
        runs = [run_once(llm, rep + 100 * threads, args.max_tokens) for rep in range(args.reps)]
        row = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
        rows.append({"threads": threads, "load_s": load_s, "reps": args.reps} | row)
        llm.close()
    if args.json:
        print(json.dumps({"machine": info, "rows": rows}, indent=2))
        return 0
    print(f"{info['date']}; {info['cpu']}, {info['cores']} cores, load {info['loadavg_1m']:.2f}; {info['model']}\n")
    print(
        "| threads | load+warm-up s | prompt tokens | time to first token s | prompt tok/s "
        "| generated tokens | total s | generation tok/s |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['threads']} | {r['load_s']:.1f} | {r['prompt_tokens']:.0f} | {r['ttft_s']:.1f} | "
            f"{r['prompt_tok_s']:.1f} | {r['generated_tokens']:.0f} | {r['total_s']:.1f} | {r['gen_tok_s']:.1f} |"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
