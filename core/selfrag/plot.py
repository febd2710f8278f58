"""A static PNG comparing retrieval modes from :func:`core.selfrag.evaluate.summarise` (matplotlib, no display).

Three panels: accuracy over all questions with its 95% Wilson interval (hatched: over answered questions),
median seconds per question, and the distribution of the adaptive retrieval decision P(retrieve).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from core.selfrag.evaluate import EvalSummary

__all__ = ["plot_modes"]


def plot_modes(summaries: Sequence[EvalSummary], path: Path, title: str = "") -> Path:
    """Write the comparison chart of ``summaries`` to ``path`` (PNG) and return it."""
    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    labels = [f"{s.dataset}\n{s.mode}" if len({x.dataset for x in summaries}) > 1 else s.mode for s in summaries]
    x = list(range(len(summaries)))
    fig, (acc, sec, dist) = plt.subplots(1, 3, figsize=(13, 4.2))
    err = [[s.accuracy - s.ci_low for s in summaries], [s.ci_high - s.accuracy for s in summaries]]
    acc.bar([i - 0.2 for i in x], [s.accuracy for s in summaries], 0.4, yerr=err, capsize=4, label="all questions")
    answered = [s.accuracy_answered or 0.0 for s in summaries]
    a_err = [
        [max(0.0, (s.accuracy_answered or 0) - (s.ci_answered_low or 0)) for s in summaries],
        [max(0.0, (s.ci_answered_high or 0) - (s.accuracy_answered or 0)) for s in summaries],
    ]
    acc.bar([i + 0.2 for i in x], answered, 0.4, yerr=a_err, capsize=4, hatch="//", fill=False, label="answered only")
    acc.set(xticks=x, xticklabels=labels, ylim=(0, 1), ylabel="accuracy", title="Accuracy (95% Wilson interval)")
    acc.legend(fontsize=8)
    sec.bar(x, [s.median_seconds for s in summaries], 0.6, color="tab:orange")
    sec.set(xticks=x, xticklabels=labels, ylabel="seconds", title="Median seconds per question")
    for ax in (acc, sec):  # "dataset / mode" labels of neighbouring bars overlap when set flat
        ax.tick_params(axis="x", labelrotation=35, labelsize=8)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")
    adaptive = [s for s in summaries if s.mode == "adaptive" and any(c > 0 for c in s.p_retrieve_hist)]
    for s in adaptive:
        dist.bar([i / 10 + 0.05 for i in range(10)], s.p_retrieve_hist, 0.09, alpha=0.6, label=s.dataset)
    dist.set(xlim=(0, 1), xlabel="P(retrieve)", ylabel="questions", title="Adaptive retrieval decision")
    if adaptive:
        dist.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
