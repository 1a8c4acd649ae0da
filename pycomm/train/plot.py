"""loss.png: training loss by step, validation loss against training time, and where the runs'
step time went.

matplotlib is optional (the ``train`` extra): without it the job still finishes, with no plot
and a note in its summary (``plot_or_note``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pycomm.train.loop import WARMUP_STEPS_UNTIMED
from pycomm.train.targets import TARGET_SLACK, target_loss

PARTS = (
    ("compute", "computation", "#4c72b0"),
    ("codec", "compression", "#dd8452"),
    ("comm_tp_fwd", "TP all_reduce fwd", "#c44e52"),
    ("comm_tp_bwd", "TP all_reduce bwd", "#e17c7e"),
    ("comm_pp", "PP send/recv", "#8172b3"),
    ("comm_dp", "DP all_reduce", "#55a868"),
    ("comm_fsdp_rs", "FSDP reduce-scatter", "#2a7f62"),
    ("comm_fsdp_ag", "FSDP all-gather", "#8fd175"),
    ("wait", "pipeline bubble", "#bbbbbb"),
)
COLORS = {"uncompressed": "#555555", "compressed": "#c44e52", "auto": "#dd8452"}


NO_MATPLOTLIB = (
    "loss.png not drawn: matplotlib is not installed (pip install 'mpiucc[train]'); "
    "metrics.json holds the curves"
)


def run_label(run: dict) -> str:
    """What tables and plots call a run: "uncompressed", "auto" (every compressed stream
    with codec="auto": the codec chosen per message) or "compressed"."""
    used = [c for c in run["codecs"].values() if c != "none"]
    if not used:
        return "uncompressed"
    return "auto" if all(c.startswith("auto") for c in used) else "compressed"


def plot_or_note(runs: list[dict], path: Path) -> str | None:
    """Draw ``path``; without matplotlib remove a stale plot there and return a note instead."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        path.unlink(missing_ok=True)  # a plot of an earlier run must not pass for this one
        return NO_MATPLOTLIB
    plot_runs(runs, path)
    return None


def plot_runs(runs: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_clock, ax_time) = plt.subplots(
        1, 3, figsize=(16, 4.5), gridspec_kw={"width_ratios": [3, 3, 2]}
    )
    for run in runs:
        label = run_label(run)
        color = COLORS[label]
        loss = np.asarray(run["train_loss"])
        steps = np.arange(1, loss.size + 1)
        ax_loss.plot(steps, loss, color=color, alpha=0.25, lw=0.8)
        ax_loss.plot(steps, _smooth(loss), color=color, lw=1.5, label=f"{label}, training")
        if run["val"]:
            vs, vl, secs = zip(*run["val"], strict=True)
            ax_loss.plot(vs, vl, "o--", color=color, ms=4, label=f"{label}, validation")
            ax_clock.plot(secs, vl, "o-", color=color, ms=4, label=label)
    ax_loss.set_xlabel("step")
    ax_loss.set_ylabel("loss (nats per byte)")
    ax_loss.set_title("byte-level GPT on Python sources")
    ax_loss.legend()
    ax_loss.grid(alpha=0.3)
    if runs and runs[0]["name"] == "baseline" and runs[0]["val"]:
        label = f"baseline's final (+{100 * TARGET_SLACK:g}%)"
        ax_clock.axhline(target_loss(runs[0]), color="#999999", ls=":", lw=1, label=label)
    ax_clock.set_xlabel("training time (s)")
    ax_clock.set_ylabel("validation loss")
    ax_clock.set_title("validation loss against wall-clock time")
    ax_clock.legend()
    ax_clock.grid(alpha=0.3)

    names = [run_label(r) for r in runs]
    bottom = np.zeros(len(runs))
    for key, label, color in PARTS:
        ms = np.array(
            [1e3 * np.mean(r["split"][key][WARMUP_STEPS_UNTIMED:] or [0.0]) for r in runs]
        )
        ax_time.bar(names, ms, bottom=bottom, color=color, label=label)
        bottom += ms
    ax_time.set_ylabel("ms per step (mean over ranks)")
    ax_time.set_title("step time")
    ax_time.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _smooth(x: np.ndarray, weight: float = 0.8) -> np.ndarray:
    """Exponential moving average, debiased at the start."""
    out, acc = np.empty_like(x, dtype=float), 0.0
    for i, v in enumerate(x):
        acc = weight * acc + (1 - weight) * v
        out[i] = acc / (1 - weight ** (i + 1))
    return out
