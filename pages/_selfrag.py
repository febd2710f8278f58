"""Self-reflective RAG widgets: the one-question trace view and the benchmark runner with its plots."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd
import plotly.express as px
import streamlit as st

from core.errors import CasebookError
from core.settings import REPO_ROOT
from pages._shared import feature_limit, get_runtime, runtime_for, runtime_part, show_error
from pages._text import inert

if TYPE_CHECKING:
    from core.config.selfrag import RetrievalMode
    from core.selfrag.pipeline import SelfRagPipeline
    from core.selfrag.types import SelfRagTrace

MODES: list[RetrievalMode] = ["adaptive", "always", "no-retrieval"]
MODE_HELP = "adaptive: retrieve when P(retrieve) is above the threshold; always / no-retrieval: the paper's ablations."
BENCH_DIR = REPO_ROOT / "assets" / "mcq"
TRACE_KEY = "selfrag:trace"
RUNS_KEY = "selfrag:runs"


def pipeline_for(settings: str) -> SelfRagPipeline:
    """The runtime's pipeline: its shared model as critic and generator, its shared indexes or corpora."""
    pipeline: SelfRagPipeline = runtime_part(runtime_for(settings), "selfrag", "Building the self-reflective pipeline…")
    return pipeline


def parse_options(text: str) -> dict[str, str]:
    """``A: text`` (or ``A. text``) per line into {letter: text}; blank lines ignored."""
    options: dict[str, str] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        letter, sep, rest = line[:1].upper(), line[1:2], line[2:].strip()
        if not (letter.isalpha() and sep in ":.)" and rest):
            raise ValueError(f"Write each option as 'A: text', not {line!r}")
        options[letter] = rest
    return options


def show_trace(trace: SelfRagTrace) -> None:
    """The whole trace: decision, reranked documents, iterations, answer."""
    if trace.abstention is not None:
        st.warning(f"**No answer** ({inert(trace.abstention.reason)}). {inert(trace.abstention.detail)}", icon="🛑")
    else:
        answer = trace.letter or trace.clean_answer or "—"
        st.success(
            f"**Answer:** {inert(answer)}"
            + (f" — {inert(trace.options.get(trace.letter, ''))}" if trace.letter else "")
        )
    d = trace.decision
    m1, m2, m3, m4 = st.columns(4)
    p = d.p_retrieve if d else None
    m1.metric(
        "P(retrieve)", f"{p:.2f}" if p is not None else "—", help="The critic's probability that retrieval helps."
    )
    m2.metric("Threshold", f"{d.threshold:.2f}" if d else "—")
    m3.metric("Retrieved", "yes" if d and d.retrieve else "no", help=d.reason if d else None)
    m4.metric("Seconds", f"{sum(trace.seconds.values()):.1f}")
    if d:
        st.caption(f"Decision ({inert(d.mode)}): {inert(trace.retrieval_note or d.reason)}")
    for note in trace.budget_notes:
        st.caption(f"⏱ {inert(note)}")
    if trace.documents:
        st.subheader("Reranked documents")
        rows = [
            {
                "document": f"{i + 1}. {sd.document.title or sd.document.doc_id}"[:60],
                "relevance": sd.relevance,
                "support": sd.groundedness,
                "utility": sd.utility,
                "score": sd.score,
                "kept": sd.kept,
            }
            for i, sd in enumerate(trace.documents)
        ]
        df = pd.DataFrame(rows)
        long = df.melt(id_vars=["document"], value_vars=["relevance", "support", "utility"], var_name="signal")
        fig = px.bar(long.dropna(), x="value", y="document", color="signal", barmode="group", orientation="h",
                     range_x=[-1, 1], title="Critic scores per document")  # fmt: skip
        fig.update_layout(height=120 + 60 * len(rows), margin={"t": 40, "b": 0}, yaxis={"autorange": "reversed"})
        st.plotly_chart(fig, width="stretch", key="selfrag-docs")
        st.dataframe(df, hide_index=True)
        for i, sd in enumerate(trace.documents):
            with st.expander(
                f"{i + 1:d}. {inert(sd.document.title or sd.document.doc_id)} ({'kept' if sd.kept else 'dropped'})"
            ):
                st.caption(inert(sd.document.source))
                st.markdown(inert(sd.document.text[:1500]))
    elif d and d.retrieve:
        st.info("Retrieval ran but returned no documents.")
    if trace.iterations:
        st.subheader("Generated answers")
        it = pd.DataFrame(
            [
                {"answer": i.number, "expected utility": i.expected_utility, "text": i.raw_answer}
                for i in trace.iterations
            ]
        )
        if it["expected utility"].notna().any():
            fig = px.bar(it, x="answer", y="expected utility", range_y=[0, 5], title="Expected utility (1-5)")
            fig.update_xaxes(type="category", title="answer (iteration)")  # whole iterations, not a 0.6-1.4 scale
            stop = get_runtime().settings.selfrag.utility_stop
            fig.add_hline(y=stop, line_dash="dot", annotation_text=f"stop at {stop:g}")
            fig.update_layout(height=260, margin={"t": 40, "b": 0})
            st.plotly_chart(fig, width="stretch", key="selfrag-iterations")
        st.dataframe(it, hide_index=True)
        if trace.best_iteration is not None:
            st.caption(f"Kept answer {trace.best_iteration:d} (highest expected utility).")
    with st.expander("Full trace (JSON)"):
        st.json(trace.to_json(), expanded=False)


def question_tab(settings: str) -> None:
    """One question through the pipeline."""
    with st.form("selfrag-one"):
        question = st.text_area("Question", key="selfrag-question")
        options = st.text_area(
            "Options (optional)",
            key="selfrag-options",
            placeholder="A: Isoniazid\nB: Ceftriaxone",
            help="Multiple choice: one 'A: text' per line. Leave empty for a free-text answer.",
        )
        mode = st.selectbox("Retrieval", MODES, key="selfrag-mode", help=MODE_HELP)
        run = st.form_submit_button("Run", type="primary")
    if run:
        if not question.strip():
            st.warning("Type a question first.")
        else:
            try:
                opts = parse_options(options)
            except ValueError as exc:
                st.error(inert(exc))
                return
            try:
                with feature_limit("selfrag"), st.spinner("Running the pipeline (a local model takes tens of seconds)…"):
                    st.session_state[TRACE_KEY] = pipeline_for(settings).run(question.strip(), opts, mode=mode)
            except CasebookError as exc:
                show_error("The pipeline failed", exc)
                return
    trace = st.session_state.get(TRACE_KEY)
    if trace is not None:
        show_trace(trace)


def benchmark_tab(settings: str, seed: int) -> None:
    """A sample of a benchmark file in the chosen modes, with accuracy plots."""
    from core.selfrag.evaluate import make_record, summarise
    from core.selfrag.mcq import load_benchmark, sample

    files = sorted(p for p in BENCH_DIR.glob("*") if p.suffix in {".json", ".jsonl"}) if BENCH_DIR.is_dir() else []
    if not files:
        st.info(f"No benchmark files in {BENCH_DIR}. Put a MIRAGE .json or Self-BioRAG .jsonl file there.")
        return
    path: Path = st.selectbox("Benchmark file", files, format_func=lambda p: p.name, key="bench-file")
    try:
        data = load_benchmark(path)
    except CasebookError as exc:
        show_error("The benchmark file cannot be read", exc)
        return
    if not data:
        st.warning("The file holds no questions.")
        return
    dataset = st.selectbox("Dataset", sorted(data), key="bench-dataset")
    items = data[dataset]
    c1, c2 = st.columns(2)
    limit = c1.number_input("Questions", 1, len(items), min(5, len(items)), key="bench-limit",
                            help="A seeded sample; each question takes tens of seconds with a local model.")  # fmt: skip
    modes = c2.multiselect("Retrieval modes", MODES, default=["adaptive"], key="bench-modes", help=MODE_HELP)
    if st.button("Run benchmark", type="primary", key="bench-run", disabled=not modes):
        chosen = sample(items, int(limit), seed)
        records: list[dict[str, Any]] = []
        bar = st.progress(0.0, text="Starting…")
        total = len(chosen) * len(modes)
        try:
            pipeline = pipeline_for(settings)
            for m in modes:
                for item in chosen:
                    bar.progress(len(records) / total, text=f"{m}: question {item.qid} ({len(records) + 1}/{total})")
                    records.append(make_record(item, m, pipeline.run(item.question, item.options, mode=m)))
        except CasebookError as exc:
            show_error("The benchmark stopped", exc)
        bar.progress(1.0, text=f"Done: {len(records)} of {total} runs")
        if records:
            st.session_state[RUNS_KEY] = records
    records = st.session_state.get(RUNS_KEY) or []
    if not records:
        st.caption("No run yet in this session. Results of `python -m core eval-mcq` are in its JSONL output.")
        return
    summary = pd.DataFrame([s.to_json() for s in summarise(records)])
    summary["ci_plus"], summary["ci_minus"] = summary.ci_high - summary.accuracy, summary.accuracy - summary.ci_low
    fig = px.bar(summary, x="mode", y="accuracy", error_y="ci_plus", error_y_minus="ci_minus", color="dataset",
                 barmode="group", range_y=[0, 1], title="Accuracy by retrieval mode (95% Wilson interval)")  # fmt: skip
    fig.update_layout(height=320, margin={"t": 40, "b": 0})
    st.plotly_chart(fig, width="stretch", key="bench-accuracy")
    stages = pd.DataFrame(
        [{"mode": s["mode"], "stage": k, "seconds": v} for s in summary.to_dict("records")
         for k, v in s["seconds_by_stage"].items()]
    )  # fmt: skip
    if not stages.empty:
        fig = px.bar(stages, x="mode", y="seconds", color="stage", title="Mean seconds per question by stage")
        fig.update_layout(height=320, margin={"t": 40, "b": 0})
        st.plotly_chart(fig, width="stretch", key="bench-seconds")
    st.dataframe(
        summary[["dataset", "mode", "n", "correct", "wrong", "no_letter", "timeout", "backend_error", "accuracy",
                 "accuracy_answered", "retrieved", "median_seconds"]],
        hide_index=True,
    )
    table = pd.DataFrame(
        [{"mode": r["mode"], "question": r["qid"], "gold": r["gold"], "answer": r["letter"], "outcome": r["outcome"],
          "why retrieved": r["retrieval_note"]} for r in records]
    )  # fmt: skip
    st.dataframe(table, hide_index=True)
